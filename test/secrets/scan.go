// Package secrets checks that no secret leaves the gateway: it runs the
// gateway the ways the other suites do (in process with the memory store
// and DynamoDB Local, behind local mode's HTTP server and behind the Lambda
// adapters, and as the built binary), with distinctive secrets everywhere
// (master key, provider keys, AWS credentials, virtual keys), drives it
// through successes, streams, hostile upstreams that echo the credentials
// they receive into their errors and broken streams, bad keys and bad
// bodies, and the admin API, and searches every response byte and every
// log line for the secrets.
package secrets

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// window is the length of the secret substrings searched for: any 12
// consecutive characters of a secret count as a leak (a cut or partly
// masked secret too). LiteLLM's display form "sk-..." plus the last 4
// characters, which the admin API returns by design, is shorter.
const window = 12

// Secret is one secret the gateway must never show.
type Secret struct {
	Name  string
	Value string
	// Origin names the one exchange allowed to carry it: the admin
	// response that hands a new virtual key to its creator ("" none).
	Origin string
}

// Exchange is one thing the gateway said: a response (status, headers,
// body) or a stream of log lines.
type Exchange struct {
	Name string
	Data []byte
}

// Leak is a secret found where it must not be.
type Leak struct {
	Secret   string // the secret's name
	Exchange string
	Context  string // the text around it, the secret masked
}

func (l Leak) String() string {
	return fmt.Sprintf("%s leaked in %s: %s", l.Secret, l.Exchange, l.Context)
}

// Recorder collects secrets and exchanges; safe for concurrent use.
type Recorder struct {
	mu        sync.Mutex
	secrets   []Secret
	exchanges []Exchange
}

// Secret registers a secret (origin: the exchange allowed to carry it).
func (r *Recorder) Secret(name, value, origin string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, Secret{Name: name, Value: value, Origin: origin})
}

// Record adds an exchange.
func (r *Recorder) Record(name string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, Exchange{Name: name, Data: bytes.Clone(data)})
}

// Len is the number of exchanges recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.exchanges)
}

// dump is every exchange, each after a "=== name" line.
func (r *Recorder) dump() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b bytes.Buffer
	for _, e := range r.exchanges {
		b.WriteString("=== " + e.Name + "\n")
		b.Write(e.Data)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// Scan returns every leak: a secret's window, or the whole secret in
// base64 or URL encoding, in an exchange other than its origin.
func (r *Recorder) Scan() []Leak {
	r.mu.Lock()
	defer r.mu.Unlock()
	var leaks []Leak
	for _, s := range r.secrets {
		needles := needlesOf(s.Value)
		for _, e := range r.exchanges {
			if e.Name == s.Origin {
				continue
			}
			for _, n := range needles {
				if i := bytes.Index(e.Data, []byte(n)); i >= 0 {
					leaks = append(leaks, Leak{Secret: s.Name, Exchange: e.Name, Context: around(e.Data, i, len(n), r.secrets)})
					break
				}
			}
		}
	}
	return leaks
}

// needlesOf is what betrays a secret: each window of it, and the whole
// secret base64- or URL-encoded.
func needlesOf(v string) []string {
	var n []string
	if len(v) <= window {
		n = append(n, v)
	} else {
		for i := 0; i+window <= len(v); i++ {
			n = append(n, v[i:i+window])
		}
	}
	n = append(n, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)))
	if q := url.QueryEscape(v); q != v {
		n = append(n, q)
	}
	return n
}

// around is the text near a hit, every secret masked, so that a failing
// test does not print the secrets either.
func around(data []byte, i, n int, secrets []Secret) string {
	lo, hi := max(0, i-120), min(len(data), i+n+120)
	s := string(data[lo:hi])
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec.Value, "<"+sec.Name+">")
	}
	for _, sec := range secrets {
		for _, needle := range needlesOf(sec.Value) {
			s = strings.ReplaceAll(s, needle, "<"+sec.Name+">")
		}
	}
	return fmt.Sprintf("%q", s)
}
