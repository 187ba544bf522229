package app

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAWSHTTPClientResumesTLS: the AWS clients' HTTP client resumes the TLS
// session of a host it met when it opens a new connection to it.
func TestAWSHTTPClientResumesTLS(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer s.Close()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	c := awsHTTPClient().WithTransportOptions(func(t *http.Transport) {
		t.TLSClientConfig.RootCAs = pool
		t.DisableKeepAlives = true // a new connection for each request
	})
	for i, want := range []bool{false, true} {
		req, _ := http.NewRequest(http.MethodPost, s.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.TLS == nil || resp.TLS.DidResume != want {
			t.Errorf("connection %d: resumed = %v, want %v", i, resp.TLS != nil && resp.TLS.DidResume, want)
		}
		if resp.TLS != nil && resp.TLS.Version < tls.VersionTLS12 {
			t.Errorf("TLS version %x", resp.TLS.Version)
		}
	}
}
