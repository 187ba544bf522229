// Package sqslocal is the SQS emulator harness for tests: moto's server
// (`moto_server`, pip install 'moto[server]'), found through SQS_ENDPOINT
// (./test/run.sh starts one for the whole run) or started by Main on a
// free port when moto_server is on PATH. Each test makes its own queues.
//
//	func TestMain(m *testing.M) { os.Exit(sqslocal.Main(m)) }
//
// Without an emulator the SQS tests fail with instructions, except under
// `go test -short`, where they are skipped. The endpoint reaches the SDK
// only through its own AWS_ENDPOINT_URL_SQS handling, which the harness
// sets for the test process.
package sqslocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Region of every test client.
const Region = "us-east-1"

// EndpointEnv is the variable the SDK reads the SQS endpoint from.
const EndpointEnv = "AWS_ENDPOINT_URL_SQS"

// Install explains how to get the emulator.
const Install = `SQS emulator not found. Run the tests through ./test/run.sh (it starts moto), or:
  pip install 'moto[server]'        # provides moto_server
  moto_server -H 127.0.0.1 -p 5000 & export SQS_ENDPOINT=http://127.0.0.1:5000
use 'go test -short' to skip the SQS tests`

var (
	mu       sync.Mutex
	startErr error
)

// Main runs a package's tests with an emulator available and returns the
// exit code for os.Exit.
func Main(m *testing.M) int { return With(m.Run) }

// With runs run (a package's tests, or another harness's Main) with an
// emulator available, for packages that need several:
//
//	func TestMain(m *testing.M) { os.Exit(sqslocal.With(func() int { return ddblocal.Main(m) })) }
func With(run func() int) int {
	flag.Parse()
	if Endpoint() == "" && !testing.Short() {
		stop, err := start()
		if err != nil {
			startErr = err
		} else {
			defer stop()
		}
	}
	return run()
}

// Endpoint returns the emulator's URL, or "".
func Endpoint() string {
	if v := os.Getenv("SQS_ENDPOINT"); v != "" {
		if os.Getenv(EndpointEnv) == "" {
			os.Setenv(EndpointEnv, v)
		}
		return v
	}
	return os.Getenv(EndpointEnv)
}

// Require fails or skips t when no emulator is available.
func Require(t testing.TB) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if Endpoint() != "" {
		return
	}
	if testing.Short() {
		t.Skip("SQS emulator tests skipped in -short mode")
	}
	if startErr != nil {
		t.Fatalf("%v\n%s", startErr, Install)
	}
	t.Fatalf("no SQS endpoint: call sqslocal.Main from TestMain\n%s", Install)
}

// Config returns an aws.Config for the emulator (its endpoint from the
// environment, as the functions get theirs).
func Config(t testing.TB) aws.Config {
	t.Helper()
	Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("dummy", "dummy", "")))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Client returns a new SQS client on the emulator.
func Client(t testing.TB) *sqs.Client {
	t.Helper()
	return sqs.NewFromConfig(Config(t))
}

// Queues are one test's queue and its dead-letter queue.
type Queues struct {
	URL, DLQ string
}

// NewQueues creates a queue whose messages go to a new dead-letter queue
// after maxReceiveCount receives, with the given visibility timeout, and
// deletes both when the test ends.
func NewQueues(t testing.TB, visibility time.Duration, maxReceiveCount int) Queues {
	t.Helper()
	c := Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b [5]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("t%s-%s", hex.EncodeToString(b[:]), sanitize(t.Name()))
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		t.Fatalf("create dead-letter queue: %v", err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	redrive, _ := json.Marshal(map[string]any{"deadLetterTargetArn": attrs.Attributes["QueueArn"], "maxReceiveCount": fmt.Sprint(maxReceiveCount)})
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{
		"VisibilityTimeout": fmt.Sprint(int(visibility.Seconds())),
		"RedrivePolicy":     string(redrive),
	}})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
		_, _ = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: dlq.QueueUrl})
	})
	return Queues{URL: aws.ToString(q.QueueUrl), DLQ: aws.ToString(dlq.QueueUrl)}
}

// Drain receives every message of the queue at url (until a receive finds
// none) and deletes them; it returns their bodies.
func Drain(t testing.TB, url string) []string {
	t.Helper()
	c := Client(t)
	var out []string
	for {
		r, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			out = append(out, aws.ToString(m.Body))
			_, _ = c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// Count returns the approximate number of visible and in-flight messages.
func Count(t testing.TB, url string) (visible, inFlight int) {
	t.Helper()
	r, err := Client(t).GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscan(r.Attributes["ApproximateNumberOfMessages"], &visible)
	fmt.Sscan(r.Attributes["ApproximateNumberOfMessagesNotVisible"], &inFlight)
	return visible, inFlight
}

func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 50 {
		s = s[:50]
	}
	return s
}

// start launches moto_server on a free port and sets the endpoint.
func start() (func(), error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, fmt.Errorf("moto_server not on PATH: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", fmt.Sprint(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return nil, fmt.Errorf("moto_server exited at start")
		default:
		}
		if r, err := http.Get(url + "/moto-api/"); err == nil {
			r.Body.Close()
			os.Setenv("SQS_ENDPOINT", url)
			os.Setenv(EndpointEnv, url)
			return stop, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return nil, fmt.Errorf("moto_server did not answer on %s", url)
}
