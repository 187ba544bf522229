// The cold-start measurement (go run ./test/bench coldstart): the gateway's
// Lambda bootstrap, in the deployed configuration (DynamoDB store, master key
// from SSM, spend to SQS), started N times against DynamoDB Local and moto on
// loopback, each time served one function URL invocation by a Runtime API
// inside this process, so that every instant is on one clock.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

const coldstartUsage = `usage: go run ./test/bench coldstart [-n 10] [-baseline git-ref] [-out dir] [-secrets]

Starts the gateway's Lambda bootstrap (built as the Makefile builds it) n
times in the deployed configuration: DynamoDB store (DynamoDB Local at
DYNAMODB_ENDPOINT), master key from an SSM SecureString and spend to an SQS
queue (moto at SQS_ENDPOINT), one virtual key with an rpm limit, so the first
request reads the key and is admitted against DynamoDB. Each start is served
one function URL invocation by a Runtime API inside this process. Prints the
median of each phase, the emulators' own answer times for the same calls and
the gateway's own time. With -baseline, the bootstrap of that commit is
measured too, alternating with this tree's.
With -secrets, the deployments' keys come from a Secrets Manager secret
(moto) read at start (key_management_system: aws_secret_manager).
`

const coldRegion = "us-east-1"

type coldOptions struct {
	n         int
	out       string
	baseline  string
	bootstrap string
	ddb, sqs  string // emulator endpoints
	// secrets: the deployments' keys come from a Secrets Manager secret
	// (key_management_system: aws_secret_manager), read at start.
	secrets bool
}

