package stack_test

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"
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

// shellCommand is one simple command of a shell script: its words after
// quote removal and parameter expansion, and the directory it runs in,
// relative to the repository root.
type shellCommand struct {
	args []string
	dir  string
}

func (c shellCommand) String() string { return strings.Join(c.args, " ") }

// parseShell splits a script into simple commands, the way sh reads them,
// for the subset of sh the README and the init scripts use: words, '...'
// and "..." quotes, backslash escapes and line continuations, comments,
// `&&` and `;` lists, `cd`, `${NAME:-default}` and `$NAME` expansion (from
// lookup), and output redirections (dropped). Anything else (pipes, `||`,
// command substitution, ...) is an error, so that the test never silently
// reads a command otherwise than the shell would.
func parseShell(script string, lookup func(string) (string, bool)) ([]shellCommand, error) {
	var (
		cmds    []shellCommand
		words   []string
		word    strings.Builder
		inWord  bool
		dir     = "."
		runes   = []rune(script)
		quote   rune
		comment bool
	)
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() error {
		endWord()
		// Drop redirections: ">file", "2>&1", "> file".
		var args []string
		for i := 0; i < len(words); i++ {
			w := words[i]
			if m := regexp.MustCompile(`^[0-9]?>>?(.*)$`).FindStringSubmatch(w); m != nil {
				if m[1] == "" {
					i++ // the target is the next word
				}
				continue
			}
			args = append(args, w)
		}
		words = nil
		if len(args) == 0 {
			return nil
		}
		if args[0] == "cd" {
			if len(args) != 2 {
				return fmt.Errorf("cd %v: want one directory", args[1:])
			}
			dir = path.Clean(path.Join(dir, args[1]))
			if dir == ".." || strings.HasPrefix(dir, "../") {
				return fmt.Errorf("cd %s leaves the repository", args[1])
			}
			return nil
		}
		cmds = append(cmds, shellCommand{args: args, dir: dir})
		return nil
	}
	expand := func(i int) (int, error) {
		// runes[i] == '$'
		if i+1 < len(runes) && runes[i+1] == '{' {
			end := strings.IndexRune(string(runes[i:]), '}')
			if end < 0 {
				return 0, errors.New("unterminated ${")
			}
			expr := string(runes[i+2 : i+end])
			name, def, hasDef := strings.Cut(expr, ":-")
			if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(name) {
				return 0, fmt.Errorf("unsupported expansion ${%s}", expr)
			}
			v, ok := lookup(name)
			if (!ok || v == "") && hasDef {
				v = def
			}
			word.WriteString(v)
			inWord = true
			return i + end, nil
		}
		j := i + 1
		for j < len(runes) && (runes[j] == '_' || unicode.IsLetter(runes[j]) || unicode.IsDigit(runes[j])) {
			j++
		}
		if j == i+1 {
			return 0, fmt.Errorf("unsupported $ at %q", string(runes[i:min(i+10, len(runes))]))
		}
		v, _ := lookup(string(runes[i+1 : j]))
		word.WriteString(v)
		inWord = true
		return j - 1, nil
	}
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		if comment {
			if r == '\n' {
				comment = false
				if err := endCommand(); err != nil {
					return nil, err
				}
			}
			continue
		}
		switch quote {
		case '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
			continue
		case '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(runes) && strings.ContainsRune(`$"\`+"`", runes[i+1]):
				i++
				word.WriteRune(runes[i])
			case r == '\\' && i+1 < len(runes) && runes[i+1] == '\n':
				i++
			case r == '$':
				var err error
				if i, err = expand(i); err != nil {
					return nil, err
				}
			case r == '`':
				return nil, errors.New("command substitution is not supported")
			default:
				word.WriteRune(r)
			}
			continue
		}
		switch {
		case r == '\\' && i+1 < len(runes):
			i++
			if runes[i] != '\n' {
				word.WriteRune(runes[i])
				inWord = true
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == '#' && !inWord:
			comment = true
		case r == '\n' || r == ';':
			if err := endCommand(); err != nil {
				return nil, err
			}
		case r == '&' && inWord && strings.HasSuffix(word.String(), ">"):
			word.WriteRune(r) // 2>&1
		case r == '&' && i+1 < len(runes) && runes[i+1] == '&':
			i++
			if err := endCommand(); err != nil {
				return nil, err
			}
		case r == '&' || r == '|' || r == '(' || r == ')' || r == '`' || r == '<':
			return nil, fmt.Errorf("unsupported shell syntax %q", string(runes[i:min(i+20, len(runes))]))
		case r == '$':
			if i+1 < len(runes) && runes[i+1] == '(' {
				return nil, errors.New("command substitution is not supported")
			}
			var err error
			if i, err = expand(i); err != nil {
				return nil, err
			}
		case unicode.IsSpace(r):
			endWord()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if err := endCommand(); err != nil {
		return nil, err
	}
	return cmds, nil
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

// compose is the part of localstack/docker-compose.yml the test reads.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
	} `yaml:"services"`
}

func readCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "localstack", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("localstack/docker-compose.yml: %v", err)
	}
	if _, ok := c.Services["localstack"]; !ok {
		t.Fatal("localstack/docker-compose.yml has no localstack service")
	}
	return c
}

// ssmPut is one `awslocal ssm put-parameter` of an init script.
type ssmPut struct {
	script, name, typ, value string
	overwrite                bool
}

// initCommands reads the init scripts docker-compose.yml mounts into
// LocalStack's ready.d (run in name order once LocalStack is ready) as the
// SSM parameters they put, expanding variables from the container's
// environment (the compose file's `environment`). Any other command is an
// error: the test must do what they do.
func initCommands(t *testing.T) []ssmPut {
	t.Helper()
	svc := readCompose(t).Services["localstack"]
	var hostDir string
	for _, v := range svc.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && strings.HasPrefix(parts[1], "/etc/localstack/init/ready.d") {
			hostDir = parts[0]
		}
	}
	if hostDir == "" {
		t.Fatal("localstack/docker-compose.yml mounts no init scripts into /etc/localstack/init/ready.d")
	}
	dir := filepath.Join(repoRoot(t), "localstack", filepath.FromSlash(hostDir))
	files, _ := filepath.Glob(filepath.Join(dir, "*.sh"))
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no init scripts in %s", dir)
	}
	lookup := func(name string) (string, bool) {
		v, ok := svc.Environment[name]
		return v, ok
	}
	var out []ssmPut
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmds, err := parseShell(string(b), lookup)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range cmds {
			a := c.args
			switch {
			case a[0] == "set" || a[0] == "echo":
				continue
			case len(a) >= 3 && a[0] == "awslocal" && a[1] == "ssm" && a[2] == "put-parameter":
				p := ssmPut{script: filepath.Base(f)}
				for i := 3; i < len(a); i++ {
					switch a[i] {
					case "--overwrite":
						p.overwrite = true
						continue
					case "--name", "--type", "--value":
					default:
						t.Fatalf("%s: %q: the test does not know what %s does", f, c, a[i])
					}
					if i+1 >= len(a) {
						t.Fatalf("%s: %s without a value", f, a[i])
					}
					switch a[i] {
					case "--name":
						p.name = a[i+1]
					case "--type":
						p.typ = a[i+1]
					case "--value":
						p.value = a[i+1]
					}
					i++
				}
				out = append(out, p)
			default:
				t.Fatalf("%s: %q: the whole-stack test does not perform this command: teach it (readme_test.go)", f, c)
			}
		}
	}
	return out
}

// TestParseShell pins the shell subset the README is read with.
func TestParseShell(t *testing.T) {
	env := func(n string) (string, bool) {
		if n == "SET" {
			return "v", true
		}
		return "", false
	}
	got, err := parseShell("cd a && x 'q w' \"d $SET ${UNSET:-def} ${SET:-no}\" \\\n  --f=1 >/dev/null # c\ncd .. ; y 2>&1\n", env)
	if err != nil {
		t.Fatal(err)
	}
	want := []shellCommand{{args: []string{"x", "q w", "d v def v", "--f=1"}, dir: "a"}, {args: []string{"y"}, dir: "."}}
	if fmt.Sprint(got) != fmt.Sprint(want) || got[0].dir != "a" || got[1].dir != "." {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"a | b", "a || b", "echo $(id)", "echo `id`", "cd ../..", "echo 'x"} {
		if _, err := parseShell(bad, env); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
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
