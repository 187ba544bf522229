package stack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// motoEndpointEnv names a running moto server to use instead of starting
// one.
const motoEndpointEnv = "MOTO_ENDPOINT"

// motoStartGuard bounds moto's start (a deadlock guard, not a timing
// assertion).
const motoStartGuard = 3 * time.Minute

// sqsEndpointEnv is where test/run.sh exports the moto server it starts for
// the whole run (the spend pipeline tests' SQS): used when it is moto.
const sqsEndpointEnv = "SQS_ENDPOINT"

// region is the stack's region, as in localstack/README.md's URLs.
const region = "us-east-1"

// Credentials for moto, which takes any. The functions get the same ones as
// their role's (moto does not enforce IAM; test/lambda's template tests check
// each function's policies).
const (
	accessKeyID     = "AKIAIOSFODNN7EXAMPLE"
	secretAccessKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	sessionToken    = "sluice-stack-test"
)

var (
	motoMu   sync.Mutex
	motoURL  string
	motoHow  string
	motoErr  error
	motoCmd  *exec.Cmd
	motoDone chan struct{}
	motoLogs *syncBuffer
	motoOwn  bool // started by this test, not named by MOTO_ENDPOINT
)

// ensureMoto returns the endpoint of moto's server, and how it was found:
// MOTO_ENDPOINT's, test/run.sh's (SQS_ENDPOINT), or one this test binary
// starts on a free loopback port the first time it is asked (TestMain stops
// it). Safe for concurrent use.
func ensureMoto(tl tools) (endpoint, how string, err error) {
	motoMu.Lock()
	defer motoMu.Unlock()
	if motoURL == "" && motoErr == nil {
		motoURL, motoHow, motoErr = startMoto(tl)
	}
	return motoURL, motoHow, motoErr
}

func startMoto(tl tools) (string, string, error) {
	if ep := os.Getenv(motoEndpointEnv); ep != "" {
		u, err := url.Parse(ep)
		if err != nil || u.Host == "" {
			return "", "", fmt.Errorf("%s=%q is not a URL", motoEndpointEnv, ep)
		}
		if err := waitListening(u.Host, 5*time.Second, nil); err != nil {
			return "", "", fmt.Errorf("%s=%s: %v", motoEndpointEnv, ep, err)
		}
		return strings.TrimSuffix(ep, "/"), "the moto server " + motoEndpointEnv + " names", nil
	}
	how := "a moto server of its own"
	if ep := os.Getenv(sqsEndpointEnv); ep != "" {
		if isMoto(ep) {
			return strings.TrimSuffix(ep, "/"), "test/run.sh's moto server (" + sqsEndpointEnv + ")", nil
		}
		how += " (" + sqsEndpointEnv + "=" + ep + " is not moto)"
	}
	if tl.moto == "" {
		return "", "", fmt.Errorf("moto_server not found: %s", pipInstall)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(tl.moto, "-H", host, "-p", port)
	// moto reads MOTO_* settings from its environment; give it none of the
	// caller's, and no AWS settings.
	cmd.Env = hostEnv()
	motoLogs = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = motoLogs, motoLogs
	// Its own process group; and killed if this test binary dies before
	// TestMain stops it (a test timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("start moto_server: %v", err)
	}
	motoCmd, motoOwn = cmd, true
	motoDone = make(chan struct{})
	go func() { _ = cmd.Wait(); close(motoDone) }()
	// moto imports every service it emulates at start: seconds on an idle
	// machine, close to a minute on a busy one.
	if err := waitListening(addr, motoStartGuard, motoDone); err != nil {
		return "", "", fmt.Errorf("moto_server on %s: %v\n%s", addr, err, motoLogs.String())
	}
	// The port is open before moto answers: wait for a real answer.
	deadline := time.Now().Add(motoStartGuard)
	for !isMoto("http://" + addr) {
		if time.Now().After(deadline) {
			return "", "", fmt.Errorf("moto_server on %s does not answer\n%s", addr, motoLogs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr, how, nil
}

// isMoto tells whether a moto server answers at ep (its own API).
func isMoto(ep string) bool {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(strings.TrimSuffix(ep, "/") + "/moto-api/config")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var cfg struct {
		Lambda map[string]any `json:"lambda"`
	}
	return resp.StatusCode/100 == 2 && json.NewDecoder(resp.Body).Decode(&cfg) == nil && cfg.Lambda != nil
}

// stopMoto stops the moto server this test binary started, if any.
func stopMoto() {
	motoMu.Lock()
	defer motoMu.Unlock()
	if motoCmd == nil {
		return
	}
	_ = syscall.Kill(-motoCmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-motoDone:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-motoCmd.Process.Pid, syscall.SIGKILL)
		<-motoDone
	}
	motoCmd = nil
}

// waitListening waits until addr accepts connections, or exited closes.
func waitListening(addr string, d time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited at start")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens: %v", err)
		}
	}
}

// clients are the test's own AWS clients, all on moto.
type clients struct {
	cfn    *cloudformation.Client
	ddb    *dynamodb.Client
	lambda *lambda.Client
	s3     *s3.Client
	sqs    *sqs.Client
	ssm    *ssm.Client
	sm     *secretsmanager.Client
}

func newClients(endpoint string) *clients {
	cfg := aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, sessionToken),
		BaseEndpoint: aws.String(endpoint),
		HTTPClient:   &http.Client{Timeout: guard},
	}
	return &clients{
		cfn:    cloudformation.NewFromConfig(cfg),
		ddb:    dynamodb.NewFromConfig(cfg),
		lambda: lambda.NewFromConfig(cfg),
		s3:     s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		sqs:    sqs.NewFromConfig(cfg),
		ssm:    ssm.NewFromConfig(cfg),
		sm:     secretsmanager.NewFromConfig(cfg),
	}
}

// ctx is a context bounded by guard for one call.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return c
}

// motoTail is the end of the log of the moto server the test started
// (its tracebacks say why a call failed), or "" for a shared one.
func motoTail() string {
	if motoLogs == nil {
		return ""
	}
	l := motoLogs.String()
	return "\nmoto's log (its end):\n" + l[max(0, len(l)-6000):]
}
