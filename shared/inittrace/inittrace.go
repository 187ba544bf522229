// Package inittrace times a cold start: the phases of a function's init and
// of its first request, as wall-clock instants, written as one JSON line.
//
// It is opt-in: with SLUICE_TRACE_INIT=1 in the environment, Mark and Span
// record the first occurrence of each name and Emit writes them once;
// otherwise every call returns at once and the callers install no tracing
// wrappers at all (they check On once, at start). The cold-start benchmark
// (go run ./test/bench coldstart) reads the line and puts the instants on
// its own clock: both run on one machine, so wall-clock instants compare.
package inittrace

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvVar turns tracing on when it is "1".
const EnvVar = "SLUICE_TRACE_INIT"

// Prefix starts the line Emit writes, so that a reader finds it among
// the function's logs.
const Prefix = "SLUICE_INIT_TRACE "

var on = os.Getenv(EnvVar) == "1"

// On reports whether tracing is on.
func On() bool { return on }

var (
	mu      sync.Mutex
	events  []event
	seen    = map[string]bool{}
	emitted bool
)

// event is a named instant, or a span from start to end.
type event struct {
	name       string
	start, end int64 // Unix nanoseconds; end 0 for an instant
	cpu        int64 // an instant's process CPU time (user + system, ns); -1 unknown
}

// Mark records the instant now under name, the first time only, with the
// CPU time the process has used so far (every thread, the runtime's too).
func Mark(name string) {
	if !on {
		return
	}
	add(event{name: name, start: time.Now().UnixNano(), cpu: cpuTime()})
}

// Span starts a span named name and returns the function that ends it; only
// the first span of each name is kept.
func Span(name string) (end func()) {
	if !on {
		return func() {}
	}
	start := time.Now().UnixNano()
	return func() { add(event{name: name, start: start, end: time.Now().UnixNano(), cpu: -1}) }
}

func add(e event) {
	mu.Lock()
	defer mu.Unlock()
	if emitted || seen[e.name] {
		return
	}
	seen[e.name] = true
	events = append(events, e)
}

// Emit writes the events recorded so far, once, as one line: Prefix, then
// a JSON object mapping each name to [start] or [start, end] in Unix
// nanoseconds, and "cpu." + name to [ns] for each instant whose process CPU
// time is known. Later calls do nothing.
func Emit(w io.Writer) {
	if !on {
		return
	}
	mu.Lock()
	if emitted {
		mu.Unlock()
		return
	}
	emitted = true
	b := []byte(Prefix + "{")
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, e.name)
		b = append(b, ":["...)
		b = strconv.AppendInt(b, e.start, 10)
		if e.end != 0 {
			b = append(b, ',')
			b = strconv.AppendInt(b, e.end, 10)
		}
		b = append(b, ']')
		if e.end == 0 && e.cpu >= 0 {
			b = append(b, ',')
			b = strconv.AppendQuote(b, "cpu."+e.name)
			b = append(b, ":["...)
			b = strconv.AppendInt(b, e.cpu, 10)
			b = append(b, ']')
		}
	}
	mu.Unlock()
	b = append(b, "}\n"...)
	_, _ = w.Write(b)
}

// Transport wraps rt so that the first round trip of each name (given by
// name from the request) is recorded as a span; rt nil is
// http.DefaultTransport. Install it only when On.
func Transport(rt http.RoundTripper, name func(*http.Request) string) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return traced{rt, name}
}

type traced struct {
	rt   http.RoundTripper
	name func(*http.Request) string
}

func (t traced) RoundTrip(r *http.Request) (*http.Response, error) {
	end := Span(t.name(r))
	resp, err := t.rt.RoundTrip(r)
	end()
	return resp, err
}

// Doer is what the AWS SDK calls to send a request (aws.HTTPClient).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// AWSClient returns an AWS SDK HTTP client (aws.HTTPClient) that records
// the first call of each operation as a span named "aws:" + its
// X-Amz-Target header (JSON protocols: "aws:DynamoDB_20120810.GetItem"),
// else "aws:" + host, ending when the response's headers are in. Each
// service (the target's prefix, else the host) gets its own client from
// newClient, so that services do not share connections, as they do not
// when every SDK client builds its own. Install it only when On.
func AWSClient(newClient func() Doer) Doer {
	return &awsClients{new: newClient, byService: map[string]Doer{}}
}

type awsClients struct {
	new       func() Doer
	mu        sync.Mutex
	byService map[string]Doer
}

func (a *awsClients) Do(r *http.Request) (*http.Response, error) {
	name := r.Header.Get("X-Amz-Target")
	service, _, _ := strings.Cut(name, ".")
	if name == "" {
		name, service = r.URL.Host, r.URL.Host
	}
	a.mu.Lock()
	c, ok := a.byService[service]
	if !ok {
		c = a.new()
		a.byService[service] = c
	}
	a.mu.Unlock()
	end := Span("aws:" + name)
	resp, err := c.Do(r)
	end()
	return resp, err
}
