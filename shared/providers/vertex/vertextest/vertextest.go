// Package vertextest is a service account and a fake Google token endpoint
// for tests of Vertex AI deployments: the endpoint verifies each signed
// JWT against the account's public key (RS256), counts the exchanges and
// issues access tokens that a fake Vertex AI checks with Authorized.
package vertextest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Email and KeyID are the service account's client_email and
// private_key_id; Project its project_id.
const (
	Email   = "sluice-test@sluice-test.iam.gserviceaccount.com"
	KeyID   = "0123456789abcdef"
	Project = "sluice-test"
	Scope   = "https://www.googleapis.com/auth/cloud-platform"
)

// Account is a service account whose token endpoint runs in the test.
type Account struct {
	Key  *rsa.PrivateKey
	JSON string // the service account's key file
	PEM  string // its private key, PEM (what must never leak)

	srv       *httptest.Server
	exchanges atomic.Int64
	expiresIn atomic.Int64 // seconds
	fail      atomic.Pointer[failure]
	echo      atomic.Int64 // a status to refuse every assertion with, quoting it

	mu      sync.Mutex
	tokens  map[string]bool // issued and not revoked
	issued  []string
	bad     []string // why assertions were refused
	asserts []string // the assertions received
}

type failure struct {
	status int
	body   string
}

var (
	keyOnce sync.Once
	key     *rsa.PrivateKey
)

// NewAccount returns a service account with a fresh token endpoint (the
// RSA key is made once per test binary).
func NewAccount(t testing.TB) *Account {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		key = k
	})
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	a := &Account{Key: key, tokens: map[string]bool{}}
	a.PEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	a.expiresIn.Store(3600)
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": Project, "private_key_id": KeyID, "private_key": a.PEM,
		"client_email": Email, "client_id": "1234567890", "token_uri": a.TokenURI(),
	})
	a.JSON = string(b)
	return a
}

// TokenURI is the account's token endpoint.
func (a *Account) TokenURI() string { return a.srv.URL + "/token" }

// Exchanges counts the assertions exchanged for a token.
func (a *Account) Exchanges() int64 { return a.exchanges.Load() }

// SetExpiresIn sets the lifetime of the tokens issued from now on.
func (a *Account) SetExpiresIn(s int64) { a.expiresIn.Store(s) }

// Fail makes the endpoint answer status and body (status 0: work again).
func (a *Account) Fail(status int, body string) {
	if status == 0 {
		a.fail.Store(nil)
		return
	}
	a.fail.Store(&failure{status, body})
}

// EchoFailure makes the endpoint refuse every assertion with status, its
// error quoting the assertion (a hostile endpoint; 0: work again).
func (a *Account) EchoFailure(status int) { a.echo.Store(int64(status)) }

// Issued are the access tokens issued so far.
func (a *Account) Issued() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.issued...)
}

// Refused lists why assertions were refused (a bad signature, claim or
// form); a test expects none.
func (a *Account) Refused() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bad...)
}

// Assertions are the signed JWTs received.
func (a *Account) Assertions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asserts...)
}

// Authorized reports whether r carries a bearer token the endpoint issued
// and did not revoke.
func (a *Account) Authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	defer a.mu.Unlock()
	return ok && a.tokens[tok]
}

// RevokeAll makes every token issued so far unauthorized (Vertex then
// answers 401).
func (a *Account) RevokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.tokens)
}

func (a *Account) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	assertion := r.PostForm.Get("assertion")
	a.mu.Lock()
	a.asserts = append(a.asserts, assertion)
	a.mu.Unlock()
	if f := a.fail.Load(); f != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		fmt.Fprint(w, f.body)
		return
	}
	if status := a.echo.Load(); status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(status))
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"Invalid JWT: %s (key %s)"}`, assertion, strings.ReplaceAll(a.PEM, "\n", `\n`))
		return
	}
	if why := a.check(r, assertion); why != "" {
		a.mu.Lock()
		a.bad = append(a.bad, why)
		a.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":%q}`, why)
		return
	}
	a.exchanges.Add(1)
	r32 := make([]byte, 24)
	_, _ = rand.Read(r32)
	tok := "ya29.test-" + base64.RawURLEncoding.EncodeToString(r32)
	a.mu.Lock()
	a.tokens[tok] = true
	a.issued = append(a.issued, tok)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":%q,"expires_in":%d,"token_type":"Bearer"}`, tok, a.expiresIn.Load())
}

// check verifies a JWT bearer grant as Google's endpoint does: the form,
// the RS256 signature against the account's public key, and the claims.
func (a *Account) check(r *http.Request, assertion string) string {
	if r.Method != http.MethodPost || r.URL.Path != "/token" {
		return "not POST /token"
	}
	if g := r.PostForm.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return "grant_type " + g
	}
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "assertion is not a JWS"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "signature encoding"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&a.Key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return "signature does not verify"
	}
	head, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	claims, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	if err1 != nil || err2 != nil {
		return "header or claims encoding"
	}
	h, c := gjson.ParseBytes(head), gjson.ParseBytes(claims)
	now := time.Now().Unix()
	switch {
	case h.Get("alg").Str != "RS256" || h.Get("kid").Str != KeyID:
		return "header " + string(head)
	case c.Get("iss").Str != Email || c.Get("scope").Str != Scope || c.Get("aud").Str != a.TokenURI():
		return "claims " + string(claims)
	case c.Get("iat").Int() > now+60 || c.Get("exp").Int() <= now || c.Get("exp").Int()-c.Get("iat").Int() > 3700:
		return "times " + string(claims)
	}
	return ""
}
