// The cold-start measurement (go run ./test/bench coldstart): the gateway's
// Lambda bootstrap, in the deployed configuration (DynamoDB store, master key
// from SSM, spend to SQS), started N times against DynamoDB Local and moto on
// loopback, each time served one function URL invocation by a Runtime API
// inside this process, so that every instant is on one clock.

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/cooldown/ddbcooldown"
	"github.com/sluice-gw/sluice/shared/inittrace"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
)

const coldstartUsage = `usage: go run ./test/bench coldstart [-n 10] [-baseline git-ref] [-out dir]

Starts the gateway's Lambda bootstrap (built as the Makefile builds it) n
times in the deployed configuration: DynamoDB store (DynamoDB Local at
DYNAMODB_ENDPOINT), master key from an SSM SecureString and spend to an SQS
queue (moto at SQS_ENDPOINT), one virtual key with an rpm limit, so the first
request reads the key and is admitted against DynamoDB. Each start is served
one function URL invocation by a Runtime API inside this process. Prints the
median of each phase, the emulators' own answer times for the same calls and
the gateway's own time. With -baseline, the bootstrap of that commit is
measured too, alternating with this tree's.
`

const coldRegion = "us-east-1"

type coldOptions struct {
	n         int
	out       string
	baseline  string
	bootstrap string
	ddb, sqs  string // emulator endpoints
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

// buildBootstrap builds functions/gateway of the module in dir into out,
// as the Makefile builds it for Lambda (for this machine's architecture).
func buildBootstrap(ctx context.Context, dir, out string) error {
	build := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", out, "./functions/gateway")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build bootstrap: %w", err)
	}
	return nil
}

// gitExport writes the tree of ref (a commit, tag or branch of the
// repository at root) into dir, without touching the repository.
func gitExport(ctx context.Context, root, ref, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", ref)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = cmd.Wait()
			return fmt.Errorf("git archive %s: %w: %s", ref, err, stderr.String())
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				var f *os.File
				if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600); err == nil {
					_, err = io.Copy(f, tr)
					if cerr := f.Close(); err == nil {
						err = cerr
					}
				}
			}
		}
		if err != nil {
			_ = cmd.Wait()
			return err
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", ref, err, stderr.String())
	}
	return nil
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// coldResources are one run's tables, parameter, queue and key.
type coldResources struct {
	cfg       aws.Config
	ddbClient *dynamodb.Client
	ssmClient *ssm.Client
	sqsClient *sqs.Client
	names     tables.Names
	param     string // SSM parameter name
	queueURL  string
	secret    string // the virtual key
	hash      string
	rpm       int64
	o         coldOptions
}

func awsCfg(ctx context.Context) (aws.Config, error) {
	return awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(coldRegion),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
}

func newColdResources(ctx context.Context, o coldOptions) (*coldResources, error) {
	cfg, err := awsCfg(ctx)
	if err != nil {
		return nil, err
	}
	suffix := randHex(4)
	r := &coldResources{
		cfg:    cfg,
		names:  tables.WithAffix("coldstart-", "-"+suffix),
		param:  "/sluice-coldstart-" + suffix + "/master-key",
		secret: "sk-coldstart-" + randHex(16),
		rpm:    5000, // one counter item (limits.ShardsFor splits only above 10,000)
		o:      o,
	}
	r.ddbClient = dynamodb.NewFromConfig(cfg, func(opt *dynamodb.Options) {
		opt.BaseEndpoint = aws.String(o.ddb)
		opt.DisableValidateResponseChecksum = true
	})
	r.ssmClient = ssm.NewFromConfig(cfg, func(opt *ssm.Options) { opt.BaseEndpoint = aws.String(o.sqs) })
	r.sqsClient = sqs.NewFromConfig(cfg, func(opt *sqs.Options) { opt.BaseEndpoint = aws.String(o.sqs) })
	r.hash = keys.HashSecret(r.secret)

	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := tables.Create(tctx, r.ddbClient, r.names); err != nil {
		return nil, fmt.Errorf("tables on %s: %w", o.ddb, err)
	}
	if _, err := r.ssmClient.PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(r.param), Type: ssmtypes.ParameterTypeSecureString, Value: aws.String("sk-coldstart-master-" + randHex(8)),
	}); err != nil {
		r.cleanup()
		return nil, fmt.Errorf("ssm parameter on %s: %w", o.sqs, err)
	}
	q, err := r.sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("sluice-coldstart-" + suffix)})
	if err != nil {
		r.cleanup()
		return nil, fmt.Errorf("sqs queue on %s: %w", o.sqs, err)
	}
	r.queueURL = aws.ToString(q.QueueUrl)
	if err := ddbkeys.New(r.ddbClient, r.names.Keys, ddbkeys.Options{}).CreateKey(ctx, keys.Key{
		Hash: r.hash, Alias: "coldstart", CreatedAt: time.Now(), Settings: keys.Settings{RPMLimit: r.rpm},
	}); err != nil {
		r.cleanup()
		return nil, fmt.Errorf("virtual key: %w", err)
	}
	return r, nil
}

