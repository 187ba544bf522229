package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"runtime"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/ssmparam"
)

// MasterKeyParameterEnv names the SSM SecureString parameter holding the
// master key (as deployed).
const MasterKeyParameterEnv = "GATEWAY_MASTER_KEY_PARAMETER"

// ResolveAWS loads the AWS SDK configuration (awsconf.Load: the
// environment only, in a Lambda build) into s when s needs it (the
// DynamoDB store, a spend queue, or a master key held in SSM under the
// parameter MasterKeyParameterEnv names), marks an emulator endpoint, and
// starts reading that master key: the read runs while Build assembles
// everything that does not need the key, and Build waits for it before the
// handler, failing when it failed: a function never runs open because the
// parameter could not be read. lookup reads the environment (os.Getenv
// from main).
func (s *Settings) ResolveAWS(ctx context.Context, lookup func(string) string) error {
	param := lookup(MasterKeyParameterEnv)
	if s.Store != StoreDynamoDB && param == "" && s.SpendQueueURL == "" {
		return nil
	}
	endConfig := inittrace.Span("aws_config")
	cfg, err := awsconf.Load(ctx, awsconf.Options{})
	endConfig()
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	if cfg.HTTPClient == nil {
		if inittrace.On() { // the first call of each operation, timed
			cfg.HTTPClient = inittrace.AWSClient(func() inittrace.Doer { return awsHTTPClient() })
		} else {
			cfg.HTTPClient = awsHTTPClient()
		}
	}
	cfg.HTTPClient = awsconf.SafeRequestBodies(cfg.HTTPClient)
	s.AWS = &cfg
	s.Emulator = lookup("AWS_ENDPOINT_URL") != "" || lookup("AWS_ENDPOINT_URL_DYNAMODB") != ""
	if param != "" {
		p := &pendingSecret{done: make(chan struct{})}
		client := ssmparam.NewClient(cfg, lookup)
		m := s.Metrics
		go func() {
			defer close(p.done)
			end := inittrace.Span("ssm")
			p.value, p.err = ssmparam.Get(ctx, client, param)
			end()
			if p.err != nil {
				m.StoreError(metrics.StoreSSM)
			}
		}()
		runtime.Gosched() // let the read open its connection before the build takes the CPU
		s.masterKeyRead = p
	}
	return nil
}

// awsHTTPClient is the SDK's default HTTP client with a TLS session cache:
// a connection to DynamoDB, SQS or SSM that has to be opened again (an
// instance thawed after minutes, a connection the service closed while
// idle) resumes its TLS session instead of a full handshake, about half
// its CPU (~3 ms less at 256 MB).
func awsHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		t.TLSClientConfig.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	})
}
