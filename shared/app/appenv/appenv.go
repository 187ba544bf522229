// Package appenv reads what the environment and the command line decide
// for each function (gateway, admin, spend), once, into one typed value:
// every main calls Read and passes the result on; no package below main
// reads an environment variable of its own (the AWS SDK's own variables
// aside, read by shared/awsconf).
//
// It links nothing of the gateway, so the spend consumer's bootstrap, which
// reads its settings here too, stays as small as it was.
package appenv

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
)

// Function names a function: its settings are read by Read.
type Function string

// The functions (functions/<name>).
const (
	Gateway Function = "gateway"
	Admin   Function = "admin"
	Spend   Function = "spend"
)

// Stores.
const (
	StoreMemory   = "memory"
	StoreDynamoDB = "dynamodb"
)

// Environment variables read here besides the tables' (infra/tables) and
// the flags' defaults.
const (
	// MasterKeyParameterEnv names the SSM SecureString parameter holding
	// the master key (as deployed).
	MasterKeyParameterEnv = "GATEWAY_MASTER_KEY_PARAMETER"
	// SaltKeyEnv is LiteLLM's salt key, which seals stored credentials
	// (store_model_in_db); unset: the master key, as in LiteLLM.
	SaltKeyEnv = "LITELLM_SALT_KEY"
	// SaltKeyParameterEnv names the SSM SecureString parameter holding the
	// salt key (as deployed): read in the master key's call.
	SaltKeyParameterEnv = "GATEWAY_SALT_KEY_PARAMETER"
	// ModelsReloadEnv bounds how long an instance serves stored models
	// before it checks the store again (a Go duration; default 10s, at
	// most 60s).
	ModelsReloadEnv = "GATEWAY_MODELS_RELOAD"
	// MetricsEnv: "off" turns metrics off (default on).
	MetricsEnv = "METRICS"
	// MetricsNamespaceEnv is the CloudWatch namespace of the EMF lines
	// (default metrics.DefaultNamespace).
	MetricsNamespaceEnv = "METRICS_NAMESPACE"
	// lambdaRuntimeEnv is set inside Lambda (the runtime API's address).
	lambdaRuntimeEnv = "AWS_LAMBDA_RUNTIME_API"
)

// Settings are one function's settings. A field a function does not use is
// left zero (its variable is not read).
type Settings struct {
	Function Function
	// Getenv is the lookup Read was given (os.LookupEnv): it resolves the
	// config's os.environ/NAME references and GATEWAY_PRICES (shared/app).
	Getenv func(string) (string, bool)
	// Lambda: running inside Lambda (AWS_LAMBDA_RUNTIME_API is set).
	Lambda bool
	// Procs is the GOMAXPROCS the gateway sets in Lambda before any
	// goroutine starts (LambdaProcs); 0: the runtime's own, as when
	// GOMAXPROCS is set.
	Procs    int
	LogLevel slog.Level // LOG_LEVEL; info when unset or unknown
	// Notes are what the command line asked that is not done (LiteLLM's
	// -num_workers), logged as warnings at start.
	Notes []string

	Addr       string // -addr: listen address outside Lambda (gateway: env PORT sets the port)
	ConfigPath string // -config, env GATEWAY_CONFIG
	Store      string // -store, env GATEWAY_STORE: StoreMemory or StoreDynamoDB
	// MasterKey is GATEWAY_MASTER_KEY, else LITELLM_MASTER_KEY; the SSM
	// parameter MasterKeyParameter names, when set, replaces it.
	MasterKey          string
	MasterKeyParameter string
	// SaltKey (LITELLM_SALT_KEY) seals stored credentials; the SSM
	// parameter SaltKeyParameter names, when set, replaces it.
	SaltKey          string
	SaltKeyParameter string
	// ModelsReload (GATEWAY_MODELS_RELOAD) is how often an instance checks
	// the model store (store_model_in_db); 0: the default.
	ModelsReload  time.Duration
	Tables        tables.Names
	SpendQueueURL string // SPEND_QUEUE_URL

	// Gateway only.
	Metrics          bool   // METRICS (default on)
	MetricsNamespace string // METRICS_NAMESPACE
	KeyCacheTTL      time.Duration
	CooldownCacheTTL time.Duration
	// LimitsTimeout (GATEWAY_LIMITS_TIMEOUT) is the longest an admission
	// waits for the counters table; 0: the default (limits.DefaultAdmitTimeout).
	LimitsTimeout time.Duration
	ResponsesTTL  time.Duration // GATEWAY_RESPONSES_TTL: how long stored Responses API responses are kept
	// SecretsTTL (GATEWAY_SECRETS_TTL) is how old the secrets of the
	// config's key management may get before they are read again; 0: the
	// default (secrets.DefaultTTL, 5 minutes).
	SecretsTTL time.Duration
	// Local bounds a local-mode gateway's clients (env, then flags); zero
	// in Lambda.
	Local      LocalLimits
	CPUProfile string // -cpuprofile, local mode
	// Shutdown bounds a local gateway's stop (-drain-timeout,
	// -spend-flush-timeout), and the spend poller's (-drain-timeout).
	Shutdown Shutdown

	// Spend only (flags).
	Replay string
	Batch  int
	Window time.Duration
}

