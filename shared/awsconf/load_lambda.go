//go:build lambda.norpc

package awsconf

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// EnvOnly reports whether Load reads only the environment (FromEnv): true
// in a Lambda build (-tags lambda.norpc).
const EnvOnly = true

// Load is FromEnv(os.Getenv, o): in Lambda the environment holds the
// function's credentials and region, and the SDK's config package (shared
// config files, SSO, IMDS) stays out of the bootstrap.
func Load(_ context.Context, o Options) (aws.Config, error) {
	return FromEnv(os.Getenv, o)
}
