// Command bench measures the gateway's own cost against net/http's bare
// ReverseProxy, everything on loopback:
//
//   - ./test/bench/mock: an OpenAI-compatible upstream that answers at once;
//   - ./test/bench/bareproxy: httputil.ReverseProxy with no logic in front of it,
//     the floor for any Go gateway hop;
//   - ./functions/gateway in local mode with one deployment whose api_base is
//     the mock, twice: at the default log level (info) and with LOG_LEVEL=warn,
//     to show what per-request logging costs;
//   - with -null, ./test/bench/nullhop: net/http's server and the gateway's
//     upstream client with no logic between them, the floor of a hop built
//     as the gateway is;
//   - ./test/bench/loadgen against the bare proxy and both gateways,
//     interleaved (the order rotates each round), at c=1 and c=32, JSON and SSE;
//     -modes messages adds an Anthropic Messages stream (POST /v1/messages)
//     passed through to an anthropic/ deployment on the mock.
//
// It prints every RESULT line, then the medians over the rounds and the
// ratios to the bare proxy. Not part of CI: the numbers depend on the machine,
// and only ratios measured in one run mean anything (the load generator, the
// upstream and the proxies share the cores).
//
//	go run ./test/bench                         # about 2.5 minutes
//	go run ./test/bench -rounds 3 -d 10s        # longer, steadier
//	go run ./test/bench -rounds 1 -d 2s         # a quick look
//
// Then, when DYNAMODB_ENDPOINT and SQS_ENDPOINT name DynamoDB Local and moto,
// it measures the Lambda cold start in the deployed configuration (COLDSTARTS
// runs, default 10; 0 skips); `go run ./test/bench coldstart` measures only
// that (coldstart.go says what and how).
//
// Each flag's default comes from an environment variable when it is set:
// ROUNDS, DURATION, WARMUP, CONCURRENCY ("1 32"), MODES ("json sse") and OUT
// (a directory that keeps the raw RESULT lines and the logs; default: a new
// temporary directory).
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	run := run
	if len(os.Args) > 1 && os.Args[1] == "coldstart" { // coldstart.go
		run = func() error { return runColdstart(os.Args[2:]) }
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	rounds      int
	dur, warmup time.Duration
	concs       []int
	modes       []string
	out         string
	profile     bool
	null        bool
}

func parseFlags() (options, error) {
	var o options
	var concs, modes string
	var envErrs []error
	flag.IntVar(&o.rounds, "rounds", envInt("ROUNDS", 2, &envErrs), "rounds over all targets (env ROUNDS)")
	flag.DurationVar(&o.dur, "d", envDuration("DURATION", 5*time.Second, &envErrs), "measured duration of each load run (env DURATION)")
	flag.DurationVar(&o.warmup, "warmup", envDuration("WARMUP", time.Second, &envErrs), "warmup before each load run, not recorded (env WARMUP)")
	flag.StringVar(&concs, "c", envOr("CONCURRENCY", "1 32"), "concurrencies, space- or comma-separated (env CONCURRENCY)")
	flag.StringVar(&modes, "modes", envOr("MODES", "json sse"), "modes: json, sse, messages (an Anthropic Messages stream passed through to an anthropic/ deployment) (env MODES)")
	flag.StringVar(&o.out, "out", os.Getenv("OUT"), "directory for the raw RESULT lines and the logs (env OUT); empty: a temporary directory")
	flag.BoolVar(&o.profile, "profile", os.Getenv("PROFILE") != "", "write a CPU profile of the gateway at log level info to the output directory (env PROFILE)")
	flag.BoolVar(&o.null, "null", os.Getenv("NULLHOP") != "", "measure test/bench/nullhop too: net/http's server and the gateway's upstream client with no logic (env NULLHOP)")
	flag.Parse()
	if err := errors.Join(envErrs...); err != nil {
		return o, err
	}
	if flag.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if o.rounds < 1 || o.rounds > 100 {
		return o, fmt.Errorf("-rounds %d: want 1..100", o.rounds)
	}
	if o.dur <= 0 || o.dur > 10*time.Minute || o.warmup < 0 || o.warmup > time.Minute {
		return o, fmt.Errorf("-d %s -warmup %s: want 0 < d <= 10m, 0 <= warmup <= 1m", o.dur, o.warmup)
	}
	for _, f := range fields(concs) {
		c, err := strconv.Atoi(f)
		if err != nil || c < 1 || c > 1024 {
			return o, fmt.Errorf("concurrency %q: want a whole number in 1..1024", f)
		}
		o.concs = append(o.concs, c)
	}
	for _, m := range fields(modes) {
		if m != "json" && m != "sse" && m != "messages" {
			return o, fmt.Errorf("mode %q: want json, sse or messages", m)
		}
		o.modes = append(o.modes, m)
	}
	if len(o.concs) == 0 || len(o.modes) == 0 {
		return o, errors.New("no concurrency or no mode to measure")
	}
	return o, nil
}

