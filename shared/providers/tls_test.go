package providers_test

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluice-gw/sluice/shared/h1"
	"github.com/sluice-gw/sluice/shared/providers"
)

// TestTLSSessionResumed: a new connection to an https upstream already met
// resumes the TLS session (no certificate chain, no full handshake), and
// still negotiates HTTP/2.
func TestTLSSessionResumed(t *testing.T) {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()

	c := providers.NewHTTPClient()
	tr := c.Transport.(*h1.Transport).Fallback.(*http.Transport)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	tr.TLSClientConfig.RootCAs = pool

	for i, wantResumed := range []bool{false, true, true} {
		c.CloseIdleConnections() // a new connection each time
		resp, err := c.Get(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.TLS == nil || resp.TLS.DidResume != wantResumed {
			t.Errorf("connection %d: resumed = %v, want %v", i, resp.TLS != nil && resp.TLS.DidResume, wantResumed)
		}
		if resp.ProtoMajor != 2 {
			t.Errorf("connection %d: %s, want HTTP/2", i, resp.Proto)
		}
	}
}
