// Package shutdown_test sends SIGTERM to the real gateway binary (local
// mode) while streams are in flight, and counts spend events: every
// answered request's event must end recorded (the spend table, or the SQS
// queue) or logged whole as "spend event not recorded", never dropped
// without a line. Each test runs streams that end within the drain
// timeout and streams that do not (cut at the drain deadline).
//
//	go test ./test/shutdown/   # needs DynamoDB Local and moto_server (./test/run.sh starts both)
package shutdown_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/spend"
	"github.com/sluice-gw/sluice/shared/spend/ddbspend"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) {
	os.Exit(sqslocal.With(func() int { return ddblocal.Main(m) }))
}

// The streams of each test: slow ones end (3 s) within the drain timeout
// (4 s, set through its environment variable), endless ones are cut.
const (
	slowStreams    = 6
	endlessStreams = 3
	drainTimeout   = "4s"
)

// env is a local gateway's environment on the DynamoDB tables names, with
// the DynamoDB endpoint at ddbURL.
func env(t *testing.T, names tables.Names, ddbURL, flush string) []string {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(config(upstream(t).URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"GATEWAY_CONFIG=" + cfg, "GATEWAY_MASTER_KEY=" + masterKey, "GATEWAY_STORE=dynamodb", "METRICS=off",
		"KEYS_TABLE=" + names.Keys, "COUNTERS_TABLE=" + names.Counters, "SPEND_TABLE=" + names.Spend,
		"AWS_ENDPOINT_URL_DYNAMODB=" + ddbURL, "AWS_REGION=" + ddblocal.Region,
		"AWS_ACCESS_KEY_ID=dummy", "AWS_SECRET_ACCESS_KEY=dummy", "AWS_SESSION_TOKEN=",
		"GATEWAY_DRAIN_TIMEOUT=" + drainTimeout, "GATEWAY_SPEND_FLUSH_TIMEOUT=" + flush,
	}
}

// recorded returns the request ids of the spend logs in the table names.
func recorded(t *testing.T, names tables.Names) map[string]bool {
	t.Helper()
	client := ddb.NewClient(ddblocal.Config(t), ddb.ClientOptions{Emulator: true})
	st := ddbspend.New(client, names.Spend, names.Keys, ddbkeys.New(client, names.Keys, ddbkeys.Options{}), ddbspend.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now()
	evs, err := st.Logs(ctx, spend.LogQuery{From: now.Add(-time.Hour), To: now.Add(time.Hour), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range evs {
		ids[e.RequestID] = true
	}
	return ids
}

// accounted fails the test for each answered id in none of the sets.
func accounted(t *testing.T, g *gateway, answered []string, want int, sets map[string]map[string]bool) {
	t.Helper()
	if len(answered) != want {
		t.Errorf("%d requests answered, want %d", len(answered), want)
	}
	var missing []string
	for _, id := range answered {
		found := false
		for _, s := range sets {
			found = found || s[id]
		}
		if !found {
			missing = append(missing, id)
		}
	}
	counts := map[string]int{}
	for name, s := range sets {
		for _, id := range answered {
			if s[id] {
				counts[name]++
			}
		}
	}
	t.Logf("%d answered; of them %v", len(answered), counts)
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d of %d answered requests have no spend event recorded nor logged: %v\n%s", len(missing), len(answered), missing, g.output())
	}
}

func ddbEndpoint(t *testing.T) string {
	t.Helper()
	u := os.Getenv(ddblocal.EndpointEnv)
	if u == "" {
		t.Fatal("no DynamoDB endpoint")
	}
	return u
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestSIGTERMStore: the in-process spend queue into the store (DynamoDB
// Local): streams that end during the drain and streams cut at its
// deadline all have a spend log once the process has exited.
func TestSIGTERMStore(t *testing.T) {
	names := ddblocal.Tables(t)
	g := startGateway(t, env(t, names, ddbEndpoint(t), "20s"))
	answered, wait := streams(t, g, slowStreams, endlessStreams)
	g.term(t)
	wait()
	accounted(t, g, answered, slowStreams+endlessStreams, map[string]map[string]bool{"recorded": recorded(t, names)})
}

// TestSIGTERMSlowSQS: spend events to SQS (moto) through a proxy that
// answers each call 6 s late, longer than the drain and the 1 s flush
// deadline together, with a burst of 60 completions (more than the
// publisher's four senders carry at once) answered before SIGTERM: every
// event is in the queue, recorded by the fallback, or logged whole.
func TestSIGTERMSlowSQS(t *testing.T) {
	sqslocal.Require(t)
	names := ddblocal.Tables(t)
	q := sqslocal.NewQueues(t, 30*time.Second, 5)
	p := startProxy(t, hostOf(t, sqslocal.Endpoint()), 6*time.Second)
	e := append(env(t, names, ddbEndpoint(t), "1s"), "SPEND_QUEUE_URL="+q.URL, sqslocal.EndpointEnv+"=http://"+p.addr)
	g := startGateway(t, e)
	answered, wait := streams(t, g, slowStreams, endlessStreams)
	answered = append(answered, burst(t, g, 60)...)
	g.term(t)
	wait()
	queued := map[string]bool{}
	for _, body := range sqslocal.Drain(t, q.URL) {
		ev, err := spend.Decode([]byte(body))
		if err != nil {
			t.Fatalf("queued message: %v", err)
		}
		queued[ev.RequestID] = true
	}
	accounted(t, g, answered, slowStreams+endlessStreams+60, map[string]map[string]bool{"queued": queued, "recorded": recorded(t, names), "logged": g.logged(t)})
}

// TestSIGTERMStoreDown: the store stops answering (a proxy in front of
// DynamoDB Local swallows every call) while the streams run: the events
// being retried when the flush deadline passes are logged whole.
func TestSIGTERMStoreDown(t *testing.T) {
	names := ddblocal.Tables(t)
	p := startProxy(t, hostOf(t, ddbEndpoint(t)), 0)
	g := startGateway(t, env(t, names, "http://"+p.addr, "2s"))
	answered, wait := streams(t, g, slowStreams, endlessStreams)
	p.down.Store(true)
	g.term(t)
	wait()
	logged := g.logged(t)
	accounted(t, g, answered, slowStreams+endlessStreams, map[string]map[string]bool{"logged": logged, "recorded": recorded(t, names)})
	if len(logged) == 0 {
		t.Errorf("no event logged with the store down:\n%s", g.output())
	}
}