// cleanup deletes what newColdResources created (best effort).
func (r *coldResources) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range []string{r.names.Keys, r.names.Counters, r.names.Spend} {
		_, _ = r.ddbClient.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
	}
	_, _ = r.ssmClient.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String(r.param)})
	if r.queueURL != "" {
		_, _ = r.sqsClient.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(r.queueURL)})
	}
}

// env is what Lambda sets for the gateway function (provided.al2023, as
// test/stack lists it) plus the template's environment, with each service's
// endpoint on its emulator and tracing on. Nothing of this process's
// environment reaches the bootstrap.
func (r *coldResources) env(runtimeAPI, task string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LANG=en_US.UTF-8",
		"TZ=:UTC",
		"LAMBDA_TASK_ROOT=" + task,
		"LAMBDA_RUNTIME_DIR=" + task,
		"_HANDLER=bootstrap",
		"AWS_REGION=" + coldRegion,
		"AWS_DEFAULT_REGION=" + coldRegion,
		"AWS_LAMBDA_FUNCTION_NAME=sluice-gateway",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/sluice-gateway",
		"AWS_LAMBDA_LOG_STREAM_NAME=2026/01/01/[$LATEST]" + randHex(16),
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_LAMBDA_RUNTIME_API=" + runtimeAPI,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_SESSION_TOKEN=test",
		"AWS_ENDPOINT_URL_DYNAMODB=" + r.o.ddb,
		"AWS_ENDPOINT_URL_SSM=" + r.o.sqs,
		"AWS_ENDPOINT_URL_SQS=" + r.o.sqs,
		// The template's environment.
		"GATEWAY_CONFIG=config.yaml",
		"GATEWAY_STORE=dynamodb",
		"GATEWAY_MASTER_KEY_PARAMETER=" + r.param,
		"KEYS_TABLE=" + r.names.Keys,
		"COUNTERS_TABLE=" + r.names.Counters,
		"SPEND_TABLE=" + r.names.Spend,
		"SPEND_QUEUE_URL=" + r.queueURL,
		inittrace.EnvVar + "=1",
	}
}

// event is events/gateway-chat.json with the virtual key as its bearer.
func (r *coldResources) event(root string) []byte {
	b, err := os.ReadFile(filepath.Join(root, "events", "gateway-chat.json"))
	if err != nil {
		panic(err) // the repository's own file
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		panic(err)
	}
	ev["headers"].(map[string]any)["authorization"] = "Bearer " + r.secret
	out, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return out
}

