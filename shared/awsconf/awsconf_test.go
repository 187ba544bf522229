package awsconf

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

var keys = map[string]string{"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "SECRET"}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestFromEnvRegion(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		o    Options
		want string
	}{
		{"AWS_REGION", with(keys, "AWS_REGION", "eu-west-1", "AWS_DEFAULT_REGION", "us-west-2"), Options{}, "eu-west-1"},
		{"AWS_DEFAULT_REGION", with(keys, "AWS_DEFAULT_REGION", "us-west-2"), Options{}, "us-west-2"},
		{"option first", with(keys, "AWS_REGION", "eu-west-1"), Options{Region: "ap-south-1"}, "ap-south-1"},
		{"none", keys, Options{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromEnv(env(c.env), c.o)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != c.want {
				t.Errorf("region %q, want %q", cfg.Region, c.want)
			}
		})
	}
}

func TestFromEnvCredentials(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		env  map[string]string
		o    Options
		want aws.Credentials
	}{
		{"keys and session token", with(keys, "AWS_SESSION_TOKEN", "TOKEN", "AWS_ACCOUNT_ID", "123456789012"), Options{},
			aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET", SessionToken: "TOKEN", AccountID: "123456789012"}},
		{"old names", map[string]string{"AWS_ACCESS_KEY": "AKID2", "AWS_SECRET_KEY": "SECRET2"}, Options{},
			aws.Credentials{AccessKeyID: "AKID2", SecretAccessKey: "SECRET2"}},
		{"option first, environment not needed", map[string]string{},
			Options{Credentials: credentials.NewStaticCredentialsProvider("OPT", "OPTSECRET", "")},
			aws.Credentials{AccessKeyID: "OPT", SecretAccessKey: "OPTSECRET"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromEnv(env(c.env), c.o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.Credentials.Retrieve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.AccessKeyID != c.want.AccessKeyID || got.SecretAccessKey != c.want.SecretAccessKey ||
				got.SessionToken != c.want.SessionToken || got.AccountID != c.want.AccountID {
				t.Errorf("credentials %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestFromEnvMissingCredentials(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing", map[string]string{"AWS_REGION": "us-east-1"}, []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "lambda.norpc"}},
		{"key id only", map[string]string{"AWS_ACCESS_KEY_ID": "AKID"}, []string{"AWS_SECRET_ACCESS_KEY"}},
		{"a profile", map[string]string{"AWS_PROFILE": "dev"}, []string{"AWS_PROFILE=dev is not read", "profiles"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromEnv(env(c.env), Options{})
			if err == nil {
				t.Fatal("no error without credentials")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestFromEnvInvalidValues(t *testing.T) {
	for name, kv := range map[string][]string{
		"fips":         {"AWS_USE_FIPS_ENDPOINT", "yes"},
		"dualstack":    {"AWS_USE_DUALSTACK_ENDPOINT", "1"},
		"ignore":       {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "on"},
		"max attempts": {"AWS_MAX_ATTEMPTS", "three"},
		"retry mode":   {"AWS_RETRY_MODE", "eager"},
		"account mode": {"AWS_ACCOUNT_ID_ENDPOINT_MODE", "sometimes"},
		"checksum":     {"AWS_REQUEST_CHECKSUM_CALCULATION", "always"},
		"validation":   {"AWS_RESPONSE_CHECKSUM_VALIDATION", "never"},
		"ca bundle":    {"AWS_CA_BUNDLE", filepath.Join(t.TempDir(), "missing.pem")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromEnv(env(with(keys, kv...)), Options{})
			if err == nil || !strings.Contains(err.Error(), kv[0]) {
				t.Errorf("%s=%s: error %v, want one naming the variable", kv[0], kv[1], err)
			}
		})
	}
}

// clients are the service clients the functions build, on one config.
type clients struct {
	ddb     dynamodb.Options
	sqs     sqs.Options
	bedrock bedrockruntime.Options
	sts     sts.Options
}

func clientsOf(cfg aws.Config) clients {
	return clients{
		ddb:     dynamodb.NewFromConfig(cfg).Options(),
		sqs:     sqs.NewFromConfig(cfg).Options(),
		bedrock: bedrockruntime.NewFromConfig(cfg).Options(),
		sts:     sts.NewFromConfig(cfg).Options(),
	}
}

func TestFromEnvEndpoints(t *testing.T) {
	for _, c := range []struct {
		name                   string
		env                    map[string]string
		ddb, sqs, bedrock, sts string // each client's BaseEndpoint; "" none
	}{
		{"none", keys, "", "", "", ""},
		{"global", with(keys, "AWS_ENDPOINT_URL", "http://all:1"), "http://all:1", "http://all:1", "http://all:1", "http://all:1"},
		{"per service", with(keys, "AWS_ENDPOINT_URL_DYNAMODB", "http://ddb:1", "AWS_ENDPOINT_URL_SQS", "http://sqs:1",
			"AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://br:1"), "http://ddb:1", "http://sqs:1", "http://br:1", ""},
		{"per service over global", with(keys, "AWS_ENDPOINT_URL", "http://all:1", "AWS_ENDPOINT_URL_DYNAMODB", "http://ddb:1"),
			"http://ddb:1", "http://all:1", "http://all:1", "http://all:1"},
		{"ignored", with(keys, "AWS_ENDPOINT_URL", "http://all:1", "AWS_ENDPOINT_URL_DYNAMODB", "http://ddb:1",
			"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "TRUE"), "", "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The clients read os.LookupEnv("AWS_ENDPOINT_URL") themselves.
			setEnv(t, c.env)
			cfg, err := FromEnv(env(c.env), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := clientsOf(cfg)
			for _, e := range []struct {
				client    string
				got, want *string
			}{
				{"dynamodb", got.ddb.BaseEndpoint, &c.ddb}, {"sqs", got.sqs.BaseEndpoint, &c.sqs},
				{"bedrockruntime", got.bedrock.BaseEndpoint, &c.bedrock}, {"sts", got.sts.BaseEndpoint, &c.sts},
			} {
				if aws.ToString(e.got) != *e.want {
					t.Errorf("%s endpoint %q, want %q", e.client, aws.ToString(e.got), *e.want)
				}
			}
		})
	}
}

// awsVars are the variables setEnv clears: every one FromEnv or
// LoadDefaultConfig reads that a test could inherit.
var awsVars = []string{
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY",
	"AWS_SESSION_TOKEN", "AWS_ACCOUNT_ID", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB",
	"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL_STS",
	"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_MAX_ATTEMPTS",
	"AWS_RETRY_MODE", "AWS_SDK_UA_APP_ID", "AWS_CA_BUNDLE", "AWS_ACCOUNT_ID_ENDPOINT_MODE", "AWS_REQUEST_CHECKSUM_CALCULATION",
	"AWS_RESPONSE_CHECKSUM_VALIDATION", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
	"AWS_ROLE_ARN", "AWS_EC2_METADATA_DISABLED", "AWS_DEFAULTS_MODE",
}

// setEnv makes the process environment m for the test's duration, with no
// other AWS variable and no shared config files.
func setEnv(t *testing.T, m map[string]string) {
	t.Helper()
	for _, k := range awsVars {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for k, v := range m {
		t.Setenv(k, v)
	}
}

// TestFromEnvMatchesLoadDefaultConfig builds the functions' clients from
// FromEnv and from the SDK's LoadDefaultConfig over the same environment
// (no shared config files) and compares what the clients resolved.
func TestFromEnvMatchesLoadDefaultConfig(t *testing.T) {
	ctx := context.Background()
	region := with(keys, "AWS_REGION", "us-east-1")
	for _, c := range []struct {
		name string
		env  map[string]string
		o    Options
	}{
		{"lambda", with(region, "AWS_SESSION_TOKEN", "TOKEN", "AWS_DEFAULT_REGION", "us-east-1"), Options{}},
		{"emulators", with(region, "AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000", "AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:5000",
			"AWS_ENDPOINT_URL_SSM", "http://127.0.0.1:5000"), Options{}},
		{"global endpoint", with(region, "AWS_ENDPOINT_URL", "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_STS", "http://sts:1"), Options{}},
		{"ignored endpoints", with(region, "AWS_ENDPOINT_URL", "http://127.0.0.1:4566", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true"), Options{}},
		{"fips, dualstack", with(region, "AWS_USE_FIPS_ENDPOINT", "true", "AWS_USE_DUALSTACK_ENDPOINT", "True"), Options{}},
		{"retries", with(region, "AWS_MAX_ATTEMPTS", "5", "AWS_RETRY_MODE", "adaptive"), Options{}},
		{"retries from options", with(region, "AWS_MAX_ATTEMPTS", "5"), Options{RetryMaxAttempts: 1, Region: "eu-central-1"}},
		{"modes", with(region, "AWS_SDK_UA_APP_ID", "sluice", "AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled",
			"AWS_REQUEST_CHECKSUM_CALCULATION", "WHEN_REQUIRED", "AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required"), Options{}},
		{"bedrock deployment keys", map[string]string{"AWS_DEFAULT_REGION": "us-west-2"},
			Options{Region: "us-east-2", RetryMaxAttempts: 1, Credentials: credentials.NewStaticCredentialsProvider("D", "DS", "")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			setEnv(t, c.env)
			want, err := Load(ctx, c.o) // either build's Load: compared below with the SDK's own
			if err != nil {
				t.Fatal(err)
			}
			sdk := loadDefault(ctx, t, c.o)
			got, err := FromEnv(os.Getenv, c.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, ref := range []struct {
				name string
				cfg  aws.Config
			}{{"LoadDefaultConfig", sdk}, {"Load", want}} {
				if d := diff(got, ref.cfg); d != "" {
					t.Errorf("FromEnv and %s differ:%s", ref.name, d)
				}
				gc, err := got.Credentials.Retrieve(ctx)
				if err != nil {
					t.Fatal(err)
				}
				wc, err := ref.cfg.Credentials.Retrieve(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if gc.AccessKeyID != wc.AccessKeyID || gc.SecretAccessKey != wc.SecretAccessKey || gc.SessionToken != wc.SessionToken {
					t.Errorf("credentials %+v, %s's %+v", gc, ref.name, wc)
				}
			}
		})
	}
}

// loadDefault is config.LoadDefaultConfig with o: Load, in a build that
// is not Lambda's (load_default.go).
func loadDefault(ctx context.Context, t *testing.T, o Options) aws.Config {
	t.Helper()
	if EnvOnly {
		t.Skip("a Lambda build: Load is FromEnv, not the SDK's LoadDefaultConfig")
	}
	cfg, err := Load(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// diff lists the configs' fields and their clients' resolved options
// that differ.
func diff(ac, bc aws.Config) string {
	var out []string
	add := func(what string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			out = append(out, fmt.Sprintf("\n  %s: %v, want %v", what, x, y))
		}
	}
	add("checksum calculation", ac.RequestChecksumCalculation, bc.RequestChecksumCalculation)
	add("checksum validation", ac.ResponseChecksumValidation, bc.ResponseChecksumValidation)
	add("HTTP client set", ac.HTTPClient != nil, bc.HTTPClient != nil)
	add("logger set", ac.Logger != nil, bc.Logger != nil)
	a, b := clientsOf(ac), clientsOf(bc)
	add("dynamodb region", a.ddb.Region, b.ddb.Region)
	add("dynamodb endpoint", aws.ToString(a.ddb.BaseEndpoint), aws.ToString(b.ddb.BaseEndpoint))
	add("dynamodb fips", a.ddb.EndpointOptions.UseFIPSEndpoint, b.ddb.EndpointOptions.UseFIPSEndpoint)
	add("dynamodb dualstack", a.ddb.EndpointOptions.UseDualStackEndpoint, b.ddb.EndpointOptions.UseDualStackEndpoint)
	add("dynamodb attempts", a.ddb.RetryMaxAttempts, b.ddb.RetryMaxAttempts)
	add("dynamodb retry mode", a.ddb.RetryMode, b.ddb.RetryMode)
	add("dynamodb retryer attempts", a.ddb.Retryer.MaxAttempts(), b.ddb.Retryer.MaxAttempts())
	add("dynamodb app id", a.ddb.AppID, b.ddb.AppID)
	add("dynamodb account id endpoint mode", a.ddb.AccountIDEndpointMode, b.ddb.AccountIDEndpointMode)
	add("sqs region", a.sqs.Region, b.sqs.Region)
	add("sqs endpoint", aws.ToString(a.sqs.BaseEndpoint), aws.ToString(b.sqs.BaseEndpoint))
	add("sqs fips", a.sqs.EndpointOptions.UseFIPSEndpoint, b.sqs.EndpointOptions.UseFIPSEndpoint)
	add("sqs attempts", a.sqs.Retryer.MaxAttempts(), b.sqs.Retryer.MaxAttempts())
	add("bedrock region", a.bedrock.Region, b.bedrock.Region)
	add("bedrock endpoint", aws.ToString(a.bedrock.BaseEndpoint), aws.ToString(b.bedrock.BaseEndpoint))
	add("bedrock attempts", a.bedrock.Retryer.MaxAttempts(), b.bedrock.Retryer.MaxAttempts())
	add("sts region", a.sts.Region, b.sts.Region)
	add("sts endpoint", aws.ToString(a.sts.BaseEndpoint), aws.ToString(b.sts.BaseEndpoint))
	add("sts dualstack", a.sts.EndpointOptions.UseDualStackEndpoint, b.sts.EndpointOptions.UseDualStackEndpoint)
	return strings.Join(out, "")
}

// TestLoadBuild checks that Load is the build's: in a Lambda build
// (-tags lambda.norpc) it reads only the environment and fails without
// credentials there; otherwise it is the SDK's chain, which does not.
func TestLoadBuild(t *testing.T) {
	setEnv(t, map[string]string{"AWS_REGION": "us-east-1"})
	_, err := Load(context.Background(), Options{})
	if EnvOnly && (err == nil || !strings.Contains(err.Error(), "no AWS credentials")) {
		t.Errorf("Lambda build: Load without credentials: %v, want the missing credentials error", err)
	}
	if !EnvOnly && err != nil {
		t.Errorf("LoadDefaultConfig failed: %v", err)
	}
}

func TestFromEnvContainerCredentials(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"AccessKeyId":"CAKID","SecretAccessKey":"CSECRET","Token":"CTOKEN","Expiration":%q}`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, wantAuth string
		env            map[string]string
	}{
		{"token", "env-token", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "env-token"}},
		{"token file", "file-token", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := FromEnv(env(c.env), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got.AccessKeyID != "CAKID" || got.SecretAccessKey != "CSECRET" || got.SessionToken != "CTOKEN" {
				t.Errorf("credentials %+v", got)
			}
			if auth != c.wantAuth {
				t.Errorf("Authorization %q, want %q", auth, c.wantAuth)
			}
		})
	}
	_, err := FromEnv(env(map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://credentials.example.com/creds"}), Options{})
	if err == nil || !strings.Contains(err.Error(), "only loopback") {
		t.Errorf("plain http to a remote host: %v, want a refusal", err)
	}
}

func TestFromEnvCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(cfg aws.Config) error {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		hc := cfg.HTTPClient
		if hc == nil {
			hc = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	without, err := FromEnv(env(keys), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if get(without) == nil {
		t.Fatal("the test server's certificate is trusted without the bundle: the test proves nothing")
	}
	cfg, err := FromEnv(env(with(keys, "AWS_CA_BUNDLE", bundle)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := get(cfg); err != nil {
		t.Errorf("with AWS_CA_BUNDLE: %v", err)
	}
}
