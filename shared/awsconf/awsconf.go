// Package awsconf loads the aws.Config every AWS client of the functions is
// built from (DynamoDB, SQS, SSM, Bedrock, STS).
//
// Load is selected by the build. A Lambda build (-tags lambda.norpc, as the
// Makefile, test/lambda and the cold-start bench build the bootstraps)
// reads only the environment, with FromEnv: Lambda gives the function its
// role's credentials in AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN and its region in AWS_REGION, and nothing else would be
// there to read. Linking github.com/aws/aws-sdk-go-v2/config would bring
// the SSO, SSO OIDC and sign-in clients, IMDS, the ini parser and the
// process and login credential providers into the bootstrap, whose package
// inits alone cost a cold start ~3 ms of CPU (~20 ms of wall time at 256 MB).
// Every other build (go run, go test, local mode) uses the SDK's
// config.LoadDefaultConfig: profiles, SSO, IMDS and the rest.
package awsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/aws/smithy-go/logging"
)

// Options override what Load would otherwise take from the environment
// (or, in a build that is not Lambda's, the shared config files).
type Options struct {
	// Region, when not empty, is the region (else AWS_REGION, then
	// AWS_DEFAULT_REGION).
	Region string
	// Credentials, when not nil, are the credentials; the environment's
	// are then neither read nor required.
	Credentials aws.CredentialsProvider
	// RetryMaxAttempts, when above zero, bounds the SDK's attempts per
	// call (1: no retry); else AWS_MAX_ATTEMPTS, else each client's default.
	RetryMaxAttempts int
}

// Environment variables FromEnv reads, besides the endpoint ones
// (AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>).
const (
	envAccessKeyID        = "AWS_ACCESS_KEY_ID"
	envSecretAccessKey    = "AWS_SECRET_ACCESS_KEY"
	envSessionToken       = "AWS_SESSION_TOKEN"
	envProfile            = "AWS_PROFILE"
	envContainerFullURI   = "AWS_CONTAINER_CREDENTIALS_FULL_URI"
	envContainerRelURI    = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"
	envContainerToken     = "AWS_CONTAINER_AUTHORIZATION_TOKEN"
	envContainerTokenFile = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
	envEndpointURL        = "AWS_ENDPOINT_URL"
	envIgnoreEndpoints    = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
)

// ecsCredentialsEndpoint is where AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
// is relative to (as in the SDK).
const ecsCredentialsEndpoint = "http://169.254.170.2"

