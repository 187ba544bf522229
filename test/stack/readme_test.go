package stack_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The whole-stack test performs localstack/README.md's commands, in the
// README's order: it reads them from the README's ```sh blocks, and fails on
// a command it does not know how to perform, so that the README and the test
// cannot drift apart.

// stepKind is one thing a README command does.
type stepKind string

const (
	stepUp      stepKind = "start the emulator and run its init scripts" // cd localstack && docker compose up -d && cd ..
	stepBuild   stepKind = "build the functions"                         // samlocal build
	stepDeploy  stepKind = "deploy the stack"                            // samlocal deploy ...
	stepOutputs stepKind = "read the stack's outputs"                    // awslocal cloudformation describe-stacks ...
)

// readmeOrder is the order the test performs the steps in.
var readmeOrder = []stepKind{stepUp, stepBuild, stepDeploy, stepOutputs}

// readmeStep is one step, with the command it came from and what the test
// needs of its arguments.
type readmeStep struct {
	kind    stepKind
	command string

	stackName    string            // deploy, outputs
	capabilities []string          // deploy
	params       map[string]string // deploy: --parameter-overrides
	outputKey    string            // outputs: the OutputKey its --query selects
}

// fencedBlocks returns the contents of a Markdown file's fenced code blocks
// in the given language.
func fencedBlocks(md, lang string) []string {
	var out []string
	var cur *strings.Builder
	for _, line := range strings.SplitAfter(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") && strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == lang {
				cur = &strings.Builder{}
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			out = append(out, cur.String())
			cur = nil
			continue
		}
		cur.WriteString(line)
	}
	return out
}

// noEnv is the environment of a user's shell for README commands: the test
// reads them as if nothing were set.
func noEnv(string) (string, bool) { return "", false }

// readmeSteps reads localstack/README.md's commands into steps.
func readmeSteps(t *testing.T) []readmeStep {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "localstack", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(string(b), "sh")
	if len(blocks) == 0 {
		t.Fatal("localstack/README.md has no ```sh block of commands")
	}
	var steps []readmeStep
	for _, block := range blocks {
		cmds, err := parseShell(block, noEnv)
		if err != nil {
			t.Fatalf("localstack/README.md: %v in\n%s", err, block)
		}
		for _, c := range cmds {
			s, err := readmeStepOf(c)
			if err != nil {
				t.Fatalf("localstack/README.md: %q: %v", c.String(), err)
			}
			steps = append(steps, s)
		}
	}
	var kinds []stepKind
	for _, s := range steps {
		kinds = append(kinds, s.kind)
	}
	if !slices.Equal(kinds, readmeOrder) {
		t.Fatalf("localstack/README.md's commands do %q; the test does %q, in that order: change both together", kinds, readmeOrder)
	}
	return steps
}

// readmeStepOf says what one README command does, or why the test cannot
// perform it.
func readmeStepOf(c shellCommand) (readmeStep, error) {
	s := readmeStep{command: c.String()}
	a := c.args
	switch {
	case len(a) >= 3 && a[0] == "docker" && a[1] == "compose" && a[2] == "up":
		if c.dir != "localstack" {
			return s, fmt.Errorf("runs in %s, not in localstack/ where docker-compose.yml is", c.dir)
		}
		for _, f := range a[3:] {
			if f != "-d" && f != "--detach" && f != "--wait" {
				return s, fmt.Errorf("the test does not know what %s does", f)
			}
		}
		s.kind = stepUp
	case len(a) >= 2 && a[0] == "samlocal" && a[1] == "build":
		if c.dir != "." || len(a) > 2 {
			return s, errors.New("the test performs a plain `samlocal build` at the repository root")
		}
		s.kind = stepBuild
	case len(a) >= 2 && a[0] == "samlocal" && a[1] == "deploy":
		if c.dir != "." {
			return s, errors.New("not run at the repository root")
		}
		s.kind = stepDeploy
		s.params = map[string]string{}
		for i := 2; i < len(a); i++ {
			switch f := a[i]; f {
			case "--stack-name":
				if len(a) <= i+1 {
					return s, errors.New("--stack-name without a name")
				}
				s.stackName = a[i+1]
				i++
			case "--capabilities":
				for i+1 < len(a) && !strings.HasPrefix(a[i+1], "--") {
					s.capabilities = append(s.capabilities, a[i+1])
					i++
				}
			case "--parameter-overrides":
				for i+1 < len(a) && !strings.HasPrefix(a[i+1], "--") {
					k, v, ok := strings.Cut(a[i+1], "=")
					if !ok {
						return s, fmt.Errorf("--parameter-overrides %q: want Name=Value", a[i+1])
					}
					s.params[k] = v
					i++
				}
			case "--resolve-s3", "--no-confirm-changeset", "--no-fail-on-empty-changeset":
				// The test uploads to a bucket of its own and creates the
				// stack at once.
			default:
				return s, fmt.Errorf("the test does not know what %s does: teach it (deploy_test.go)", f)
			}
		}
		if s.stackName == "" {
			return s, errors.New("no --stack-name")
		}
	case len(a) >= 3 && a[0] == "awslocal" && a[1] == "cloudformation" && a[2] == "describe-stacks":
		s.kind = stepOutputs
		for i := 3; i+1 < len(a); i += 2 {
			switch a[i] {
			case "--stack-name":
				s.stackName = a[i+1]
			case "--query":
				m := regexp.MustCompile(`OutputKey=='([A-Za-z0-9]+)'`).FindStringSubmatch(a[i+1])
				if m == nil {
					return s, fmt.Errorf("--query %q: the test reads one output by its OutputKey", a[i+1])
				}
				s.outputKey = m[1]
			case "--output":
			default:
				return s, fmt.Errorf("the test does not know what %s does", a[i])
			}
		}
		if s.stackName == "" || s.outputKey == "" {
			return s, errors.New("want --stack-name and a --query naming an OutputKey")
		}
	default:
		return s, errors.New("the whole-stack test does not perform this command: teach it (readme_test.go) or take it out of the README")
	}
	return s, nil
}

// TestReadmeStepOf pins how README commands map to the test's steps, and
// that a command the test does not perform is refused.
func TestReadmeStepOf(t *testing.T) {
	cmds, err := parseShell("samlocal deploy --stack-name s --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND --parameter-overrides A=1 B=x/y --resolve-s3\n"+
		"awslocal cloudformation describe-stacks --stack-name s --query \"Stacks[0].Outputs[?OutputKey=='Out'].OutputValue\" --output text\n", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	d, err := readmeStepOf(cmds[0])
	if err != nil || d.kind != stepDeploy || d.stackName != "s" || fmt.Sprint(d.capabilities) != "[CAPABILITY_IAM CAPABILITY_AUTO_EXPAND]" ||
		fmt.Sprint(d.params) != "map[A:1 B:x/y]" {
		t.Errorf("deploy: %+v, %v", d, err)
	}
	o, err := readmeStepOf(cmds[1])
	if err != nil || o.kind != stepOutputs || o.outputKey != "Out" {
		t.Errorf("outputs: %+v, %v", o, err)
	}
	for _, bad := range []string{
		"samlocal deploy --stack-name s --guided",
		"samlocal build --use-container",
		"docker compose up -d",
		"awslocal s3 ls",
		"curl http://localhost:4566",
	} {
		c, err := parseShell(bad, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := readmeStepOf(c[0]); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
