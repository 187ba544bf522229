// Package bedrock calls Amazon Bedrock's Converse and ConverseStream APIs for
// deployments named bedrock/<model id> or bedrock/converse/<model id> (any
// model id, inference profile or ARN: no allowlist). Credentials come from
// awsconf.Load (the Lambda function's role, from the environment; the
// default chain outside a Lambda build), or from the deployment's
// aws_access_key_id / aws_secret_access_key, optionally assuming
// aws_role_name. Requests and answers are translated from and to OpenAI's
// chat format; the answer is presented as an OpenAI-shaped *http.Response
// (JSON or SSE), so the gateway reads it as any OpenAI upstream.
package bedrock

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/config"
)

// Clients holds one Bedrock runtime client per deployment, built on first
// use over the gateway's shared HTTP client.
type Clients struct {
	http *http.Client
	mu   sync.Mutex
	m    map[*config.Deployment]*bedrockruntime.Client
	// uncountable holds the model ids Bedrock said it cannot count
	// tokens for (messages.go): their counts are estimated at once.
	uncountable sync.Map
}

// NewClients returns a client cache whose clients send through hc.
func NewClients(hc *http.Client) *Clients {
	return &Clients{http: hc, m: map[*config.Deployment]*bedrockruntime.Client{}}
}

// Client returns d's Bedrock runtime client.
func (c *Clients) Client(ctx context.Context, d *config.Deployment) (*bedrockruntime.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[d]; ok {
		return cl, nil
	}
	o := awsconf.Options{
		Region:           d.AWS.Region,
		RetryMaxAttempts: 1, // the router retries, never the SDK
	}
	if d.AWS.AccessKeyID != "" && d.AWS.SecretAccessKey != "" {
		o.Credentials = credentials.NewStaticCredentialsProvider(d.AWS.AccessKeyID, d.AWS.SecretAccessKey, d.AWS.SessionToken)
	}
	cfg, err := awsconf.Load(context.WithoutCancel(ctx), o)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	// The gateway's shared keep-alive client, unless AWS_CA_BUNDLE asks for
	// the SDK's own transport with that bundle.
	if os.Getenv("AWS_CA_BUNDLE") == "" {
		cfg.HTTPClient = c.http
	}
	cfg.HTTPClient = awsconf.SafeRequestBodies(cfg.HTTPClient)
	if d.AWS.RoleName != "" {
		name := d.AWS.SessionName
		if name == "" {
			name = "sluice-gateway"
		}
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), d.AWS.RoleName,
			func(o *stscreds.AssumeRoleOptions) { o.RoleSessionName = name }))
	}
	base := d.APIBase
	if base == "" {
		base = os.Getenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
	}
	cl := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		if base != "" {
			o.BaseEndpoint = aws.String(base)
		}
		o.Retryer = aws.NopRetryer{}
	})
	c.m[d] = cl
	return cl, nil
}

// StreamUsage reports that a stream may always be asked for its usage: the
// translation takes it from the stream's metadata event.
func (*Clients) StreamUsage(*config.Deployment) bool { return true }

// ModelID is the Bedrock model id of a deployment's model name: the
// converse/ and invoke/ route prefixes of LiteLLM are dropped.
func ModelID(model string) string {
	for _, p := range [...]string{"converse/", "invoke/"} {
		if m, ok := strings.CutPrefix(model, p); ok {
			return m
		}
	}
	return model
}