// FromEnv is the configuration config.LoadDefaultConfig resolves from
// these environment variables alone (lookup reads them: os.Getenv), with o
// over them; shared config files, profiles, SSO, web identity, IMDS and
// credential processes are not read:
//
//   - region: AWS_REGION, else AWS_DEFAULT_REGION (empty if neither);
//   - credentials: AWS_ACCESS_KEY_ID (or AWS_ACCESS_KEY) and
//     AWS_SECRET_ACCESS_KEY (or AWS_SECRET_KEY), AWS_SESSION_TOKEN,
//     AWS_ACCOUNT_ID; else a container credentials endpoint
//     (AWS_CONTAINER_CREDENTIALS_FULL_URI, or _RELATIVE_URI, with
//     AWS_CONTAINER_AUTHORIZATION_TOKEN or _TOKEN_FILE); else an error;
//   - endpoints: AWS_ENDPOINT_URL as BaseEndpoint, and
//     AWS_ENDPOINT_URL_<SERVICE> (the service's SDK id in upper case,
//     spaces as underscores: DYNAMODB, SQS, SSM, BEDROCK_RUNTIME, STS),
//     which each client reads from the returned config's ConfigSources as
//     it would from LoadDefaultConfig's; neither when
//     AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true; AWS_USE_FIPS_ENDPOINT,
//     AWS_USE_DUALSTACK_ENDPOINT;
//   - AWS_MAX_ATTEMPTS, AWS_RETRY_MODE, AWS_SDK_UA_APP_ID, AWS_CA_BUNDLE,
//     AWS_ACCOUNT_ID_ENDPOINT_MODE, AWS_REQUEST_CHECKSUM_CALCULATION,
//     AWS_RESPONSE_CHECKSUM_VALIDATION, with LoadDefaultConfig's defaults.
//
// A value LoadDefaultConfig would refuse (a boolean that is not true or
// false, an unknown mode) is an error here too.
func FromEnv(lookup func(string) string, o Options) (aws.Config, error) {
	src := envSource{lookup: lookup}
	cfg := aws.Config{
		Region:                     firstSet(lookup, "AWS_REGION", "AWS_DEFAULT_REGION"),
		Logger:                     logging.NewStandardLogger(os.Stderr),
		AppID:                      lookup("AWS_SDK_UA_APP_ID"),
		AccountIDEndpointMode:      aws.AccountIDEndpointModePreferred,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
	}
	if o.Region != "" {
		cfg.Region = o.Region
	}
	var errs []error
	var err error
	if src.ignore, err = envBool(lookup, envIgnoreEndpoints); err != nil {
		errs = append(errs, err)
	}
	if src.fips, err = envState(lookup, "AWS_USE_FIPS_ENDPOINT", aws.FIPSEndpointStateEnabled, aws.FIPSEndpointStateDisabled); err != nil {
		errs = append(errs, err)
	}
	if src.dualStack, err = envState(lookup, "AWS_USE_DUALSTACK_ENDPOINT", aws.DualStackEndpointStateEnabled, aws.DualStackEndpointStateDisabled); err != nil {
		errs = append(errs, err)
	}
	cfg.ConfigSources = []any{src}
	if e := lookup(envEndpointURL); e != "" && !src.ignored() {
		cfg.BaseEndpoint = aws.String(e)
	}

	if o.RetryMaxAttempts > 0 {
		cfg.RetryMaxAttempts = o.RetryMaxAttempts
	} else if v := lookup("AWS_MAX_ATTEMPTS"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("AWS_MAX_ATTEMPTS=%q: want a whole number of attempts, at least 1", v))
		} else {
			cfg.RetryMaxAttempts = n
		}
	}
	if v := lookup("AWS_RETRY_MODE"); v != "" {
		if cfg.RetryMode, err = aws.ParseRetryMode(v); err != nil {
			errs = append(errs, fmt.Errorf("AWS_RETRY_MODE: %w", err))
		}
	}
	if v := lookup("AWS_ACCOUNT_ID_ENDPOINT_MODE"); v != "" {
		switch m := aws.AccountIDEndpointMode(v); m {
		case aws.AccountIDEndpointModePreferred, aws.AccountIDEndpointModeRequired, aws.AccountIDEndpointModeDisabled:
			cfg.AccountIDEndpointMode = m
		default:
			errs = append(errs, fmt.Errorf("AWS_ACCOUNT_ID_ENDPOINT_MODE=%q: want preferred, required or disabled", v))
		}
	}
	if req, err := whenRequired(lookup, "AWS_REQUEST_CHECKSUM_CALCULATION"); err != nil {
		errs = append(errs, err)
	} else if req {
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
	if req, err := whenRequired(lookup, "AWS_RESPONSE_CHECKSUM_VALIDATION"); err != nil {
		errs = append(errs, err)
	} else if req {
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	if path := lookup("AWS_CA_BUNDLE"); path != "" {
		if cfg.HTTPClient, err = caBundleClient(path); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return aws.Config{}, fmt.Errorf("aws config from the environment: %w", err)
	}

	cfg.Credentials = o.Credentials
	if cfg.Credentials == nil {
		if cfg.Credentials, err = envCredentials(lookup, cfg); err != nil {
			return aws.Config{}, err
		}
	}
	return cfg, nil
}

// envCredentials are the environment's credentials: static keys, else a
// container credentials endpoint.
func envCredentials(lookup func(string) string, cfg aws.Config) (aws.CredentialsProvider, error) {
	id := firstSet(lookup, envAccessKeyID, "AWS_ACCESS_KEY")
	secret := firstSet(lookup, envSecretAccessKey, "AWS_SECRET_KEY")
	if id != "" && secret != "" {
		return credentials.StaticCredentialsProvider{
			Value: aws.Credentials{
				AccessKeyID: id, SecretAccessKey: secret, SessionToken: lookup(envSessionToken),
				AccountID: lookup("AWS_ACCOUNT_ID"), Source: "EnvConfigCredentials",
			},
			Source: []aws.CredentialSource{aws.CredentialSourceEnvVars},
		}, nil
	}
	endpoint := ""
	if rel := lookup(envContainerRelURI); rel != "" {
		endpoint = ecsCredentialsEndpoint + rel
	} else if full := lookup(envContainerFullURI); full != "" {
		if err := allowedCredentialsEndpoint(full); err != nil {
			return nil, fmt.Errorf("%s: %w", envContainerFullURI, err)
		}
		endpoint = full
	}
	if endpoint == "" {
		msg := "no AWS credentials in the environment (" + envAccessKeyID + " and " + envSecretAccessKey +
			", or " + envContainerFullURI + ")"
		if p := lookup(envProfile); p != "" {
			msg += "; " + envProfile + "=" + p + " is not read"
		}
		return nil, errors.New(msg + ": a Lambda build (-tags lambda.norpc) reads credentials only from the environment; " +
			"build without the tag for profiles, SSO or instance credentials")
	}
	token, tokenFile := lookup(envContainerToken), lookup(envContainerTokenFile)
	provider := endpointcreds.New(endpoint, func(eo *endpointcreds.Options) {
		eo.AuthorizationToken = token
		if tokenFile != "" {
			eo.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return "", fmt.Errorf("container credentials token: %w", err)
				}
				return strings.TrimSpace(string(b)), nil
			})
		}
		if cfg.HTTPClient != nil {
			eo.HTTPClient = cfg.HTTPClient
		}
		eo.CredentialSources = []aws.CredentialSource{aws.CredentialSourceHTTP}
	})
	return aws.NewCredentialsCache(provider, func(co *aws.CredentialsCacheOptions) { co.ExpiryWindow = 5 * time.Minute }), nil
}

