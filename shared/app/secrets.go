package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/periodic"
	"github.com/sluice-gw/sluice/shared/secrets"
)

// configText is the config Build loads: ConfigYAML, the file ConfigPath
// names, or nil for the embedded default.
func configText(s Settings) ([]byte, error) {
	switch {
	case s.ConfigYAML != nil:
		return s.ConfigYAML, nil
	case s.ConfigPath != "":
		data, err := os.ReadFile(s.ConfigPath)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		return data, nil
	}
	return nil, nil
}

// loadConfig loads the config, its os.environ/NAME values resolved
// through s.Getenv, then the secrets it names (started at once: the load
// waits for them only at the first name the environment does not set).
func loadConfig(ctx context.Context, s *Settings, log *slog.Logger) (*config.Config, error) {
	data, err := configText(*s)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return config.Default(), nil
	}
	r, err := startSecrets(ctx, *s, data, log)
	if err != nil {
		return nil, err
	}
	getenv := s.Getenv
	if r != nil {
		s.secrets, getenv = r, r.Lookup
	}
	cfg, err := config.Load(data, getenv)
	if r != nil && err != nil {
		if rerr := r.Wait(ctx); rerr != nil { // the cause: a secret not read
			return nil, fmt.Errorf("secrets: %w", rerr)
		}
	}
	if err != nil && s.ConfigPath != "" && s.ConfigYAML == nil {
		return nil, fmt.Errorf("%s: %w", s.ConfigPath, err)
	}
	return cfg, err
}

// startSecrets starts reading the secrets the config's key management
// names (general_settings.key_management_system: aws_secret_manager), and
// returns the resolver config loading reads os.environ/NAME through: the
// environment first, then the secrets, waiting for the read only when a
// name is not in the environment. nil, nil when the config names none (the
// Secrets Manager client is then never made).
func startSecrets(ctx context.Context, s Settings, data []byte, log *slog.Logger) (*secrets.Resolver, error) {
	if data == nil {
		return nil, nil
	}
	km, err := config.KeyManagementOf(data, s.Getenv)
	if err != nil || !km.On() || len(km.Secrets()) == 0 {
		return nil, err // Load reports a config error with its line
	}
	src := s.SecretSource
	if src == nil {
		cfg := s.AWS
		if cfg == nil {
			c, err := awsconf.LoadForClients(ctx)
			if err != nil {
				return nil, err
			}
			cfg = &c
		}
		src = secrets.NewSecretsManager(*cfg)
	}
	r := secrets.New(secrets.Options{
		Env: s.Getenv, Source: src, Primary: km.PrimarySecretName, Hosted: km.HostedKeys,
		TTL: s.SecretsTTL, Logger: log, Now: s.Now,
	})
	r.Start(ctx)
	runtime.Gosched() // as for the SSM read (aws.go)
	return r, nil
}

// bindSecretKeys makes every deployment whose api_key comes from a secret
// read the value the re-reads keep current, and so each provider's variant
// of a "*" deployment (its own api_key, or the provider's variable, such
// as ANTHROPIC_API_KEY, read from a secret); it says whether any does.
func bindSecretKeys(cfg *config.Config, r *secrets.Resolver) bool {
	bound := false
	for _, d := range cfg.Deployments {
		if name := d.Vertex.CredentialsEnv; name != "" && r.FromSecret(name) {
			if p := r.Ref(name); p != nil { // a service account's key that rotates
				d.Vertex.BindCredentials(p)
			}
		}
		for _, v := range append(d.Variants(), d) {
			if v.APIKeyEnv == "" || !r.FromSecret(v.APIKeyEnv) {
				continue
			}
			if p := r.Ref(v.APIKeyEnv); p != nil {
				v.BindKey(p)
				bound = true
			}
		}
	}
	return bound
}

// refreshSecrets re-reads stale secrets every ttl/4 until stop is
// called (local mode; Lambda re-reads after a response, AfterResponse).
func refreshSecrets(r *secrets.Resolver, ttl time.Duration) (stop func()) {
	if ttl <= 0 {
		ttl = secrets.DefaultTTL
	}
	ctx, cancel := context.WithCancel(context.Background())
	go periodic.Run(ctx, max(ttl/4, 10*time.Millisecond), r.RefreshStale)
	return cancel
}
