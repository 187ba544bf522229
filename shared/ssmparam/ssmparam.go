// Package ssmparam reads secrets, such as the master key, from SSM Parameter
// Store, so that they never sit in plain text in a template or a function's
// environment: the environment carries only the parameter's name.
//
// Client makes the calls the functions need, GetParameter and
// GetParameters (the master key and the salt key in one call), as a SigV4
// signed awsJson1_1 POST with the SDK's signer and credentials, without the
// SDK's SSM client: that package's init alone (the schemas of every SSM
// operation) cost the gateway's Lambda cold start about 10 ms of CPU.
package ssmparam

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/tidwall/gjson"
)

// DefaultTimeout bounds Get when ctx has no deadline of its own.
const DefaultTimeout = 5 * time.Second

// API is what Get needs: one parameter's value, decrypted when decrypt is
// set.
type API interface {
	GetParameter(ctx context.Context, name string, decrypt bool) (string, error)
}

// Get returns the decrypted value of the parameter called name (a
// SecureString, or a plain String). An empty value is an error: a secret that
// is empty is a misconfiguration, not an open door.
func Get(ctx context.Context, api API, name string) (string, error) {
	if name == "" {
		return "", errors.New("ssm parameter: empty name")
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	v, err := api.GetParameter(ctx, name, true)
	if err != nil {
		return "", fmt.Errorf("ssm parameter %s: %w", name, err)
	}
	if v == "" {
		return "", fmt.Errorf("ssm parameter %s: empty value", name)
	}
	return v, nil
}

// MultiAPI is what GetAll needs: several parameters' values in one call.
type MultiAPI interface {
	GetParameters(ctx context.Context, names []string, decrypt bool) (map[string]string, error)
}

// GetAll returns the decrypted values of the parameters names, in their
// order, read in one call (the master key and the salt key of a cold
// start). An empty or missing value is an error, as for Get.
func GetAll(ctx context.Context, api MultiAPI, names ...string) ([]string, error) {
	for _, n := range names {
		if n == "" {
			return nil, errors.New("ssm parameter: empty name")
		}
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	got, err := api.GetParameters(ctx, names, true)
	if err != nil {
		return nil, fmt.Errorf("ssm parameters %s: %w", strings.Join(names, ", "), err)
	}
	out := make([]string, len(names))
	for i, n := range names {
		if out[i] = got[n]; out[i] == "" {
			return nil, fmt.Errorf("ssm parameter %s: empty value", n)
		}
	}
	return out, nil
}

// Client is an API on SSM's HTTPS endpoint.
type Client struct {
	endpoint    string // scheme://host[:port], no trailing slash
	region      string
	credentials aws.CredentialsProvider
	http        aws.HTTPClient
	signer      *v4.Signer
	attempts    int
	backoff     time.Duration
}

var (
	_ API      = (*Client)(nil)
	_ MultiAPI = (*Client)(nil)
)

// NewClient returns a Client for cfg's region, credentials and HTTP client.
// The endpoint is, as the SDK resolves it from cfg's sources (the
// environment's AWS_* variables, the shared config's profile):
// AWS_ENDPOINT_URL_SSM, else cfg.BaseEndpoint (AWS_ENDPOINT_URL), unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true; else the region's
// ssm[-fips].<region>.<partition suffix>, with FIPS and dual-stack from
// AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT.
func NewClient(cfg aws.Config) *Client {
	c := &Client{
		region: cfg.Region, credentials: cfg.Credentials, http: cfg.HTTPClient,
		signer: v4.NewSigner(), attempts: 3, backoff: 50 * time.Millisecond,
	}
	if c.http == nil {
		c.http = awshttp.NewBuildableClient()
	}
	src := sourcesOf(cfg)
	if !src.ignore {
		if src.service != "" {
			c.endpoint = src.service
		} else if cfg.BaseEndpoint != nil {
			c.endpoint = *cfg.BaseEndpoint
		}
	}
	if c.endpoint == "" {
		c.endpoint = endpointFor(c.region, src.fips, src.dualStack)
	}
	c.endpoint = strings.TrimRight(c.endpoint, "/")
	return c
}

// sources are the endpoint settings of a configuration's sources, each
// from the first source that has it, as the SDK's clients read them.
type sources struct {
	service                 string // AWS_ENDPOINT_URL_SSM
	ignore, fips, dualStack bool
}

// What a configuration source may answer (the SDK's EnvConfig and
// SharedConfig, awsconf's environment source).
type (
	serviceEndpoint interface {
		GetServiceBaseEndpoint(context.Context, string) (string, bool, error)
	}
	ignoreEndpoints interface {
		GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error)
	}
	fipsEndpoint interface {
		GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error)
	}
	dualStackEndpoint interface {
		GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error)
	}
)

func sourcesOf(cfg aws.Config) (s sources) {
	ctx, srcs := context.Background(), cfg.ConfigSources // the sources hold what they read at load
	s.service = first(srcs, func(p serviceEndpoint) (string, bool, error) { return p.GetServiceBaseEndpoint(ctx, "SSM") })
	s.ignore = first(srcs, func(p ignoreEndpoints) (bool, bool, error) { return p.GetIgnoreConfiguredEndpoints(ctx) })
	s.fips = first(srcs, func(p fipsEndpoint) (aws.FIPSEndpointState, bool, error) { return p.GetUseFIPSEndpoint(ctx) }) ==
		aws.FIPSEndpointStateEnabled
	s.dualStack = first(srcs, func(p dualStackEndpoint) (aws.DualStackEndpointState, bool, error) {
		return p.GetUseDualStackEndpoint(ctx)
	}) ==
		aws.DualStackEndpointStateEnabled
	return s
}