// runColdstart is the coldstart subcommand.
func runColdstart(args []string) error {
	fs := flag.NewFlagSet("coldstart", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), coldstartUsage); fs.PrintDefaults() }
	var o coldOptions
	var envErrs []error
	fs.IntVar(&o.n, "n", envInt("COLDSTARTS", 10, &envErrs), "cold starts to measure (env COLDSTARTS)")
	fs.StringVar(&o.baseline, "baseline", os.Getenv("BASELINE"), "a git commit or branch whose bootstrap is measured too, alternating with this tree's (env BASELINE)")
	fs.StringVar(&o.bootstrap, "bootstrap", "", "measure this gateway bootstrap instead of building this tree's (an absolute path)")
	fs.StringVar(&o.out, "out", os.Getenv("OUT"), "directory for the bootstraps' logs (env OUT); empty: a temporary directory")
	fs.BoolVar(&o.secrets, "secrets", false, "the provider keys from a Secrets Manager secret on moto (key_management_system: aws_secret_manager)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := errors.Join(envErrs...); err != nil {
		return err
	}
	if fs.NArg() > 0 || o.n < 1 || o.n > 1000 {
		return fmt.Errorf("coldstart: want -n in 1..1000 and no arguments (got -n %d %q)", o.n, fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute+time.Duration(o.n)*10*time.Second)
	defer cancel()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	bin, err := os.MkdirTemp("", "sluice-coldstart-bin.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bin)
	return coldstart(ctx, o, root, bin)
}

// coldstartAfterLoad is the cold-start measurement at the end of the whole
// bench (COLDSTARTS runs, default 10; 0 skips it), when the emulators are
// there; without them it says how to get the figures.
func coldstartAfterLoad(ctx context.Context, root, bin string) error {
	var envErrs []error
	o := coldOptions{n: envInt("COLDSTARTS", 10, &envErrs), out: os.Getenv("OUT")}
	if err := errors.Join(envErrs...); err != nil {
		return err
	}
	if o.n <= 0 {
		return nil
	}
	fmt.Println("\n== Lambda cold start (go run ./test/bench coldstart)")
	if err := coldEmulators(&o); err != nil {
		fmt.Println("skipped:", err)
		return nil
	}
	if o.out != "" {
		o.out = filepath.Join(o.out, "coldstart")
	}
	bin = filepath.Join(bin, "coldstart") // its own config.yaml and mock beside the load's
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	return coldstart(ctx, o, root, bin)
}

// coldEmulators reads the emulator endpoints, or says how to get them.
func coldEmulators(o *coldOptions) error {
	o.ddb = firstNonEmpty(os.Getenv("DYNAMODB_ENDPOINT"), os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	o.sqs = os.Getenv("SQS_ENDPOINT")
	if o.ddb == "" || o.sqs == "" {
		return errors.New(`the cold-start bench needs DynamoDB Local and moto (SQS, SSM) on loopback:
  DYNAMODB_ENDPOINT=http://127.0.0.1:<port> SQS_ENDPOINT=http://127.0.0.1:<port> go run ./test/bench coldstart
(test/run.sh shows how to start both: DynamoDB Local from test/node_modules, moto_server from pip's moto[server])`)
	}
	return nil
}

func coldstart(ctx context.Context, o coldOptions, root, bin string) error {
	if err := coldEmulators(&o); err != nil {
		return err
	}
	if o.out == "" {
		var err error
		if o.out, err = os.MkdirTemp("", "sluice-coldstart."); err != nil {
			return err
		}
	} else if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}

	fmt.Println("== building the gateway's bootstrap as the Makefile does (-tags lambda.norpc -trimpath -ldflags \"-s -w\", CGO_ENABLED=0)")
	variants := []coldVariant{{name: "this tree", path: filepath.Join(bin, "bootstrap")}}
	if o.bootstrap != "" { // a given binary (say, unstripped, for perf record)
		variants[0] = coldVariant{name: o.bootstrap, path: o.bootstrap}
	} else if err := buildBootstrap(ctx, root, variants[0].path); err != nil {
		return err
	}
	if o.baseline != "" {
		fmt.Printf("== building the baseline's bootstrap (%s, from git archive)\n", o.baseline)
		src, err := os.MkdirTemp("", "sluice-coldstart-baseline.")
		if err != nil {
			return err
		}
		defer os.RemoveAll(src)
		if err := gitExport(ctx, root, o.baseline, src); err != nil {
			return err
		}
		base := coldVariant{name: "baseline " + o.baseline, path: filepath.Join(bin, "bootstrap-baseline")}
		if err := buildBootstrap(ctx, src, base.path); err != nil {
			return fmt.Errorf("baseline %s: %w", o.baseline, err)
		}
		variants = append([]coldVariant{base}, variants...)
	}
	mockBuild := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "mock"), "./test/bench/mock")
	mockBuild.Dir, mockBuild.Stdout, mockBuild.Stderr = root, os.Stderr, os.Stderr
	if err := mockBuild.Run(); err != nil {
		return fmt.Errorf("go build mock: %w", err)
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
	if err := os.WriteFile(filepath.Join(bin, "config.yaml"), []byte(gatewayConfig(mockAddr)), 0o644); err != nil {
		return err
	}

	fmt.Println("== resources: tables, SSM SecureString, SQS queue, a virtual key with an rpm limit")
	res, err := newColdResources(ctx, o)
	if err != nil {
		return err
	}
	defer res.cleanup()
	if o.secrets {
		fmt.Println("== resources: the provider keys in a Secrets Manager secret")
		config, err := res.secretsConfig(ctx, gatewayConfig(mockAddr))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(bin, "config.yaml"), []byte(config), 0o644); err != nil {
			return err
		}
	}

	api, err := newRuntimeAPI(res.event(root))
	if err != nil {
		return err
	}
	defer api.close()

	env := res.env(api.addr, bin)
	// With a baseline, the variants alternate, so that both see the same
	// load on the machine and the emulators.
	for i := 0; i < o.n; i++ {
		for v := range variants {
			log := filepath.Join(o.out, fmt.Sprintf("bootstrap-%02d-%d.log", i+1, v))
			r, err := api.coldStart(ctx, variants[v].path, bin, env, log)
			if err != nil {
				return fmt.Errorf("cold start %d of %s: %w", i+1, variants[v].name, err)
			}
			variants[v].runs = append(variants[v].runs, r)
		}
	}

	fmt.Println("== the emulators' own answer times (the same calls from this process, median of 20)")
	emu, err := res.emulatorTimes(ctx, "http://"+mockAddr)
	if err != nil {
		return err
	}
	for _, v := range variants {
		var size int64
		if fi, err := os.Stat(v.path); err == nil {
			size = fi.Size()
		}
		fmt.Printf("\n== cold start of %s: %d runs, %s, %d cores, bootstrap %.1f MB; logs in %s\n", v.name, o.n, runtime.Version(), runtime.NumCPU(), float64(size)/1e6, o.out)
		coldSummary(os.Stdout, v.runs, emu)
	}
	return nil
}

// coldVariant is one bootstrap and its cold starts.
type coldVariant struct {
	name, path string
	runs       []coldRun
}
