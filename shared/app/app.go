// Package app assembles the gateway from its settings: config, stores,
// router, providers and the HTTP handler. The function mains and the tests
// build the gateway through it, so that local mode, Lambda and tests run the
// same wiring.
package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/adminapi"
	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/cooldown"
	"github.com/sluice-gw/sluice/shared/gateway"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/metrics"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/pricing"
	"github.com/sluice-gw/sluice/shared/providers"
	"github.com/sluice-gw/sluice/shared/responses"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/secrets"
	"github.com/sluice-gw/sluice/shared/spend"
)

// Stores.
const (
	StoreMemory   = appenv.StoreMemory
	StoreDynamoDB = appenv.StoreDynamoDB
)

// Settings are what the environment and flags decide.
type Settings struct {
	ConfigPath string        // LiteLLM config file; "" for the embedded default
	ConfigYAML []byte        // config text, used instead of ConfigPath when set
	Getenv     config.Getenv // resolves os.environ/NAME in the config
	Logger     *slog.Logger
	// MasterKey, when set, overrides general_settings.master_key (from SSM
	// in Lambda, or LITELLM_MASTER_KEY locally).
	MasterKey string
	// MasterKeyParameter names the SSM parameter holding the master key
	// (ResolveAWS reads it into MasterKey).
	MasterKeyParameter string
	// SaltKey seals stored credentials (store_model_in_db; LiteLLM's
	// LITELLM_SALT_KEY); "": the master key, as in LiteLLM.
	// SaltKeyParameter names its SSM parameter, read in the master key's
	// call (ResolveAWS).
	SaltKey          string
	SaltKeyParameter string
	// ModelsReload is how often an instance checks the model store for a
	// change (store_model_in_db); zero: models.DefaultInterval (10s).
	// ModelsWait is the longest a request waits for a due check; zero:
	// models.DefaultWait (tests raise it to make the check's request see
	// its result).
	ModelsReload time.Duration
	ModelsWait   time.Duration

	Store string // StoreMemory (default) or StoreDynamoDB
	// AWS is the SDK configuration for StoreDynamoDB; its endpoint comes
	// only from the SDK's own AWS_ENDPOINT_URL handling.
	AWS *aws.Config
	// Emulator marks an endpoint override (DynamoDB Local, LocalStack).
	Emulator bool
	Tables   tables.Names
	// KeyCacheTTL and CooldownCacheTTL bound how long this instance reuses
	// what it read of keys and cooldowns (StoreDynamoDB): a blocked key or a
	// spent budget takes effect on every instance within KeyCacheTTL.
	// Zero: 1s each.
	KeyCacheTTL      time.Duration
	CooldownCacheTTL time.Duration
	// ResponsesTTL is how long stored Responses API responses are kept
	// (previous_response_id, GET /v1/responses/{id}). Zero: 30 days.
	ResponsesTTL time.Duration
	// StoreTimeout bounds each DynamoDB call of the keys, limits and
	// cooldown stores, on top of the request's deadline. Zero: 2s. Tests on
	// a loaded emulator raise it.
	StoreTimeout time.Duration
	// LimitsTimeout is the longest an admission waits for the counters
	// table when the request's deadline allows more; past it the store
	// counts as unreachable (rate_limits_fail_open decides). Zero: the
	// larger of StoreTimeout and limits.DefaultAdmitTimeout.
	LimitsTimeout time.Duration

	// Prices is the price table; nil: the file GATEWAY_PRICES names (read
	// through Getenv), else the embedded table.
	Prices *pricing.Table

	// Metrics counts requests, cooldowns and store errors (MetricsFromEnv);
	// nil: no metrics.
	Metrics *metrics.Registry

	// HTTPClient overrides the upstream client (tests).
	HTTPClient *http.Client
	// Now overrides the clock (tests).
	Now func() time.Time

	// SpendQueueURL (SPEND_QUEUE_URL): spend events go to this SQS queue;
	// "": an in-process queue records them in the store (needs no AWS).
	SpendQueueURL string
	// Lambda holds spend events until FlushSpend, which the Lambda hook
	// calls after each response.
	Lambda bool
	// Sinks builds the logging callbacks' deliverer of the in-process
	// spend queue (local mode: gatewayapp sets it outside the Lambda
	// build, so the gateway's Lambda bootstrap links no sink package); nil,
	// or a queue on SQS (the spend function delivers): none.
	Sinks SinksFunc
	// masterKeyRead is the SSM read of the master key ResolveAWS started,
	// and readAhead Build's own reads ahead (Lambda); Build waits for both
	// just before the handler.
	masterKeyRead *pendingSecret
	readAhead     <-chan struct{}
	// secrets resolves os.environ/NAME from the environment, then the
	// secrets the config's key management names (secrets.go); nil: none.
	secrets *secrets.Resolver

	// SecretsTTL (GATEWAY_SECRETS_TTL) is how old the secrets may get
	// before they are read again; zero: secrets.DefaultTTL.
	SecretsTTL time.Duration
	// SecretSource overrides Secrets Manager (tests).
	SecretSource secrets.Source

	// Local bounds what a local-mode instance accepts from its clients
	// (local.go; DefaultLocalLimits); zero: no bounds, as Lambda needs.
	Local LocalLimits
}

