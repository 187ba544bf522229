package awsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
)

// TestSessionClientResumesTLS: the AWS clients' HTTP client resumes the TLS
// session of a host it met when it opens a new connection to it.
func TestSessionClientResumesTLS(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer s.Close()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	c := sessionClient().WithTransportOptions(func(t *http.Transport) {
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

// TestHasEndpoint: an endpoint override for DynamoDB, general or the
// service's own, is seen in the configuration FromEnv and the SDK's
// LoadDefaultConfig build alike; another service's is not.
func TestHasEndpoint(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, true},
		{map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"}, true},
		{map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:5000"}, false},
	} {
		env := map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}
		for k, v := range c.env {
			env[k] = v
		}
		cfg, err := FromEnv(func(k string) string { return env[k] }, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := HasEndpoint(context.Background(), cfg, "DynamoDB"); got != c.want {
			t.Errorf("FromEnv %v: HasEndpoint = %v, want %v", c.env, got, c.want)
		}
		for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			t.Setenv(k, env[k])
		}
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
		sdk, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := HasEndpoint(context.Background(), sdk, "DynamoDB"); got != c.want {
			t.Errorf("LoadDefaultConfig %v: HasEndpoint = %v, want %v", c.env, got, c.want)
		}
	}
}