// Read parses fn's settings from the environment (lookup: os.LookupEnv)
// and its command line (args: os.Args; flag errors exit as the flag
// package's do), and validates them.
func Read(fn Function, lookup func(string) (string, bool), args []string) (Settings, error) {
	get := func(name string) string { v, _ := lookup(name); return v }
	s := Settings{Function: fn, Getenv: lookup, Lambda: get(lambdaRuntimeEnv) != "", LogLevel: logLevel(get("LOG_LEVEL"))}
	name := string(fn)
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	var err error
	var litellm litellmFlags
	switch fn {
	case Gateway:
		err = s.gateway(fs, get, lookup)
		litellm.declare(fs)
	case Admin:
		s.admin(fs, get)
	case Spend:
		s.Tables, s.SpendQueueURL = tables.NamesFromEnv(get), get(tables.SpendQueueEnvVar)
		s.sealingKeys(get)
		fs.StringVar(&s.ConfigPath, "config", get("GATEWAY_CONFIG"), "LiteLLM config file (env GATEWAY_CONFIG), for litellm_settings' logging callbacks and general_settings.alerting (budget alerts)")
		fs.StringVar(&s.Replay, "replay", "", `record the events of FILE ("-": stdin): log lines "spend event not recorded", or one event a line; then exit`)
		fs.IntVar(&s.Batch, "batch", 100, "most messages handled together (outside Lambda)")
		fs.DurationVar(&s.Window, "window", 2*time.Second, "how long a batch gathers after its first message (outside Lambda)")
		fs.DurationVar(&s.Shutdown.Drain, "drain-timeout", DefaultShutdown().Drain, "on SIGTERM or SIGINT, how long the batch in hand may take to be recorded before its messages are made visible again (outside Lambda)")
	default:
		return s, fmt.Errorf("function %q: want gateway, admin or spend", fn)
	}
	if err != nil {
		return s, err
	}
	_ = fs.Parse(args) // flag.ExitOnError
	switch {
	case fn == Gateway:
		if err := litellm.apply(&s); err != nil {
			return s, err
		}
		return s, s.gatewayEnv(get)
	case fn == Spend && !s.Lambda && s.Replay == "" && s.SpendQueueURL == "":
		return s, errors.New(tables.SpendQueueEnvVar + " is not set: the queue to poll (or use -replay FILE)")
	}
	return s, nil
}