// emulatorTimes times, from this process, the calls a cold start makes to
// the emulators and the upstream, each as the bootstrap makes it: on a new
// connection when it is the first call to its endpoint (SSM, the read-ahead's
// BatchGetItem, the upstream, SQS; moto and DynamoDB Local answer a new
// connection slower), else on a warm one (GetItem, UpdateItem). The median
// of 20 after 3 unmeasured.
func (r *coldResources) emulatorTimes(ctx context.Context, mockURL string) (map[string]time.Duration, error) {
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	freshDDB := dynamodb.NewFromConfig(r.cfg, func(opt *dynamodb.Options) {
		opt.BaseEndpoint = aws.String(r.o.ddb)
		opt.DisableValidateResponseChecksum = true
		opt.HTTPClient = fresh
	})
	cool := ddbcooldown.New(freshDDB, r.names.Counters, ddbcooldown.Options{})
	lim := ddblimits.New(r.ddbClient, r.names.Counters, ddblimits.Options{HoldsTable: r.names.Spend})
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	calls := map[string]func() error{
		"ssm": func() error {
			_, err := r.ssmClient.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(r.param), WithDecryption: aws.Bool(true)},
				func(o *ssm.Options) { o.HTTPClient = fresh })
			return err
		},
		"GetItem": func() error {
			_, err := r.ddbClient.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.names.Keys),
				Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "key#" + r.hash}}, ConsistentRead: aws.Bool(true)})
			return err
		},
		"UpdateItem": func() error { // the admission's own call: one scope, one conditional UpdateItem
			_, err := lim.Admit(ctx, limits.AdmitRequest{Now: time.Now(), Scopes: []limits.Scope{{Kind: limits.KindKey, ID: "emulator-" + r.hash[:8], RPM: 1 << 30}}})
			return err
		},
		"BatchGetItem": func() error { // the router's cooldown read
			_, err := cool.CoolingDown(ctx, []string{"emulator-" + r.hash[:8]}, time.Now())
			return err
		},
		"SendMessageBatch": func() error {
			_, err := r.sqsClient.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(r.queueURL),
				Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String(strings.Repeat("x", 600))}}},
				func(o *sqs.Options) { o.HTTPClient = fresh })
			return err
		},
		"upstream": func() error {
			resp, err := fresh.Post(mockURL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				return err
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return err
		},
	}
	out := map[string]time.Duration{}
	for name, call := range calls {
		var ds []time.Duration
		for i := 0; i < 23; i++ {
			start := time.Now()
			if err := call(); err != nil {
				return nil, fmt.Errorf("emulator time of %s: %w", name, err)
			}
			if i >= 3 {
				ds = append(ds, time.Since(start))
			}
		}
		out[name] = medianDur(ds)
	}
	return out, nil
}

// coldRuntimeAPI is a Lambda Runtime API (/2018-06-01/runtime/...) serving
// one function URL invocation per cold start and timing it.
type coldRuntimeAPI struct {
	addr  string
	srv   *http.Server
	event []byte

	mu  sync.Mutex
	cur *coldRun
	seq int
}

// coldRun is one cold start's instants (Unix ns on this machine's clock)
// and what the bootstrap traced.
type coldRun struct {
	exec, next1, respStart, respEnd int64
	next2                           int64
	cpuTotal                        int64 // the bootstrap's CPU time (user + system) until killed
	status                          int
	body                            string
	failure                         string
	trace                           map[string][]int64
	reqID                           string
	events                          chan string // "next1", "resp", "next2", "error"
}

func newRuntimeAPI(event []byte) (*coldRuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	api := &coldRuntimeAPI{addr: ln.Addr().String(), event: event}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", api.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", api.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", api.failed)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", api.failed)
	api.srv = &http.Server{Handler: mux}
	go api.srv.Serve(ln)
	return api, nil
}

func (api *coldRuntimeAPI) close() { api.srv.Close() }

func (api *coldRuntimeAPI) run() *coldRun {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.cur
}

