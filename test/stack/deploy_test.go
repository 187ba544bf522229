package stack_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfn "github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// stack is the deployed stack and what the test knows of it.
type stack struct {
	endpoint string
	c        *clients

	name   string
	params map[string]string // every parameter's value: the README's overrides, else the default

	transformed map[string]any // aws-sam-translator's output
	deployed    map[string]any // what was sent to CreateStack (transformed, minus what moto cannot create)
	stripped    []string       // what was taken out for moto, "Resources.X" / "Outputs.Y"

	physical map[string]string // logical id -> physical id
	packages map[string]*pkg   // function logical id -> its package
	outputs  map[string]string

	ssmPuts []ssmPut       // what the init scripts put
	secret  providerSecret // the provider key in Secrets Manager (secrets_test.go)

	lint   chan lintResult // cfn-lint's verdict on template.yaml
	up     chan error      // the emulator is up and the init scripts ran
	how    string          // which moto server
	upTook time.Duration
}

type lintResult struct {
	out  []byte
	err  error
	took time.Duration
}

// pkg is one function's deployment package.
type pkg struct {
	artifacts string // sam build's ARTIFACTS_DIR for the function
	zip       []byte
	bucket    string
	key       string
}

// codeSha256 is the package's hash as Lambda reports it.
func (p *pkg) codeSha256() string {
	sum := sha256.Sum256(p.zip)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// deploy performs localstack/README.md's steps against moto and returns the
// stack. Any failure is fatal: nothing after it could be checked.
func deploy(t *testing.T) *stack {
	t.Helper()
	began := time.Now()
	tl := requireTools(t)
	steps := readmeSteps(t)
	s := &stack{physical: map[string]string{}, packages: map[string]*pkg{}}
	// cfn-lint takes seconds: it runs while the functions build, and the
	// deploy step waits for its verdict.
	s.lint = make(chan lintResult, 1)
	lintCtx, stopLint := context.WithCancel(context.Background())
	t.Cleanup(stopLint)
	root := repoRoot(t)
	go func() {
		start := time.Now()
		cmd := exec.CommandContext(lintCtx, tl.cfnLint, "template.yaml")
		cmd.Dir = root
		cmd.Env = hostEnv()
		out, err := cmd.CombinedOutput()
		s.lint <- lintResult{out, err, time.Since(start)}
	}()
	for _, st := range steps {
		t.Logf("README (%v): %s: %s", time.Since(began).Round(time.Millisecond), st.kind, st.command)
		switch st.kind {
		case stepUp:
			// `docker compose up -d` returns at once; LocalStack starts, then
			// runs the init scripts, while the next commands run. So here:
			// moto starts and the scripts' parameters go in while the
			// functions build, and the deploy waits for both.
			s.ssmPuts = initCommands(t)
			s.up = make(chan error, 1)
			go func() { s.up <- s.startEmulator(tl) }()
		case stepBuild:
			s.build(t, tl)
		case stepDeploy:
			if err := <-s.up; err != nil {
				t.Fatal(err)
			}
			t.Logf("moto: %s at %s, init scripts done (%v after the start)", s.how, s.endpoint, s.upTook.Round(time.Millisecond))
			st.params = s.putProviderSecret(t, st.params) // secrets_test.go
			s.deploy(t, tl, st)
		case stepOutputs:
			s.readOutputs(t, st)
		}
	}
	t.Logf("README: done (%v)", time.Since(began).Round(time.Millisecond))
	return s
}

// startEmulator starts moto (or finds the one to use) and does what
// localstack/init's scripts do in LocalStack once it is ready.
func (s *stack) startEmulator(tl tools) error {
	start := time.Now()
	ep, how, err := ensureMoto(tl)
	if err != nil {
		return err
	}
	s.endpoint, s.how, s.c = ep, how, newClients(ep)
	c, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	for _, p := range s.ssmPuts {
		_, err := s.c.ssm.PutParameter(c, &ssm.PutParameterInput{
			Name:      aws.String(p.name),
			Type:      ssmtypes.ParameterType(p.typ),
			Value:     aws.String(p.value),
			Overwrite: aws.Bool(p.overwrite),
		})
		if err != nil {
			return fmt.Errorf("%s: ssm put-parameter %s: %v", p.script, p.name, err)
		}
	}
	s.upTook = time.Since(start)
	return nil
}

// deploy does what `samlocal deploy` does: lint (sam validate --lint), upload
// each package to S3, point CodeUri at it, transform, create the stack.
func (s *stack) deploy(t *testing.T, tl tools, st readmeStep) {
	root := repoRoot(t)
	s.name = st.stackName
	if !motoOwn {
		// A shared moto may hold an earlier run's stack.
		s.name += "-" + randomHex(4)
	}

	// cfn-lint, as `sam validate --lint` runs it (started in deploy).
	lint := <-s.lint
	if lint.err != nil {
		t.Fatalf("cfn-lint template.yaml: %v\n%s", lint.err, lint.out)
	}
	t.Logf("cfn-lint template.yaml: clean (%v)", lint.took.Round(time.Millisecond))

	// --resolve-s3: the managed bucket; then the packages, named by their
	// MD5 under the stack's prefix as `sam deploy` names them.
	_, err := s.c.s3.CreateBucket(ctx(t), &s3.CreateBucketInput{Bucket: aws.String(artifactBucket)})
	var owned *s3types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		t.Fatalf("create bucket %s: %v", artifactBucket, err)
	}
	args := []string{filepath.Join(root, "test", "stack", "samtransform.py"), filepath.Join(root, "template.yaml")}
	for _, fn := range sortedKeys(s.packages) {
		p := s.packages[fn]
		sum := md5.Sum(p.zip)
		p.bucket, p.key = artifactBucket, s.name+"/"+hex.EncodeToString(sum[:])
		if _, err := s.c.s3.PutObject(ctx(t), &s3.PutObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(p.key), Body: bytes.NewReader(p.zip)}); err != nil {
			t.Fatalf("upload %s's package: %v", fn, err)
		}
		args = append(args, "--code", fmt.Sprintf("%s=s3://%s/%s", fn, p.bucket, p.key))
	}
	for _, k := range sortedKeys(st.params) {
		args = append(args, "--param", k+"="+st.params[k])
	}

	// The transform CloudFormation runs for Transform: AWS::Serverless-2016-10-31
	// (moto has no SAM transform).
	phase := time.Now()
	cmd := exec.Command(tl.python, args...)
	cmd.Dir = root
	cmd.Env = hostEnv("AWS_DEFAULT_REGION=" + region)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aws-sam-translator: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(out, &s.transformed); err != nil {
		t.Fatalf("aws-sam-translator output: %v", err)
	}
	t.Logf("aws-sam-translator: %d resources (%v)", len(mapAt(s.transformed, "Resources")), time.Since(phase).Round(time.Millisecond))
	phase = time.Now()
	s.params = map[string]string{}
	for name, p := range mapAt(s.transformed, "Parameters") {
		if def, ok := at(p, "Default").(string); ok {
			s.params[name] = def
		} else if def, ok := at(p, "Default").(float64); ok {
			s.params[name] = fmt.Sprint(def)
		}
	}
	for k, v := range st.params {
		if _, ok := mapAt(s.transformed, "Parameters")[k]; !ok {
			t.Fatalf("--parameter-overrides %s: the template has no such parameter", k)
		}
		s.params[k] = v
	}

	s.deployed, s.stripped = stripForMoto(s.transformed)
	s.decideRolePolicies(t)
	t.Logf("taken out of the template for moto, which has no AWS::Lambda::Url or AWS::CloudWatch::Alarm: %s", strings.Join(s.stripped, ", "))

	body, err := json.Marshal(s.deployed)
	if err != nil {
		t.Fatal(err)
	}
	var params []cfntypes.Parameter
	for _, k := range sortedKeys(st.params) {
		params = append(params, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(st.params[k])})
	}
	var caps []cfntypes.Capability
	for _, c := range st.capabilities {
		caps = append(caps, cfntypes.Capability(c))
	}
	if _, err := s.c.cfn.CreateStack(ctx(t), &cfn.CreateStackInput{
		StackName:    aws.String(s.name),
		TemplateBody: aws.String(string(body)),
		Parameters:   params,
		Capabilities: caps,
	}); err != nil {
		t.Fatalf("create stack %s: %v%s", s.name, err, motoTail())
	}
	t.Cleanup(func() {
		// Moto goes when the test binary ends if the test started it; a
		// shared one keeps no stack of ours.
		if !motoOwn {
			_, _ = s.c.cfn.DeleteStack(ctx(t), &cfn.DeleteStackInput{StackName: aws.String(s.name)})
		}
	})
	deadline := time.Now().Add(guard)
	for {
		out, err := s.c.cfn.DescribeStacks(ctx(t), &cfn.DescribeStacksInput{StackName: aws.String(s.name)})
		if err != nil {
			t.Fatalf("describe stack %s: %v", s.name, err)
		}
		st := out.Stacks[0].StackStatus
		if st == cfntypes.StackStatusCreateComplete {
			break
		}
		if !strings.HasSuffix(string(st), "_IN_PROGRESS") || time.Now().After(deadline) {
			t.Fatalf("stack %s: %s (%s)\n%s", s.name, st, aws.ToString(out.Stacks[0].StackStatusReason), s.stackEvents(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := s.c.cfn.DescribeStackResources(ctx(t), &cfn.DescribeStackResourcesInput{StackName: aws.String(s.name)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.StackResources {
		s.physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	t.Logf("stack %s: CREATE_COMPLETE, %d resources (%v)", s.name, len(res.StackResources), time.Since(phase).Round(time.Millisecond))
}

func (s *stack) stackEvents(t *testing.T) string {
	out, err := s.c.cfn.DescribeStackEvents(ctx(t), &cfn.DescribeStackEventsInput{StackName: aws.String(s.name)})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range out.StackEvents {
		fmt.Fprintf(&b, "  %s %s %s %s\n", aws.ToString(e.LogicalResourceId), aws.ToString(e.ResourceType), e.ResourceStatus, aws.ToString(e.ResourceStatusReason))
	}
	return b.String()
}

// readOutputs does what `awslocal cloudformation describe-stacks --query
// Outputs[...]` does: reads the stack's outputs.
func (s *stack) readOutputs(t *testing.T, st readmeStep) {
	out, err := s.c.cfn.DescribeStacks(ctx(t), &cfn.DescribeStacksInput{StackName: aws.String(s.name)})
	if err != nil {
		t.Fatalf("describe-stacks: %v", err)
	}
	s.outputs = map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		s.outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	if _, ok := mapAt(s.transformed, "Outputs")[st.outputKey]; !ok {
		t.Fatalf("localstack/README.md reads output %s, which template.yaml does not have", st.outputKey)
	}
	if _, ok := s.outputs[st.outputKey]; !ok && !slices.Contains(s.stripped, "Outputs."+st.outputKey) {
		t.Fatalf("the stack has no output %s: %v", st.outputKey, s.outputs)
	}
}
