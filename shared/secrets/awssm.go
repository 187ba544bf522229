package secrets

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsManager is a Source on AWS Secrets Manager: one GetSecretValue per
// secret, all at once (a read takes one round trip, and the functions'
// role needs only secretsmanager:GetSecretValue on the secrets named; a
// BatchGetSecretValue would need its own grant on every resource). The
// endpoint is the SDK's: AWS_ENDPOINT_URL_SECRETS_MANAGER, else
// AWS_ENDPOINT_URL, else the region's.
type SecretsManager struct {
	api interface {
		GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	}
}

// NewSecretsManager returns the Source of cfg's account and region.
func NewSecretsManager(cfg aws.Config) *SecretsManager {
	return &SecretsManager{api: secretsmanager.NewFromConfig(cfg)}
}

// GetSecrets implements Source: the SecretString of each id (a binary
// secret is an error), or the errors of those not read.
func (s *SecretsManager) GetSecrets(ctx context.Context, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	errs := make([]error, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("secret %s: %w", id, err)
			case res.SecretString == nil:
				errs[i] = fmt.Errorf("secret %s: no SecretString (a binary secret)", id)
			default:
				mu.Lock()
				out[id] = *res.SecretString
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
