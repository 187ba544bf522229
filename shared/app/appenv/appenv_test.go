package appenv_test

import (
	"log/slog"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/app/appenv"
)

func TestLambdaProcs(t *testing.T) {
	for _, c := range []struct {
		memory string
		cpus   int
		want   int
	}{
		{"128", 2, 1},
		{"256", 2, 1},   // the template's default: 0.145 vCPU of time
		{"1769", 2, 1},  // one vCPU
		{"3538", 2, 2},  // two
		{"3537", 2, 1},  // not yet two
		{"10240", 6, 5}, // Lambda's largest: 5.8 vCPUs of time on 6
		{"10240", 4, 4}, // never more than the CPUs shown
		{"", 2, 2},      // unknown: the runtime's default
		{"lots", 2, 2},
		{"-1", 2, 2},
	} {
		if got := appenv.LambdaProcs(c.memory, c.cpus); got != c.want {
			t.Errorf("LambdaProcs(%q, %d) = %d, want %d", c.memory, c.cpus, got, c.want)
		}
	}
}

// TestRead: each function's settings from an environment and a command
// line: flags over the environment over the defaults, and only the
// variables the function uses.
func TestRead(t *testing.T) {
	full := map[string]string{
		"GATEWAY_CONFIG": "c.yaml", "GATEWAY_STORE": "dynamodb", "LITELLM_MASTER_KEY": "sk-l",
		"GATEWAY_MASTER_KEY_PARAMETER": "/mk", "KEYS_TABLE": "k", "COUNTERS_TABLE": "c", "SPEND_TABLE": "s",
		"SPEND_QUEUE_URL": "q", "PORT": "5000", "LOG_LEVEL": "debug", "METRICS_NAMESPACE": "Acme",
		"GATEWAY_KEY_CACHE_TTL": "2s", "GATEWAY_MAX_STREAMS": "7", "GATEWAY_BODY_TIMEOUT": "0",
		"GATEWAY_DRAIN_TIMEOUT": "40s", "GATEWAY_SPEND_FLUSH_TIMEOUT": "0",
	}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(full)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	local := appenv.DefaultLocalLimits()
	local.MaxStreams, local.BodyTimeout, local.MaxRequests = 7, 0, 3
	for _, c := range []struct {
		name string
		fn   appenv.Function
		env  map[string]string
		args []string
		want appenv.Settings // Getenv aside
		err  string
	}{
		{name: "gateway", fn: appenv.Gateway, env: full, args: []string{"-max-requests", "3", "-store", "memory", "-drain-timeout", "50s"}, want: appenv.Settings{
			Function: appenv.Gateway, LogLevel: slog.LevelDebug, Addr: "127.0.0.1:5000", ConfigPath: "c.yaml", Store: "memory",
			MasterKey: "sk-l", MasterKeyParameter: "/mk", Tables: tables.Names{Keys: "k", Counters: "c", Spend: "s"},
			SpendQueueURL: "q", Metrics: true, MetricsNamespace: "Acme", KeyCacheTTL: 2 * time.Second, Local: local,
			Shutdown: appenv.Shutdown{Drain: 50 * time.Second}, // the flag over the environment; GATEWAY_SPEND_FLUSH_TIMEOUT=0 is none
		}},
		{name: "gateway shutdown from the environment", fn: appenv.Gateway, env: with("GATEWAY_SPEND_FLUSH_TIMEOUT", ""), want: appenv.Settings{
			Function: appenv.Gateway, LogLevel: slog.LevelDebug, Addr: "127.0.0.1:5000", ConfigPath: "c.yaml", Store: "dynamodb",
			MasterKey: "sk-l", MasterKeyParameter: "/mk", Tables: tables.Names{Keys: "k", Counters: "c", Spend: "s"},
			SpendQueueURL: "q", Metrics: true, MetricsNamespace: "Acme", KeyCacheTTL: 2 * time.Second, Local: func() appenv.LocalLimits { l := local; l.MaxRequests = 0; return l }(),
			Shutdown: appenv.Shutdown{Drain: 40 * time.Second, Flush: appenv.DefaultShutdown().Flush},
		}},
		{name: "bad drain", fn: appenv.Gateway, env: with("GATEWAY_DRAIN_TIMEOUT", "soon"), err: "GATEWAY_DRAIN_TIMEOUT"},
		{name: "gateway in Lambda", fn: appenv.Gateway, env: with("AWS_LAMBDA_RUNTIME_API", "x", "GOMAXPROCS", "2", "METRICS", "off", "GATEWAY_MASTER_KEY", "sk-g"), want: appenv.Settings{
			Function: appenv.Gateway, Lambda: true, LogLevel: slog.LevelDebug, Addr: "127.0.0.1:5000", ConfigPath: "c.yaml", Store: "dynamodb",
			MasterKey: "sk-g", MasterKeyParameter: "/mk", Tables: tables.Names{Keys: "k", Counters: "c", Spend: "s"},
			SpendQueueURL: "q", MetricsNamespace: "Acme", KeyCacheTTL: 2 * time.Second,
		}},
		{name: "admin", fn: appenv.Admin, env: with("GATEWAY_STORE", "", "AWS_LAMBDA_RUNTIME_API", "x"), want: appenv.Settings{
			Function: appenv.Admin, Lambda: true, LogLevel: slog.LevelDebug, Addr: "127.0.0.1:4001", ConfigPath: "c.yaml", Store: "dynamodb",
			MasterKey: "sk-l", MasterKeyParameter: "/mk", Tables: tables.Names{Keys: "k", Counters: "sluice-counters", Spend: "s"},
		}},
		{name: "spend", fn: appenv.Spend, env: full, args: []string{"-batch", "10"}, want: appenv.Settings{
			Function: appenv.Spend, LogLevel: slog.LevelDebug, Tables: tables.Names{Keys: "k", Counters: "c", Spend: "s"},
			MasterKey: "sk-l", MasterKeyParameter: "/mk", // they open the credentials of teams' and keys' callbacks
			ConfigPath: "c.yaml", SpendQueueURL: "q", Batch: 10, Window: 2 * time.Second, Shutdown: appenv.Shutdown{Drain: appenv.DefaultShutdown().Drain},
		}},
		{name: "spend without a queue", fn: appenv.Spend, env: with("SPEND_QUEUE_URL", ""), err: "SPEND_QUEUE_URL is not set"},
		{name: "spend replay", fn: appenv.Spend, env: with("SPEND_QUEUE_URL", ""), args: []string{"-replay", "-"}, want: appenv.Settings{
			Function: appenv.Spend, LogLevel: slog.LevelDebug, Tables: tables.Names{Keys: "k", Counters: "c", Spend: "s"},
			MasterKey: "sk-l", MasterKeyParameter: "/mk",
			ConfigPath: "c.yaml", Replay: "-", Batch: 100, Window: 2 * time.Second, Shutdown: appenv.Shutdown{Drain: appenv.DefaultShutdown().Drain},
		}},
		{name: "bad metrics", fn: appenv.Gateway, env: with("METRICS", "maybe"), err: `METRICS="maybe"`},
		{name: "bad ttl", fn: appenv.Gateway, env: with("GATEWAY_COOLDOWN_CACHE_TTL", "-1s"), err: "GATEWAY_COOLDOWN_CACHE_TTL"},
		{name: "bad bound", fn: appenv.Gateway, env: with("GATEWAY_MAX_HEADER_BYTES", "x"), err: "GATEWAY_MAX_HEADER_BYTES"},
		{name: "unknown function", fn: "other", env: full, err: "function"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
			got, err := appenv.Read(c.fn, lookup, append([]string{"test"}, c.args...))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := got.Getenv("GATEWAY_CONFIG"); v != "c.yaml" {
				t.Errorf("Getenv is not the lookup given")
			}
			got.Getenv = nil
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// LiteLLM's proxy command line (`litellm --config c.yaml --port 4100
// --host 0.0.0.0 --num_workers 4 --detailed_debug`) runs the local gateway
// (issue 31): the port and host set the listen address, the debug flag the
// log level, and -num_workers is noted as ignored.
func TestLiteLLMFlags(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	s, err := appenv.Read(appenv.Gateway, lookup, []string{"gateway", "--config", "c.yaml", "--port", "4100", "--host", "0.0.0.0", "--num_workers", "4", "--detailed_debug"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr != "0.0.0.0:4100" || s.ConfigPath != "c.yaml" || s.LogLevel != slog.LevelDebug {
		t.Errorf("addr %q config %q level %v", s.Addr, s.ConfigPath, s.LogLevel)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "-num_workers 4 ignored") {
		t.Errorf("notes = %q", s.Notes)
	}
	s, err = appenv.Read(appenv.Gateway, lookup, []string{"gateway", "-addr", "127.0.0.2:9", "--port", "4200"})
	if err != nil || s.Addr != "127.0.0.2:4200" || len(s.Notes) != 0 {
		t.Errorf("-addr with --port: %q %v %q", s.Addr, err, s.Notes)
	}
	if _, err := appenv.Read(appenv.Gateway, lookup, []string{"gateway", "--port", "70000"}); err == nil || !strings.Contains(err.Error(), "-port 70000") {
		t.Errorf("--port 70000: %v", err)
	}
}
