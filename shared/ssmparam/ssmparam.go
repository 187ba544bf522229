// Package ssmparam reads secrets, such as the master key, from SSM Parameter
// Store, so that they never sit in plain text in a template or a function's
// environment: the environment carries only the parameter's name.
package ssmparam

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// DefaultTimeout bounds Get when ctx has no deadline of its own.
const DefaultTimeout = 5 * time.Second

// API is the part of the SSM client Get needs.
type API interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ API = (*ssm.Client)(nil)

// Get returns the decrypted value of the parameter called name (a
// SecureString, or a plain String). An empty value is an error: a secret that
// is empty is a misconfiguration, not an open door.
func Get(ctx context.Context, api API, name string) (string, error) {
	if name == "" {
		return "", errors.New("ssm parameter: empty name")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("ssm parameter %s: %w", name, err)
	}
	if out.Parameter == nil || aws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("ssm parameter %s: empty value", name)
	}
	return aws.ToString(out.Parameter.Value), nil
}
