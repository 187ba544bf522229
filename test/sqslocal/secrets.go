package sqslocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsEndpointEnv is the variable the SDK reads the Secrets Manager
// endpoint from; moto serves Secrets Manager beside SQS.
const SecretsEndpointEnv = "AWS_ENDPOINT_URL_SECRETS_MANAGER"

// SecretsManager returns a Secrets Manager client on the emulator, and
// sets SecretsEndpointEnv for the test process (the gateway's clients read
// it as they do in Lambda).
func SecretsManager(t testing.TB) *secretsmanager.Client {
	t.Helper()
	cfg := Config(t)
	if os.Getenv(SecretsEndpointEnv) == "" {
		os.Setenv(SecretsEndpointEnv, Endpoint())
	}
	return secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(Endpoint()) })
}

// NewSecret creates a secret holding value under a new name starting with
// prefix, deleted when the test ends; it returns the name.
func NewSecret(t testing.TB, prefix, value string) string {
	t.Helper()
	c := SecretsManager(t)
	var b [5]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	t.Cleanup(func() {
		_, _ = c.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{SecretId: aws.String(name), ForceDeleteWithoutRecovery: aws.Bool(true)})
	})
	return name
}

// PutSecret rotates the secret id to value (a new current version).
func PutSecret(t testing.TB, id, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := SecretsManager(t).PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(value)}); err != nil {
		t.Fatalf("put secret: %v", err)
	}
}