// KeyStore is what the assembly hands on of the keys store: the admin
// API's reads and writes and the spend consumer's ApplySpend.
type KeyStore interface {
	keys.Admin
	keys.Spender
}

// Gateway is an assembled gateway.
type Gateway struct {
	// Config, Router and Handler are the gateway as built; with
	// store_model_in_db, the first snapshot of the stored models (API
	// serves the current one).
	Config  *config.Config
	Router  *router.Router
	Handler *gateway.Handler
	// API serves the gateway's routes: Handler, or with store_model_in_db
	// the current snapshot's handler (models.go).
	API http.Handler
	// Models is the model store (store_model_in_db).
	Models models.Store
	// Admin is the admin API on the same stores; HTTP serves the gateway
	// and every admin route on one port (local mode, as LiteLLM's proxy).
	Admin     *adminapi.Handler
	HTTP      http.Handler
	Keys      KeyStore
	Limits    limits.Store
	Cooldowns cooldown.Store
	// Spend records spend events and answers spend reports; SpendQueue is
	// where the handler publishes each request's event.
	Spend      spend.Store
	SpendQueue spend.Publisher
	// Responses keeps Responses API responses (memory, or the counters
	// table).
	Responses responses.Store
	// Metrics is Settings.Metrics: local mode serves it on GET /metrics
	// (metrics.go), Lambda writes its EMF lines in AfterResponse.
	Metrics *metrics.Registry

	// sharedCooldowns is the cooldown store itself, without Cached's view:
	// the admin API's /model/info reads it, so that a failure shows there as
	// unknown rather than as "not cooling down".
	sharedCooldowns cooldown.Store
	stopSweeper     func() // stops the strict-budget hold sweeper (strict.go)
	// Secrets are the secrets the config's key management names (nil:
	// none); stopSecrets stops their local re-read ticker.
	Secrets     *secrets.Resolver
	stopSecrets func()
	local       LocalLimits
}

// SinksFunc builds the deliverer of the logging callbacks cb names, with
// the callbacks of teams and keys read from ks, their credentials opened
// with open (shared/callbacks).
type SinksFunc func(ctx context.Context, cb config.Callbacks, ks keys.Reader, open func(string) (string, error), aws *aws.Config, log *slog.Logger) (spend.Deliverer, error)