func (api *coldRuntimeAPI) next(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixNano()
	run := api.run()
	if run == nil {
		http.Error(w, "no cold start in progress", http.StatusInternalServerError)
		return
	}
	if run.next1 != 0 { // the invocation is over: the instance would freeze here
		run.next2 = now
		run.events <- "next2"
		<-r.Context().Done()
		return
	}
	run.next1 = now
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", run.reqID)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(5*time.Minute).UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:sluice-gateway")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(api.event)
	run.events <- "next1"
}

func (api *coldRuntimeAPI) response(w http.ResponseWriter, r *http.Request) {
	start := time.Now().UnixNano()
	run := api.run()
	if run == nil || r.PathValue("id") != run.reqID {
		http.Error(w, "unknown invocation", http.StatusBadRequest)
		return
	}
	b, err := io.ReadAll(r.Body)
	end := time.Now().UnixNano()
	run.respStart, run.respEnd = start, end
	if err != nil {
		run.failure = "reading the response: " + err.Error()
	}
	// The streamed response: a JSON prelude, 8 NUL bytes, the body.
	prelude, body, ok := bytes.Cut(b, make([]byte, 8))
	if !ok {
		run.failure = fmt.Sprintf("response without its prelude: %.200q", b)
	} else {
		var p struct {
			StatusCode int `json:"statusCode"`
		}
		if err := json.Unmarshal(prelude, &p); err != nil {
			run.failure = fmt.Sprintf("response prelude %q: %v", prelude, err)
		}
		run.status, run.body = p.StatusCode, string(body)
	}
	w.WriteHeader(http.StatusAccepted)
	run.events <- "resp"
}

func (api *coldRuntimeAPI) failed(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	if run := api.run(); run != nil {
		run.failure = r.URL.Path + ": " + string(b)
		run.events <- "error"
	}
	w.WriteHeader(http.StatusAccepted)
}

// coldStart execs the bootstrap, serves it one invocation and waits until
// it asks for the next one (its spend is flushed by then), then kills it.
func (api *coldRuntimeAPI) coldStart(ctx context.Context, bootstrap, dir string, env []string, logPath string) (coldRun, error) {
	api.mu.Lock()
	api.seq++
	run := &coldRun{reqID: fmt.Sprintf("coldstart-%d-%s", api.seq, randHex(4)), events: make(chan string, 8)}
	api.cur = run
	api.mu.Unlock()
	defer func() { api.mu.Lock(); api.cur = nil; api.mu.Unlock() }()

	logf, err := os.Create(logPath)
	if err != nil {
		return coldRun{}, err
	}
	defer logf.Close()
	// A file, not a pipe: the bootstrap's writes are in it when they return.
	cmd := exec.Command(bootstrap)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = logf, logf
	run.exec = time.Now().UnixNano()
	if err := cmd.Start(); err != nil {
		return coldRun{}, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()

	timeout := time.After(30 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-run.events:
			switch ev {
			case "error":
				return coldRun{}, fmt.Errorf("the bootstrap reported %s (log %s)", run.failure, logPath)
			case "next2":
				done = true
			}
		case <-exited:
			return coldRun{}, fmt.Errorf("the bootstrap exited (%s); log %s:\n%s", cmd.ProcessState, logPath, readFile(logPath))
		case <-timeout:
			return coldRun{}, fmt.Errorf("no second `next` within 30s; log %s:\n%s", logPath, readFile(logPath))
		case <-ctx.Done():
			return coldRun{}, ctx.Err()
		}
	}
	_ = cmd.Process.Kill() // frozen, then gone: its CPU time is final
	<-exited
	if ps := cmd.ProcessState; ps != nil {
		run.cpuTotal = int64(ps.UserTime() + ps.SystemTime())
	}
	if run.failure != "" {
		return coldRun{}, fmt.Errorf("%s (log %s)", run.failure, logPath)
	}
	if run.status != http.StatusOK || !strings.Contains(run.body, `"choices"`) {
		return coldRun{}, fmt.Errorf("the first response is %d %.300s, want 200 with a completion (log %s)", run.status, run.body, logPath)
	}
	// The trace line is written before the second `next`.
	for _, line := range strings.Split(readFile(logPath), "\n") {
		if rest, ok := strings.CutPrefix(line, inittrace.Prefix); ok {
			if err := json.Unmarshal([]byte(rest), &run.trace); err != nil {
				return coldRun{}, fmt.Errorf("trace line %q: %w", line, err)
			}
		}
	}
	// No trace line: a bootstrap without inittrace (an old baseline); its
	// phases print as "-".
	return *run, nil
}

