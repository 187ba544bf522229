//go:build !lambda.norpc

package awsconf

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// EnvOnly reports whether Load reads only the environment (FromEnv): true
// in a Lambda build (-tags lambda.norpc).
const EnvOnly = false

// Load is config.LoadDefaultConfig (environment, shared config files,
// profiles, SSO, IMDS, ...) with o over it.
func Load(ctx context.Context, o Options) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(o.Credentials))
	}
	if o.RetryMaxAttempts > 0 {
		opts = append(opts, config.WithRetryMaxAttempts(o.RetryMaxAttempts))
	}
	return config.LoadDefaultConfig(ctx, opts...)
}