// Build loads the config and wires the gateway.
func Build(ctx context.Context, s Settings) (*Gateway, error) {
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := loadConfig(ctx, &s, log) // secrets.go: with the secrets it names
	if err != nil {
		return nil, err
	}
	priceTable, err := prices(s)
	if err != nil {
		return nil, err
	}
	cfg.ResolvePrices(priceTable) // once, at startup; unknown prices become warnings
	for _, w := range cfg.Warnings {
		log.LogAttrs(ctx, slog.LevelWarn, "config", slog.String("path", w.Path), slog.Int("line", w.Line), slog.String("warning", w.Message))
	}
	gw := &Gateway{Config: cfg, local: s.Local}
	var keyReader gateway.KeyReader
	switch s.Store {
	case "", StoreMemory:
		keyReader = memoryStores(gw)
	case StoreDynamoDB:
		if s.AWS == nil {
			return nil, fmt.Errorf("store %s needs an AWS configuration", s.Store)
		}
		keyReader = dynamoStores(s, gw, log)
		if s.Lambda {
			s.readAhead = readAhead(ctx, cfg, gw.Cooldowns, s.Now) // coldstart.go
		}
	default:
		return nil, fmt.Errorf("store %q is not supported (memory, dynamodb)", s.Store)
	}
	// The credentials of teams' and keys' callbacks, sealed by the admin
	// API, open with the salt key, else the master key, as resolved below
	// (awaitInit): asked when the first one is opened, after Build.
	open := models.Opener(func() (string, error) { return cmp.Or(s.SaltKey, cfg.General.MasterKey), nil })
	if err := buildSpendQueue(ctx, s, gw, keyReader, open, log); err != nil {
		return nil, err
	}
	startSweeper(s, gw, log)
	gw.Metrics = s.Metrics
	var stored *pendingModels
	if cfg.General.StoreModelInDB {
		stored = readModels(ctx, gw.Models) // beside the master key's read
	} else {
		gw.Router = router.New(cfg, router.Options{Logger: log, Cooldowns: gw.Cooldowns, Now: s.Now, OnCooldown: s.Metrics.CooldownStarted})
	}
	client := s.HTTPClient
	if client == nil {
		client = providers.NewHTTPClient()
	}
	if inittrace.On() { // the first upstream call of a traced cold start
		traced := *client
		traced.Transport = inittrace.Transport(client.Transport, func(*http.Request) string { return "upstream" })
		client = &traced
	}
	if err := s.awaitInit(ctx); err != nil { // SSM and DynamoDB reads made while the above was built (coldstart.go)
		return nil, err
	}
	if s.MasterKey != "" {
		cfg.General.MasterKey = s.MasterKey
	}
	if cfg.General.MasterKey == "" { // none named anywhere: a named one that resolves to nothing stopped config.Load
		log.LogAttrs(ctx, slog.LevelWarn, "no master key: every request is served without a key (LiteLLM's behaviour); set GATEWAY_MASTER_KEY or general_settings.master_key")
	}
	if r := s.secrets; r != nil {
		gw.Secrets = r
		if bindSecretKeys(cfg, r) || stored != nil { // a provider's 401/403 re-reads them at once (stored deployments may name them too)
			c := *client
			c.Transport = r.Transport(client.Transport)
			client = &c
		}
		if !s.Lambda { // Lambda re-reads after a response (AfterResponse)
			gw.stopSecrets = refreshSecrets(r, s.SecretsTTL)
		}
	}
	provider := providers.New(client)
	var localSpend gateway.LocalSpender
	if c, ok := keyReader.(*keys.Cached); ok {
		localSpend = c // the cost of a call shows at once on this instance (keys/localspend.go)
	}
	newHandler := func(cfg *config.Config, rt *router.Router) *gateway.Handler {
		return gateway.New(gateway.Options{
			Config:     cfg,
			Router:     rt,
			Provider:   provider,
			Keys:       keyReader,
			Limits:     gw.Limits,
			Now:        s.Now,
			Logger:     log,
			Prices:     priceTable,
			Metrics:    s.Metrics,
			OnComplete: gateway.PublishSpend(gw.SpendQueue, localSpend),
			MaxStreams: s.Local.MaxStreams,
			Responses:  gw.Responses, ResponsesTTL: s.ResponsesTTL,
		})
	}
	var catalog *models.Catalog
	if stored != nil {
		live, cat, err := liveModels(ctx, s, gw, stored, priceTable, newHandler, log)
		if err != nil {
			return nil, err
		}
		first := live.Current(ctx)
		gw.Config, gw.Router, gw.Handler, gw.API, catalog = first.cfg, first.router, first.handler, liveHandler{live}, cat
	} else {
		gw.Handler = newHandler(cfg, gw.Router)
		gw.API = gw.Handler
	}
	admin := adminapi.Options{
		MasterKey: cfg.General.MasterKey, Keys: gw.Keys, Spend: gw.Spend, Config: cfg, Now: s.Now, Logger: log,
		Cooldowns: gw.sharedCooldowns, Models: catalog,
	}
	if sealer, err := models.NewSealer(cmp.Or(s.SaltKey, cfg.General.MasterKey)); err == nil {
		admin.Sealer = sealer // the credentials of teams' and keys' callbacks
	}
	gw.Admin = adminapi.New(admin)
	gw.HTTP = withMetricsRoute(adminapi.Mux(gw.Admin, gw.API), s.Metrics, cfg.General.MasterKey)
	return gw, nil
}
