package stack_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStack deploys the stack as localstack/README.md does, on moto, checks
// what came up, runs the functions under aws-lambda-rie and follows the
// user's story through them (see the package comment).
func TestStack(t *testing.T) {
	start := time.Now()
	tl := requireTools(t)
	s := deploy(t)
	t.Logf("deployed stack %s in %v", s.name, time.Since(start).Round(time.Millisecond))

	t.Run("stack", s.checkStack)
	m := s.checkMapping(t)

	fns := map[string]*function{}
	for _, id := range s.resourcesOfType("AWS::Lambda::Function") {
		f := s.startFunction(t, tl, id)
		fns[f.pkg] = f
	}
	for _, pkg := range []string{"gateway", "admin", "spend"} {
		if fns[pkg] == nil {
			t.Fatalf("the stack has no function built from functions/%s", pkg)
		}
	}
	if fns["spend"].id != m.function {
		t.Fatalf("the event source mapping invokes %s, not the spend function %s", m.function, fns["spend"].id)
	}
	s.story(t, fns, m)
	t.Run("provider key from Secrets Manager", func(t *testing.T) { s.secretsStory(t, tl, fns["gateway"].id) })
	for _, f := range fns {
		if strings.Contains(f.logs.String(), "panic") {
			t.Errorf("%s logged a panic:\n%s", f.id, f.logs.String())
		}
	}
	t.Logf("whole-stack test: %v", time.Since(start).Round(time.Millisecond))
}

// TestLocalStackFiles checks localstack/ without running anything: the
// pinned image, the auth token passed through, the README's commands being
// the ones the whole-stack test performs, and its example using the master
// key the init script puts.
func TestLocalStackFiles(t *testing.T) {
	c := readCompose(t)
	svc := c.Services["localstack"]
	const image = "localstack/localstack:4.14.0"
	if svc.Image != image {
		t.Errorf("docker-compose.yml runs %q, want %q: the last release that runs without an account, with the fix for streamed function URL responses", svc.Image, image)
	}
	if v, ok := svc.Environment["LOCALSTACK_AUTH_TOKEN"]; !ok || !strings.Contains(v, "${LOCALSTACK_AUTH_TOKEN") {
		t.Errorf("docker-compose.yml does not pass LOCALSTACK_AUTH_TOKEN through from the caller's environment (got %q)", v)
	}
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "localstack", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, want := range []string{"4.14.0", "LOCALSTACK_AUTH_TOKEN", "moto", "go test ./test/stack", "pip install 'moto[server]' aws-sam-translator cfn-lint"} {
		if !strings.Contains(readme, want) {
			t.Errorf("localstack/README.md does not mention %s", want)
		}
	}

	steps := readmeSteps(t)
	puts := initCommands(t)
	var deploy readmeStep
	for _, st := range steps {
		if st.kind == stepDeploy {
			deploy = st
		}
	}
	param := "/" + deploy.params["MasterKeyParameterName"]
	i := slices.IndexFunc(puts, func(p ssmPut) bool { return p.name == param })
	if i < 0 {
		t.Fatalf("the README deploys with MasterKeyParameterName=%s, which no init script puts", deploy.params["MasterKeyParameterName"])
	}
	if puts[i].typ != "SecureString" {
		t.Errorf("%s is put as a %s, want a SecureString", param, puts[i].typ)
	}
	keys := regexp.MustCompile(`api_key="([^"]+)"`).FindAllStringSubmatch(readme, -1)
	if len(keys) == 0 {
		t.Error("localstack/README.md's example passes no api_key")
	}
	for _, k := range keys {
		if k[1] != puts[i].value {
			t.Errorf("localstack/README.md's example uses api_key %q; the init script puts %q", k[1], puts[i].value)
		}
	}
}

// TestEventsCoverEveryFunction checks that events/ has sample events for
// every function of the template (events/<functions package>-*.json), so
// that each can be tried with `sam local invoke -e`.
func TestEventsCoverEveryFunction(t *testing.T) {
	root := repoRoot(t)
	for _, id := range samFunctions(t) {
		pkg := makeTargetPackage(t, "build-"+id)
		files, _ := filepath.Glob(filepath.Join(root, "events", pkg+"-*.json"))
		if len(files) == 0 {
			t.Errorf("%s (functions/%s) has no sample event events/%s-*.json", id, pkg, pkg)
		}
	}
}