// The three targets, in the order of the summary's columns; -null adds
// "null".
var baseTargets = []string{"bare", "gw_info", "gw_warn"}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "sluice-bench."); err != nil {
			return err
		}
	} else if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	bin, err := os.MkdirTemp("", "sluice-bench-bin.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)

	targets := append([]string(nil), baseTargets...)
	if o.null {
		targets = append(targets, "null")
	}
	// Every load run is bounded by loadgen itself; this bounds the whole run
	// (builds, start-up and all load runs) in case anything hangs.
	runs := o.rounds * len(o.modes) * len(o.concs) * len(targets)
	budget := 5*time.Minute + time.Duration(runs)*(o.warmup+o.dur+30*time.Second)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	fmt.Println("== building (gateway and bench tools from", root+")")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator),
		"./functions/gateway", "./test/bench/mock", "./test/bench/bareproxy", "./test/bench/nullhop", "./test/bench/loadgen")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}

	var procs procs
	defer procs.stop()

	mockAddr, err := freeAddr()
	if err != nil {
		return err
	}
	if err := procs.start(ctx, o.out, "mock", nil, filepath.Join(bin, "mock"), "-addr", mockAddr); err != nil {
		return err
	}
	mockPid := procs.last()
	bareAddr, err := freeAddr()
	if err != nil {
		return err
	}
	if err := procs.start(ctx, o.out, "bareproxy", nil, filepath.Join(bin, "bareproxy"), "-addr", bareAddr, "-upstream", "http://"+mockAddr); err != nil {
		return err
	}
	pids := map[string]int{"bare": procs.last()}
	url := map[string]string{"bare": "http://" + bareAddr + "/v1/chat/completions"}
	if o.null {
		nullAddr, err := freeAddr()
		if err != nil {
			return err
		}
		if err := procs.start(ctx, o.out, "nullhop", nil, filepath.Join(bin, "nullhop"), "-addr", nullAddr, "-upstream", "http://"+mockAddr); err != nil {
			return err
		}
		pids["null"], url["null"] = procs.last(), "http://"+nullAddr+"/v1/chat/completions"
	}
	config := filepath.Join(bin, "config.yaml")
	if err := os.WriteFile(config, []byte(gatewayConfig(mockAddr)), 0o644); err != nil {
		return err
	}
	for _, g := range []struct{ target, name, level string }{{"gw_info", "gateway-info", "info"}, {"gw_warn", "gateway-warn", "warn"}} {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		// Local mode, memory store, no master key: nothing but the mock.
		env := []string{"LOG_LEVEL=" + g.level, "AWS_LAMBDA_RUNTIME_API=", "GATEWAY_MASTER_KEY=", "LITELLM_MASTER_KEY=", "GATEWAY_MASTER_KEY_PARAMETER="}
		args := []string{"-addr", addr, "-config", config, "-store", "memory"}
		if o.profile && g.target == "gw_info" {
			args = append(args, "-cpuprofile", filepath.Join(o.out, g.name+".pprof"))
			fmt.Printf("== profiling %s: go tool pprof -top %s (complete once the bench ends)\n", g.name, filepath.Join(o.out, g.name+".pprof"))
		}
		if err := procs.start(ctx, o.out, g.name, env, filepath.Join(bin, "gateway"), args...); err != nil {
			return err
		}
		if err := ready(ctx, "http://"+addr+"/health/readiness"); err != nil {
			return fmt.Errorf("%s is not ready (log: %s): %w", g.name, filepath.Join(o.out, g.name+".log"), err)
		}
		url[g.target] = "http://" + addr + "/v1/chat/completions"
		pids[g.target] = procs.last()
	}

	resultsPath := filepath.Join(o.out, "results.txt")
	results, err := os.Create(resultsPath)
	if err != nil {
		return err
	}
	defer results.Close()
	fmt.Printf("== %s, %d cores; %d rounds x %d targets, -d %s -warmup %s\n", runtime.Version(), runtime.NumCPU(), o.rounds, len(targets), o.dur, o.warmup)
	var lines []result
	for round := 1; round <= o.rounds; round++ {
		for _, mode := range o.modes {
			for _, c := range o.concs {
				// Interleave, and rotate the order each round so no target
				// always runs first (or right after the same neighbour).
				for i := range targets {
					t := targets[(i+round-1)%len(targets)]
					cpu0, _ := procCPU(pids[t])
					mock0, _ := procCPU(mockPid)
					u := url[t]
					if mode == "messages" {
						u = strings.Replace(u, "/v1/chat/completions", "/v1/messages", 1)
					}
					line, loadCPU, err := loadgen(ctx, filepath.Join(bin, "loadgen"), u, c, mode, o, t)
					if err != nil {
						return err
					}
					r, err := parseResult(line)
					if err != nil {
						return err
					}
					// The server's CPU over the run, warmup included, per
					// request (the warmup's requests counted at the run's rate).
					r.round = round
					if cpu1, ok := procCPU(pids[t]); ok && r.rps > 0 {
						reqs := r.rps * (o.warmup + o.dur).Seconds()
						r.cpu = time.Duration(float64(cpu1-cpu0) / reqs)
						line += fmt.Sprintf(" cpu_us_per_req=%.1f", float64(r.cpu)/1e3)
						// The rest of the machine's work per request: the
						// mock's and the load generator's, which share the
						// two cores with the server under test.
						if mock1, ok := procCPU(mockPid); ok && loadCPU > 0 {
							r.rest = time.Duration(float64(mock1-mock0+loadCPU) / reqs)
							line += fmt.Sprintf(" rest_cpu_us_per_req=%.1f", float64(r.rest)/1e3)
						}
					}
					fmt.Println(line)
					fmt.Fprintln(results, line)
					lines = append(lines, r)
				}
			}
		}
	}
	fmt.Printf("\n== summary (median of %d rounds; raw lines in %s, logs beside them)\n", o.rounds, resultsPath)
	rss := map[string]int64{}
	for _, t := range targets {
		rss[t], _ = procPeakRSS(pids[t])
	}
	summary(os.Stdout, lines, o, rss)
	return coldstartAfterLoad(ctx, root, bin) // coldstart.go
}

// gatewayConfig is a LiteLLM config with one deployment on the mock.
func gatewayConfig(mockAddr string) string {
	return `model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: http://` + mockAddr + `/v1
      api_key: dummy
  - model_name: ` + messagesModel + `
    litellm_params:
      model: anthropic/` + messagesModel + `
      api_base: http://` + mockAddr + `
      api_key: dummy
`
}

// messagesModel is the messages mode's model: an anthropic/ deployment on
// the mock, whose /v1/messages streams Anthropic's events.
const messagesModel = "claude-sonnet-4-5-20250929"

// moduleRoot is the directory of this repository's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	data, err := os.ReadFile(gomod)
	if err != nil || !bytes.Contains(data, []byte("module github.com/sluice-gw/sluice\n")) {
		return "", errors.New("run this from inside the sluice repository (go run ./test/bench)")
	}
	return filepath.Dir(gomod), nil
}

// freeAddr is a loopback address nothing listens on (the kernel's pick).
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int, errs *[]error) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s=%q: want a whole number", name, s))
	}
	return v
}

func envDuration(name string, def time.Duration, errs *[]error) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("%s=%q: want a duration such as 5s", name, s))
	}
	return v
}
