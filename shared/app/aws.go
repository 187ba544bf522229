package app

import (
	"context"
	"runtime"

	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/ssmparam"
)

// ResolveAWS loads the AWS SDK configuration (awsconf.LoadForClients: the
// environment only, in a Lambda build) into s when s needs it (the
// DynamoDB store, a spend queue, or a master key held in SSM under the
// parameter s.MasterKeyParameter), marks an emulator endpoint, and starts
// reading that master key: the read runs while Build assembles everything
// that does not need the key, and Build waits for it before the handler,
// failing when it failed: a function never runs open because the
// parameter could not be read.
func (s *Settings) ResolveAWS(ctx context.Context) error {
	param := s.MasterKeyParameter
	if s.Store != StoreDynamoDB && param == "" && s.SpendQueueURL == "" {
		return nil
	}
	cfg, err := awsconf.LoadForClients(ctx)
	if err != nil {
		return err
	}
	s.AWS = &cfg
	s.Emulator = awsconf.HasEndpoint(ctx, cfg, "DynamoDB")
	if param != "" {
		p := &pendingSecret{done: make(chan struct{})}
		client := ssmparam.NewClient(cfg)
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
