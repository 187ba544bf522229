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
//
// The salt key's parameter (SaltKeyParameter), when set, is read in the
// same call (GetParameters).
func (s *Settings) ResolveAWS(ctx context.Context) error {
	param, salt := s.MasterKeyParameter, s.SaltKeyParameter
	if s.Store != StoreDynamoDB && param == "" && salt == "" && s.SpendQueueURL == "" {
		return nil
	}
	cfg, err := awsconf.LoadForClients(ctx)
	if err != nil {
		return err
	}
	s.AWS = &cfg
	s.Emulator = awsconf.HasEndpoint(ctx, cfg, "DynamoDB")
	if param != "" || salt != "" {
		p := &pendingSecret{done: make(chan struct{}), master: param != "", salted: salt != ""}
		client := ssmparam.NewClient(cfg)
		m := s.Metrics
		go func() {
			defer close(p.done)
			end := inittrace.Span("ssm")
			p.value, p.salt, p.err = readSecrets(ctx, client, param, salt)
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

// readSecrets reads the master key's and the salt key's parameters (either
// may be ""): one GetParameter for one, one GetParameters for both.
func readSecrets(ctx context.Context, client *ssmparam.Client, master, salt string) (string, string, error) {
	switch {
	case salt == "":
		v, err := ssmparam.Get(ctx, client, master)
		return v, "", err
	case master == "":
		v, err := ssmparam.Get(ctx, client, salt)
		return "", v, err
	}
	vs, err := ssmparam.GetAll(ctx, client, master, salt)
	if err != nil {
		return "", "", err
	}
	return vs[0], vs[1], nil
}
