package ssmparam_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sluice-gw/sluice/shared/awsconf"
	"github.com/sluice-gw/sluice/shared/ssmparam"
)

type fakeSSM struct {
	params  map[string]string
	err     error
	decrypt bool
	hadDL   bool
}

func (f *fakeSSM) GetParameter(ctx context.Context, name string, decrypt bool) (string, error) {
	f.decrypt = decrypt
	_, f.hadDL = ctx.Deadline()
	if f.err != nil {
		return "", f.err
	}
	v, ok := f.params[name]
	if !ok {
		return "", errors.New("ParameterNotFound (HTTP 400): not found")
	}
	return v, nil
}

func TestGet(t *testing.T) {
	tests := []struct {
		name    string
		param   string
		fake    *fakeSSM
		want    string
		wantErr string
	}{
		{"secure string", "/sluice/master-key", &fakeSSM{params: map[string]string{"/sluice/master-key": "sk-1"}}, "sk-1", ""},
		{"missing", "/nope", &fakeSSM{params: map[string]string{}}, "", "ssm parameter /nope"},
		{"empty value", "/empty", &fakeSSM{params: map[string]string{"/empty": ""}}, "", "empty value"},
		{"empty name", "", &fakeSSM{}, "", "empty name"},
		{"api error", "/x", &fakeSSM{err: errors.New("throttled")}, "", "throttled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ssmparam.Get(context.Background(), tt.fake, tt.param)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Get = %q, %v; want %q", got, err, tt.want)
			}
			if !tt.fake.decrypt {
				t.Error("GetParameter without WithDecryption")
			}
			if !tt.fake.hadDL {
				t.Error("GetParameter called without a deadline")
			}
		})
	}
}