// allowedCredentialsEndpoint refuses what the SDK refuses: a plain-HTTP
// credentials endpoint other than loopback or the ECS and EKS container
// agents' addresses (host names are not resolved here: use the address).
func allowedCredentialsEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL: %w", err)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	if u.Scheme != "http" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip != nil && (ip.IsLoopback() || ip.Equal(net.IPv4(169, 254, 170, 2)) || ip.Equal(net.IPv4(169, 254, 170, 23)) ||
		ip.Equal(net.ParseIP("fd00:ec2::23"))) {
		return nil
	}
	return fmt.Errorf("plain http to %q: only loopback and the ECS/EKS container addresses are allowed", host)
}

// caBundleClient is the SDK's HTTP client trusting only the PEM
// certificates in the file at path, as AWS_CA_BUNDLE asks.
func caBundleClient(path string) (aws.HTTPClient, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("AWS_CA_BUNDLE %s: no PEM certificate", path)
	}
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.RootCAs = pool
	}), nil
}

// envSource is the config source the service clients query (through
// aws.Config.ConfigSources) for their own endpoint and endpoint variants,
// as they query the SDK's EnvConfig.
type envSource struct {
	lookup    func(string) string
	ignore    *bool
	fips      aws.FIPSEndpointState
	dualStack aws.DualStackEndpointState
}

func (s envSource) ignored() bool { return s.ignore != nil && *s.ignore }

// GetServiceBaseEndpoint is AWS_ENDPOINT_URL_<sdkID in upper case, spaces
// as underscores>.
func (s envSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	name := envEndpointURL + "_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_")
	if v := s.lookup(name); v != "" {
		return v, true, nil
	}
	return "", false, nil
}

// GetIgnoreConfiguredEndpoints is AWS_IGNORE_CONFIGURED_ENDPOINT_URLS.
func (s envSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	if s.ignore == nil {
		return false, false, nil
	}
	return *s.ignore, true, nil
}

// GetUseFIPSEndpoint is AWS_USE_FIPS_ENDPOINT.
func (s envSource) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	return s.fips, s.fips != aws.FIPSEndpointStateUnset, nil
}

// GetUseDualStackEndpoint is AWS_USE_DUALSTACK_ENDPOINT.
func (s envSource) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	return s.dualStack, s.dualStack != aws.DualStackEndpointStateUnset, nil
}

// whenRequired reads a checksum mode variable: when_supported (the
// default, also when unset) or when_required, in any case.
func whenRequired(lookup func(string) string, name string) (bool, error) {
	switch v := lookup(name); strings.ToLower(v) {
	case "", "when_supported":
		return false, nil
	case "when_required":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want when_supported or when_required", name, v)
	}
}

// envBool reads a true/false variable (any case); nil when unset.
func envBool(lookup func(string) string, name string) (*bool, error) {
	v := lookup(name)
	switch {
	case v == "":
		return nil, nil
	case strings.EqualFold(v, "true"):
		return aws.Bool(true), nil
	case strings.EqualFold(v, "false"):
		return aws.Bool(false), nil
	}
	return nil, fmt.Errorf("%s=%q: want true or false", name, v)
}

// envState reads a true/false variable as an endpoint variant's state:
// on or off; unset (the zero state) when the variable is.
func envState[S aws.FIPSEndpointState | aws.DualStackEndpointState](lookup func(string) string, name string, on, off S) (S, error) {
	v, err := envBool(lookup, name)
	switch {
	case err != nil || v == nil:
		var unset S
		return unset, err
	case *v:
		return on, nil
	}
	return off, nil
}

func firstSet(lookup func(string) string, names ...string) string {
	for _, n := range names {
		if v := lookup(n); v != "" {
			return v
		}
	}
	return ""
}