// first is the value of the first source that is a P and has one; zero
// when none has.
func first[P, V any](srcs []any, get func(P) (V, bool, error)) V {
	for _, src := range srcs {
		if p, ok := src.(P); ok {
			if v, found, err := get(p); found && err == nil {
				return v
			}
		}
	}
	var zero V
	return zero
}

// endpointFor is SSM's endpoint in region (partitions aws, aws-cn,
// aws-us-gov; the ISO partitions need AWS_ENDPOINT_URL_SSM).
func endpointFor(region string, fips, dualstack bool) string {
	host := "ssm"
	if fips {
		host = "ssm-fips"
	}
	suffix := "amazonaws.com"
	switch {
	case strings.HasPrefix(region, "cn-") && dualstack:
		suffix = "api.amazonwebservices.com.cn"
	case strings.HasPrefix(region, "cn-"):
		suffix = "amazonaws.com.cn"
	case dualstack:
		suffix = "api.aws"
	}
	return "https://" + host + "." + region + "." + suffix
}

// GetParameter implements API with up to three attempts: a connection error,
// a 5xx or a throttling answer is retried after a short backoff.
func (c *Client) GetParameter(ctx context.Context, name string, decrypt bool) (string, error) {
	quoted, err := json.Marshal(name) // a string alone: no reflection over a struct, cold at init
	if err != nil {
		return "", err
	}
	body := append(append([]byte(`{"Name":`), quoted...), `,"WithDecryption":`+strconv.FormatBool(decrypt)+`}`...)
	b, err := c.call(ctx, "AmazonSSM.GetParameter", body)
	if err != nil {
		return "", err
	}
	// Get calls a missing or non-string value an empty value.
	return gjson.GetBytes(b, "Parameter.Value").Str, nil
}

// GetParameters implements MultiAPI: the values of names, in one call
// (SSM's GetParameters, at most 10 names), retried as GetParameter. A name
// SSM does not know is an error naming it.
func (c *Client) GetParameters(ctx context.Context, names []string, decrypt bool) (map[string]string, error) {
	quoted, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	body := append(append([]byte(`{"Names":`), quoted...), `,"WithDecryption":`+strconv.FormatBool(decrypt)+`}`...)
	b, err := c.call(ctx, "AmazonSSM.GetParameters", body)
	if err != nil {
		return nil, err
	}
	if bad := gjson.GetBytes(b, "InvalidParameters").Array(); len(bad) > 0 {
		return nil, fmt.Errorf("ParameterNotFound: %s", bad[0].Str)
	}
	out := make(map[string]string, len(names))
	for _, p := range gjson.GetBytes(b, "Parameters").Array() {
		out[p.Get("Name").Str] = p.Get("Value").Str
	}
	return out, nil
}

// call makes an awsJson1_1 call of target with up to three attempts and
// returns the answer's body (valid JSON).
func (c *Client) call(ctx context.Context, target string, body []byte) ([]byte, error) {
	if c.region == "" {
		return nil, errors.New("no AWS region (AWS_REGION)")
	}
	if c.credentials == nil {
		return nil, errors.New("no AWS credentials")
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	var last error
	for attempt := 0; attempt < c.attempts; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w (after %v)", ctx.Err(), last)
			case <-time.After(c.backoff << (attempt - 1)):
			}
		}
		b, retry, err := c.try(ctx, target, body, payloadHash)
		if err == nil {
			return b, nil
		}
		if last = err; !retry {
			break
		}
	}
	return nil, last
}

// try makes one attempt; retry says whether another may succeed.
func (c *Client) try(ctx context.Context, target string, body []byte, payloadHash string) (answer []byte, retry bool, err error) {
	creds, err := c.credentials.Retrieve(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("credentials: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", target)
	if err := c.signer.SignHTTP(ctx, creds, req, payloadHash, "ssm", c.region, time.Now()); err != nil {
		return nil, false, fmt.Errorf("sign: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		code, msg := awsError(resp.Header, b)
		retry := resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests ||
			strings.Contains(code, "Throttling") || code == "TooManyRequestsException"
		return nil, retry, fmt.Errorf("%s (HTTP %d): %s", code, resp.StatusCode, msg)
	}
	if !gjson.ValidBytes(b) {
		return nil, false, fmt.Errorf("decoding the answer: not JSON (%d bytes)", len(b))
	}
	return b, false, nil
}

// awsError reads an awsJson1_1 error: its type (from X-Amzn-ErrorType or
// __type, without the namespace) and message.
func awsError(h http.Header, body []byte) (code, msg string) {
	var e struct{ Type, Message, Message2 string }
	if gjson.ValidBytes(body) {
		r := gjson.ParseBytes(body)
		e.Type, e.Message, e.Message2 = r.Get("__type").Str, r.Get("message").Str, r.Get("Message").Str
	}
	code = h.Get("X-Amzn-ErrorType")
	if code == "" {
		code = e.Type
	}
	code, _, _ = strings.Cut(code, ":")
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	if code == "" {
		code = "UnknownError"
	}
	msg = e.Message
	if msg == "" {
		msg = e.Message2
	}
	if msg == "" && e.Type == "" && len(body) <= 200 {
		msg = string(body) // not an AWS error body (a proxy's, say)
	}
	return code, msg
}

// bounded returns ctx, bounded by DefaultTimeout when it has no deadline.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}