// coldSummary prints the median of each phase over the runs, on the
// bootstrap's timeline from exec, then the emulators' times and the
// gateway's own time.
func coldSummary(w io.Writer, runs []coldRun, emu map[string]time.Duration) {
	ms := func(d float64) string { return strconv.FormatFloat(d/1e6, 'f', 2, 64) }
	// at returns an instant of the trace relative to exec (ns), or -1.
	at := func(r coldRun, name string, i int) float64 {
		v, ok := r.trace[name]
		if !ok || len(v) <= i {
			return -1
		}
		return float64(v[i] - r.exec)
	}
	cpu := func(r coldRun, name string) float64 {
		v, ok := r.trace["cpu."+name]
		if !ok || len(v) != 1 {
			return -1
		}
		return float64(v[0])
	}
	span := func(r coldRun, name string) float64 {
		v, ok := r.trace[name]
		if !ok || len(v) < 2 {
			return -1
		}
		return float64(v[1] - v[0])
	}
	type row struct {
		label string
		f     func(coldRun) float64
		note  string
	}
	rows := []row{
		{"exec -> main()", func(r coldRun) float64 { return at(r, "main", 0) }, "Go runtime and package init"},
		{"AWS configuration", func(r coldRun) float64 { return span(r, "aws_config") }, "awsconf.Load (the environment only)"},
		{"SSM master key", func(r coldRun) float64 { return span(r, "ssm") }, "GetParameter, from its start to the key in hand"},
		{"  init waited for SSM, read-ahead", func(r coldRun) float64 {
			if d := span(r, "init_wait"); d >= 0 {
				return d
			}
			return span(r, "ssm")
		}, "the part nothing else overlapped"},
		{"build", func(r coldRun) float64 { return span(r, "build") }, "app.Build: config, prices, stores, router, handler"},
		{"runtime start -> first next", func(r coldRun) float64 {
			if t := at(r, "lambda_start", 0); t >= 0 {
				return float64(r.next1-r.exec) - t
			}
			return -1
		}, "aws-lambda-go's start, its first GET"},
		{"exec -> first next", func(r coldRun) float64 { return float64(r.next1 - r.exec) }, "init done, Runtime API asked for the event"},
		{"next -> handler", func(r coldRun) float64 { return at(r, "request", 0) - float64(r.next1-r.exec) }, "event decoded into an http.Request"},
		{"key read (GetItem)", func(r coldRun) float64 { return span(r, "aws:DynamoDB_20120810.GetItem") }, "first DynamoDB call: connection, signing, the call"},
		{"cooldowns (BatchGetItem)", func(r coldRun) float64 { return span(r, "aws:DynamoDB_20120810.BatchGetItem") }, "the router's read of the deployments' cooldowns"},
		{"  in the request", func(r coldRun) float64 { return inRequest(r, "aws:DynamoDB_20120810.BatchGetItem") }, "0 when init read them ahead"},
		{"first admission (UpdateItem)", func(r coldRun) float64 { return span(r, "aws:DynamoDB_20120810.UpdateItem") }, "the key's rpm counter"},
		{"upstream", func(r coldRun) float64 { return span(r, "upstream") }, "the mock's answer, headers in"},
		{"handler -> response end", func(r coldRun) float64 { return float64(r.respEnd-r.exec) - at(r, "request", 0) }, "whole request in the gateway, to the last byte at the Runtime API"},
		{"exec -> first response start", func(r coldRun) float64 { return float64(r.respStart - r.exec) }, "the response's POST reached the Runtime API (status and headers)"},
		{"exec -> first response end", func(r coldRun) float64 { return float64(r.respEnd - r.exec) }, "TOTAL: the client has the whole response"},
		{"spend flush (SendMessageBatch)", func(r coldRun) float64 { return span(r, "spend_flush") }, "after the response, before the next `next`"},
		{"exec -> second next", func(r coldRun) float64 { return float64(r.next2 - r.exec) }, "the invocation ends"},
		{"CPU time: exec -> main()", func(r coldRun) float64 { return cpu(r, "main") }, "the bootstrap's user + system time, every thread"},
		{"CPU time: exec -> first next", func(r coldRun) float64 { return cpu(r, "lambda_start") }, ""},
		{"CPU time: exec -> response end", func(r coldRun) float64 { return cpu(r, "response_sent") }, "the gateway's own work, whatever the load on the machine"},
		{"CPU time: whole process", func(r coldRun) float64 { return float64(r.cpuTotal) }, "until killed after the second next"},
	}
	fmt.Fprintf(w, "%-32s %9s %9s %9s   %s\n", "phase", "p50 ms", "min ms", "max ms", "")
	for _, rw := range rows {
		var v []float64
		for _, r := range runs {
			if x := rw.f(r); x >= 0 {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			fmt.Fprintf(w, "%-32s %9s %9s %9s   %s\n", rw.label, "-", "-", "-", rw.note)
			continue
		}
		sort.Float64s(v)
		fmt.Fprintf(w, "%-32s %9s %9s %9s   %s\n", rw.label, ms(median(v)), ms(v[0]), ms(v[len(v)-1]), rw.note)
	}
	fmt.Fprintf(w, "\nemulators' own answer (from the bench; SSM, BatchGetItem, upstream, SQS on a new connection):")
	for _, k := range []string{"ssm", "GetItem", "BatchGetItem", "UpdateItem", "upstream", "SendMessageBatch"} {
		fmt.Fprintf(w, " %s %s ms;", k, ms(float64(emu[k])))
	}
	fmt.Fprintln(w)
	// The gateway's own time: the total minus what the path to the first
	// response waited on the emulators and the upstream: init's wait for
	// the calls it made ahead (SSM; the read-ahead, made beside it), and
	// each call made during the request, each at most the emulator's own
	// answer time (what the gateway added to a call stays the gateway's).
	var own, totals []float64
	for _, r := range runs {
		total := float64(r.respEnd - r.exec)
		wait := span(r, "init_wait")
		if wait < 0 {
			wait = span(r, "ssm")
		}
		ahead := emu["ssm"]
		if _, ok := r.trace["read_ahead"]; ok {
			ahead = max(ahead, emu["BatchGetItem"])
		}
		sub := min(max(wait, 0), float64(ahead))
		for name := range r.trace {
			op, ok := strings.CutPrefix(name, "aws:DynamoDB_20120810.")
			if ok {
				sub += min(max(inRequest(r, name), 0), float64(emu[op]))
			}
		}
		sub += min(max(span(r, "upstream"), 0), float64(emu["upstream"]))
		own = append(own, total-sub)
		totals = append(totals, total)
	}
	fmt.Fprintf(w, "gateway's own time, exec -> first response end: p50 %s ms (total %s ms minus the emulators' and upstream's answer times on the path)\n",
		ms(median(own)), ms(median(totals)))
	fmt.Fprintln(w, "goal (issue 12): <= 20 ms")
}

// inRequest is the span of a traced call if it started once the first
// request was in the handler, else 0 (made ahead, in init); -1 if absent.
func inRequest(r coldRun, name string) float64 {
	v, ok := r.trace[name]
	if !ok || len(v) < 2 {
		return -1
	}
	if req, ok := r.trace["request"]; !ok || v[0] < req[0] {
		return 0
	}
	return float64(v[1] - v[0])
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
