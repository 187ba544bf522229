package stack_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// function is one of the stack's functions running under aws-lambda-rie.
type function struct {
	id   string // logical id
	name string // the function's name in Lambda
	pkg  string // functions/<pkg>
	url  string // the emulator's invocation endpoint
	logs *syncBuffer

	mu sync.Mutex // the emulator takes one invocation at a time
}

// startFunction runs a function as Lambda would run it: its package, as
// Lambda holds it (the S3 object its Code names, unzipped), started by
// aws-lambda-rie with exactly the environment Lambda reports for it plus
// what Lambda itself sets, and AWS_ENDPOINT_URL pointing at moto, as
// LocalStack sets it inside its Lambdas. Nothing else of the test's
// environment reaches it; override (NAME=value) replaces a variable of the
// function's environment (a second gateway on another config).
func (s *stack) startFunction(t *testing.T, tl tools, id string, override ...string) *function {
	t.Helper()
	name := s.physical[id]
	cfg := s.functionConfig(t, name)
	props := mapAt(s.deployed, "Resources", id, "Properties")

	task := t.TempDir()
	obj, err := s.c.s3.GetObject(ctx(t), &s3.GetObjectInput{
		Bucket: aws.String(str(at(props, "Code", "S3Bucket"))),
		Key:    aws.String(str(at(props, "Code", "S3Key"))),
	})
	if err != nil {
		t.Fatalf("%s's package: %v", id, err)
	}
	zipped, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := unzip(zipped, task); err != nil {
		t.Fatalf("%s's package: %v", id, err)
	}
	bootstrap := filepath.Join(task, "bootstrap")
	if fi, err := os.Stat(bootstrap); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s's package has no executable bootstrap at its root (%v): provided.al2023 runs /var/task/bootstrap", id, err)
	}

	// What Lambda sets for a provided.al2023 function, with the role's
	// credentials (moto takes any).
	env := []string{
		"PATH=/usr/local/bin:/usr/bin/:/bin:/opt/bin",
		"LANG=en_US.UTF-8",
		"TZ=:UTC",
		"LAMBDA_TASK_ROOT=" + task,
		"LAMBDA_RUNTIME_DIR=" + task,
		"_HANDLER=" + aws.ToString(cfg.Handler),
		"AWS_REGION=" + region,
		"AWS_DEFAULT_REGION=" + region,
		"AWS_LAMBDA_FUNCTION_NAME=" + name,
		"AWS_LAMBDA_FUNCTION_VERSION=" + aws.ToString(cfg.Version),
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%d", aws.ToInt32(cfg.MemorySize)),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + name,
		"AWS_LAMBDA_LOG_STREAM_NAME=" + time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + randomHex(16),
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_ACCESS_KEY_ID=" + accessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + secretAccessKey,
		"AWS_SESSION_TOKEN=" + sessionToken,
		// The emulator's way of being told the function's timeout.
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", aws.ToInt32(cfg.Timeout)),
		// What LocalStack sets in its Lambdas: every AWS call goes to moto.
		"AWS_ENDPOINT_URL=" + s.endpoint,
	}
	if cfg.Environment != nil {
		for _, k := range sortedKeys(cfg.Environment.Variables) {
			if k == "AWS_ENDPOINT_URL" {
				t.Fatalf("%s's environment sets AWS_ENDPOINT_URL", id)
			}
			if !slices.ContainsFunc(override, func(o string) bool { return strings.HasPrefix(o, k+"=") }) {
				env = append(env, k+"="+cfg.Environment.Variables[k])
			}
		}
	}
	env = append(env, override...)

	apiAddr, runtimeAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(tl.rie,
		"--runtime-interface-emulator-address", apiAddr,
		"--runtime-api-address", runtimeAddr,
		bootstrap)
	cmd.Dir = task
	cmd.Env = env
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// Its own process group, so that the bootstrap it starts ends with it;
	// killed if this test binary dies before its cleanup (a test timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start aws-lambda-rie: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	f := &function{id: id, name: name, pkg: s.handlerOf(t, id), logs: logs,
		url: "http://" + apiAddr + "/2015-03-31/functions/function/invocations"}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("%s (functions/%s) under aws-lambda-rie:\n%s", id, f.pkg, logs.String())
		}
	})
	if err := waitListening(apiAddr, guard, exited); err != nil {
		t.Fatalf("aws-lambda-rie for %s: %v\n%s", id, err, logs.String())
	}
	return f
}

// invoke sends one event, as Lambda's Invoke does, and returns what the
// function answered (its result, or Lambda's error object when it failed).
func (f *function) invoke(t *testing.T, event []byte) []byte {
	t.Helper()
	out, err := f.tryInvoke(event)
	if err != nil {
		t.Fatalf("invoke %s: %v", f.id, err)
	}
	return out
}

func (f *function) tryInvoke(event []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	client := &http.Client{Timeout: guard}
	resp, err := client.Post(f.url, "application/json", bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the emulator answered %d: %s", resp.StatusCode, truncate(b))
	}
	return b, nil
}

func unzip(b []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return fmt.Errorf("%s leaves the package", f.Name)
		}
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, data, f.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// makeTargetPackage returns the functions/<name> a Makefile target builds
// into $(ARTIFACTS_DIR)/bootstrap.
func makeTargetPackage(t *testing.T, target string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pkg := regexp.MustCompile(`\./functions/([a-z0-9_-]+)`)
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, target+":") {
			in = true
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			in = false
			continue
		}
		if m := pkg.FindStringSubmatch(line); in && m != nil && strings.Contains(line, "$(ARTIFACTS_DIR)/bootstrap") {
			return m[1]
		}
	}
	t.Fatalf("the Makefile's %s builds no ./functions/<name> into $(ARTIFACTS_DIR)/bootstrap", target)
	return ""
}