// fakeEndpoint is SSM's HTTPS endpoint: it checks the request as SSM would
// see it and answers with answer(n), n counting requests from 1.
func fakeEndpoint(t *testing.T, answer func(n int, w http.ResponseWriter, name string)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1))
		if r.Method != http.MethodPost || r.URL.Path != "/" {
			t.Errorf("%s %s, want POST /", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("X-Amz-Target"); got != "AmazonSSM.GetParameter" {
			t.Errorf("X-Amz-Target %q", got)
		}
		if got := r.Header.Get("Content-Type"); got != "application/x-amz-json-1.1" {
			t.Errorf("Content-Type %q", got)
		}
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/eu-west-3/ssm/aws4_request") ||
			!strings.Contains(auth, "x-amz-target") || !strings.Contains(auth, "Signature=") {
			t.Errorf("Authorization %q: want a SigV4 signature for ssm in eu-west-3 covering X-Amz-Target", auth)
		}
		if r.Header.Get("X-Amz-Security-Token") != "TOKEN" || r.Header.Get("X-Amz-Date") == "" {
			t.Errorf("session token %q, date %q", r.Header.Get("X-Amz-Security-Token"), r.Header.Get("X-Amz-Date"))
		}
		var in struct {
			Name           string
			WithDecryption *bool
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &in); err != nil || in.WithDecryption == nil || !*in.WithDecryption {
			t.Errorf("body %s: want Name and WithDecryption true", b)
		}
		answer(i, w, in.Name)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// withEnv is cfg with the sources awsconf.FromEnv reads from env (the
// endpoint variables), as the functions load it.
func withEnv(t *testing.T, cfg aws.Config, env map[string]string) aws.Config {
	t.Helper()
	loaded, err := awsconf.FromEnv(func(k string) string { return env[k] }, awsconf.Options{Credentials: cfg.Credentials})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConfigSources = loaded.ConfigSources
	return cfg
}

func client(t *testing.T, endpoint string) *ssmparam.Client {
	cfg := aws.Config{Region: "eu-west-3", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRET", "TOKEN")}
	return ssmparam.NewClient(withEnv(t, cfg, map[string]string{"AWS_ENDPOINT_URL_SSM": endpoint}))
}

func TestClientReadsTheParameter(t *testing.T) {
	for _, param := range []string{"/sluice/master-key", `/odd"name\with<escapes>`} {
		srv, _ := fakeEndpoint(t, func(_ int, w http.ResponseWriter, name string) {
			if name != param {
				t.Errorf("Name %q, want %q", name, param)
			}
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			io.WriteString(w, `{"Parameter":{"Name":"x","Type":"SecureString","Value":"sk-from-ssm\"\u00e9","Version":3}}`)
		})
		got, err := ssmparam.Get(context.Background(), client(t, srv.URL+"/"), param)
		if err != nil || got != "sk-from-ssm\"é" {
			t.Fatalf("Get = %q, %v", got, err)
		}
	}
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		header   string
		body     string
		wantErr  string
		attempts int32
	}{
		{"not found is not retried", 400, "", `{"__type":"com.amazonaws.ssm#ParameterNotFound","message":"Parameter /x not found."}`, "ParameterNotFound (HTTP 400): Parameter /x not found.", 1},
		{"access denied", 400, "AccessDeniedException:http://internal.amazon.com/coral/", `{"Message":"not authorized"}`, "AccessDeniedException (HTTP 400): not authorized", 1},
		{"throttling is retried", 400, "", `{"__type":"ThrottlingException","message":"Rate exceeded"}`, "ThrottlingException", 3},
		{"5xx is retried", 503, "", `upstream unavailable`, "UnknownError (HTTP 503): upstream unavailable", 3},
		{"no value", 200, "", `{"Parameter":{"Name":"/x"}}`, "empty value", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := fakeEndpoint(t, func(_ int, w http.ResponseWriter, _ string) {
				if tt.header != "" {
					w.Header().Set("X-Amzn-ErrorType", tt.header)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			_, err := ssmparam.Get(context.Background(), client(t, srv.URL), "/x")
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if got := n.Load(); got != tt.attempts {
				t.Errorf("%d attempts, want %d", got, tt.attempts)
			}
		})
	}
}

func TestClientRetriesThenSucceeds(t *testing.T) {
	srv, n := fakeEndpoint(t, func(i int, w http.ResponseWriter, _ string) {
		if i == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		io.WriteString(w, `{"Parameter":{"Value":"sk-2"}}`)
	})
	got, err := ssmparam.Get(context.Background(), client(t, srv.URL), "/x")
	if err != nil || got != "sk-2" || n.Load() != 2 {
		t.Fatalf("Get = %q, %v after %d attempts; want sk-2 after 2", got, err, n.Load())
	}
}

func TestEndpoint(t *testing.T) {
	base := "http://base.example"
	tests := []struct {
		name string
		cfg  aws.Config
		env  map[string]string
		want string
	}{
		{"region", aws.Config{Region: "us-east-1"}, nil, "https://ssm.us-east-1.amazonaws.com"},
		{"china", aws.Config{Region: "cn-north-1"}, nil, "https://ssm.cn-north-1.amazonaws.com.cn"},
		{"fips", aws.Config{Region: "us-gov-west-1"}, map[string]string{"AWS_USE_FIPS_ENDPOINT": "true"}, "https://ssm-fips.us-gov-west-1.amazonaws.com"},
		{"dualstack", aws.Config{Region: "eu-west-1"}, map[string]string{"AWS_USE_DUALSTACK_ENDPOINT": "true"}, "https://ssm.eu-west-1.api.aws"},
		{"base endpoint", aws.Config{Region: "us-east-1", BaseEndpoint: &base}, nil, base},
		{"service endpoint first", aws.Config{Region: "us-east-1", BaseEndpoint: &base}, map[string]string{"AWS_ENDPOINT_URL_SSM": "http://ssm.example/"}, "http://ssm.example"},
		{"ignored", aws.Config{Region: "us-east-1"}, map[string]string{"AWS_ENDPOINT_URL_SSM": "http://ssm.example", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, "https://ssm.us-east-1.amazonaws.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			tt.cfg.Credentials = credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRET", "")
			tt.cfg.HTTPClient = doer(func(r *http.Request) (*http.Response, error) {
				got = r.URL.Scheme + "://" + r.URL.Host
				return nil, errors.New("stop")
			})
			c := ssmparam.NewClient(withEnv(t, tt.cfg, tt.env))
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // one attempt, no retry
			_, _ = c.GetParameter(ctx, "/x", true)
			if got != tt.want {
				t.Fatalf("endpoint %q, want %q", got, tt.want)
			}
		})
	}
}

type doer func(*http.Request) (*http.Response, error)

func (d doer) Do(r *http.Request) (*http.Response, error) { return d(r) }