// gateway reads the gateway's environment that its flags default to, and
// declares the flags.
func (s *Settings) gateway(fs *flag.FlagSet, get func(string) string, lookup func(string) (string, bool)) error {
	if s.Lambda && get("GOMAXPROCS") == "" {
		// The CPU time Lambda gives the function, not the CPUs it shows.
		s.Procs = LambdaProcs(get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"), runtime.NumCPU())
	}
	addr := "127.0.0.1:4000"
	if p := get("PORT"); p != "" {
		addr = "127.0.0.1:" + p
	}
	s.keysAndTables(get, tables.All()...)
	fs.StringVar(&s.Addr, "addr", addr, "listen address in local mode (env PORT sets the port)")
	fs.StringVar(&s.ConfigPath, "config", get("GATEWAY_CONFIG"), "LiteLLM config file (env GATEWAY_CONFIG); empty: embedded mock default")
	fs.StringVar(&s.Store, "store", or(get("GATEWAY_STORE"), StoreMemory), "state store: memory or dynamodb (env GATEWAY_STORE)")
	fs.StringVar(&s.CPUProfile, "cpuprofile", "", "local mode: write a CPU profile (go tool pprof) to this file until the gateway stops")
	l, err := localLimits(get, lookup)
	if err != nil {
		return err
	}
	s.Local = l
	if err := s.gatewayShutdown(fs, get); err != nil {
		return err
	}
	fs.DurationVar(&s.Local.ReadHeaderTimeout, "read-header-timeout", l.ReadHeaderTimeout, "local mode: close a connection whose request headers take longer (env GATEWAY_READ_HEADER_TIMEOUT; 0: none)")
	fs.IntVar(&s.Local.MaxHeaderBytes, "max-header-bytes", l.MaxHeaderBytes, "local mode: request line and headers above this get a 431 (env GATEWAY_MAX_HEADER_BYTES; 0: 1 MB)")
	fs.DurationVar(&s.Local.BodyTimeout, "body-timeout", l.BodyTimeout, "local mode: a request body taking longer gets a 408 (env GATEWAY_BODY_TIMEOUT; 0: none)")
	fs.IntVar(&s.Local.MaxStreams, "max-streams", l.MaxStreams, "local mode: streamed completions served at once; above, a 503 (env GATEWAY_MAX_STREAMS; 0: no bound)")
	fs.IntVar(&s.Local.MaxRequests, "max-requests", l.MaxRequests, "local mode: requests served at once, streams included; above, a 503 (env GATEWAY_MAX_REQUESTS; 0: no bound)")
	return nil
}

// gatewayEnv reads the gateway's environment that no flag overrides.
func (s *Settings) gatewayEnv(get func(string) string) error {
	// Spend events: to SQS when the queue is set (held until each response
	// is out, in Lambda); else an in-process queue into the same store.
	s.SpendQueueURL = get(tables.SpendQueueEnvVar)
	if s.Lambda { // one request per instance; the function URL bounds headers and body
		s.Local, s.Shutdown = LocalLimits{}, Shutdown{}
	}
	var err error
	if s.Metrics, err = MetricsOn(get(MetricsEnv)); err != nil {
		return err
	}
	s.MetricsNamespace = get(MetricsNamespaceEnv)
	if s.KeyCacheTTL, err = duration(get, "GATEWAY_KEY_CACHE_TTL"); err != nil {
		return err
	}
	if s.CooldownCacheTTL, err = duration(get, "GATEWAY_COOLDOWN_CACHE_TTL"); err != nil {
		return err
	}
	if s.LimitsTimeout, err = duration(get, "GATEWAY_LIMITS_TIMEOUT"); err != nil {
		return err
	}
	if s.ModelsReload, err = duration(get, ModelsReloadEnv); err != nil {
		return err
	}
	if s.ModelsReload > time.Minute {
		return fmt.Errorf("%s=%s: at most 1m (a change must reach every instance within a minute)", ModelsReloadEnv, s.ModelsReload)
	}
	if s.ResponsesTTL, err = duration(get, "GATEWAY_RESPONSES_TTL"); err != nil {
		return err
	}
	s.SecretsTTL, err = duration(get, "GATEWAY_SECRETS_TTL")
	return err
}

// admin reads the admin API's environment and declares its flags. It reads
// the keys and spend tables (the reports); the counters table is the
// gateway's alone.
func (s *Settings) admin(fs *flag.FlagSet, get func(string) string) {
	store := StoreMemory
	if s.Lambda {
		store = StoreDynamoDB
	}
	s.keysAndTables(get, tables.Keys, tables.Spend)
	fs.StringVar(&s.Addr, "addr", "127.0.0.1:4001", "listen address outside Lambda")
	fs.StringVar(&s.ConfigPath, "config", get("GATEWAY_CONFIG"), "LiteLLM config file (env GATEWAY_CONFIG), for /model/info")
	fs.StringVar(&s.Store, "store", or(get("GATEWAY_STORE"), store), "state store: memory or dynamodb (env GATEWAY_STORE)")
}

// keysAndTables reads the master key, its SSM parameter and the tables of
// ts: what the gateway and the admin API both read.
func (s *Settings) keysAndTables(get func(string) string, ts ...tables.Table) {
	s.sealingKeys(get)
	s.Tables = tables.NamesFromEnv(get, ts...)
}

// sealingKeys reads the master key, the salt key and their SSM
// parameters: what seals stored credentials (the spend consumer opens
// those of teams' and keys' logging callbacks).
func (s *Settings) sealingKeys(get func(string) string) {
	s.MasterKey = or(get("GATEWAY_MASTER_KEY"), get("LITELLM_MASTER_KEY"))
	s.MasterKeyParameter = get(MasterKeyParameterEnv)
	s.SaltKey, s.SaltKeyParameter = get(SaltKeyEnv), get(SaltKeyParameterEnv)
}

// MetricsOn reads METRICS: off, false or 0 turn metrics off; empty, on,
// true or 1 leave them on (any case, spaces trimmed).
func MetricsOn(v string) (bool, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "off", "false", "0":
		return false, nil
	case "", "on", "true", "1":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want on or off", MetricsEnv, v)
}

// lambdaMBPerCPU is the memory at which Lambda gives a function one vCPU
// of CPU time; it gives CPU in proportion to memory.
const lambdaMBPerCPU = 1769

// LambdaProcs is the GOMAXPROCS for a Lambda function with memoryMB of
// memory (AWS_LAMBDA_FUNCTION_MEMORY_SIZE) on numCPU CPUs: the vCPUs of CPU
// time the memory buys, at least 1, at most numCPU; numCPU when memoryMB
// is not a number. Lambda shows the function 2 vCPUs or more whatever its
// memory, but below 1,769 MB it gets less than one vCPU of time (0.145 at
// 256 MB), and an instance serves one request at a time: a second P only
// adds wakeups, thread hand-offs and spinning that spend that share (the
// cold-start bench: ~2.5 ms less CPU from main() to the first response,
// of ~15.5, with 1).
func LambdaProcs(memoryMB string, numCPU int) int {
	mb, err := strconv.Atoi(memoryMB)
	if err != nil || mb <= 0 {
		return numCPU
	}
	return max(1, min(numCPU, mb/lambdaMBPerCPU))
}

// duration reads a Go duration ("1s", "500ms"); unset is zero (the default).
func duration(get func(string) string, name string) (time.Duration, error) {
	v := get(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 1s or 500ms", name, v)
	}
	return d, nil
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
