package stack_test

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/shared/config"
)

// The checks TestDocs makes, each returning what it found wrong, so that
// TestDocChecksFail can show each one failing.

// mdFile is a Markdown file, by its slash path from the repository root.
type mdFile struct {
	rel, text string
}

// docFiles are the Markdown files whose links and paths are checked: the
// README, docs/, ARCHITECTURE.md and the READMEs beside what they describe.
func docFiles(t *testing.T, root string) []mdFile {
	t.Helper()
	rels := []string{"README.md", "ARCHITECTURE.md", "localstack/README.md", "events/README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("docs/ has no Markdown files")
	}
	for _, m := range more {
		rels = append(rels, "docs/"+filepath.Base(m))
	}
	var out []mdFile
	for _, rel := range rels {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, mdFile{rel: rel, text: string(b)})
	}
	return out
}

// userDocs are the files whose commands and config examples are checked.
func userDocs(files []mdFile) []mdFile {
	var out []mdFile
	for _, f := range files {
		if f.rel == "README.md" || strings.HasPrefix(f.rel, "docs/") {
			out = append(out, f)
		}
	}
	return out
}

// prose is a Markdown text without its fenced code blocks, so that a `#`
// comment in a shell block is not a heading and a `[x](y)` in code is not a
// link.
func prose(md string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			b.WriteString("\n")
			continue
		}
		if !fenced {
			b.WriteString(line)
		}
	}
	return b.String()
}

var (
	headingRE    = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`([^`]+)`")
	slugDropRE   = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// anchors are the fragment ids GitHub gives a Markdown file's headings:
// lower case, punctuation but `-` and `_` dropped, spaces as `-`, and a
// repeated heading suffixed -1, -2, ...
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(prose(md), -1) {
		h := strings.ReplaceAll(m[1], "`", "")
		slug := strings.ReplaceAll(slugDropRE.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		id := slug
		for n := 1; out[id]; n++ {
			id = fmt.Sprintf("%s-%d", slug, n)
		}
		out[id] = true
	}
	return out
}

// checkLinks returns the relative links of files that do not resolve to a
// file of the repository, or to a heading of it.
func checkLinks(root string, files []mdFile) []string {
	var bad []string
	for _, f := range files {
		for _, m := range linkRE.FindAllStringSubmatch(prose(f.text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			rel := f.rel
			if file != "" {
				rel = path.Clean(path.Join(path.Dir(f.rel), file))
			}
			if rel == ".." || strings.HasPrefix(rel, "../") {
				bad = append(bad, fmt.Sprintf("%s: link %s leaves the repository", f.rel, target))
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil && !isDir(filepath.Join(root, filepath.FromSlash(rel))) {
				bad = append(bad, fmt.Sprintf("%s: link %s: no such file %s", f.rel, target, rel))
				continue
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				bad = append(bad, fmt.Sprintf("%s: link %s: an anchor into a file that is not Markdown", f.rel, target))
			} else if !anchors(string(b))[frag] {
				bad = append(bad, fmt.Sprintf("%s: link %s: %s has no heading #%s", f.rel, target, rel, frag))
			}
		}
	}
	return bad
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

var envAssignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// repoDirs are the top-level folders whose paths the docs name in code.
var repoDirs = []string{"functions/", "shared/", "infra/", "test/", "events/", "localstack/", "docs/"}

// checkPaths returns the paths written in inline code (`shared/awsconf`,
// `test/bench/main.go`) that the repository does not have. A package moved
// or renamed makes its docs fail here.
func checkPaths(root string, files []mdFile) []string {
	var bad []string
	for _, f := range files {
		for _, span := range inlineSpans(f.text) {
			for _, word := range strings.Fields(span) {
				p := strings.TrimPrefix(word, "./")
				p = strings.TrimSuffix(strings.TrimSuffix(p, "/..."), "/")
				if !slices.ContainsFunc(repoDirs, func(d string) bool { return strings.HasPrefix(p, d) }) ||
					strings.ContainsAny(p, "*<>{}$:") || strings.Contains(p, "node_modules") {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
					bad = append(bad, fmt.Sprintf("%s: `%s` names %s, which the repository does not have", f.rel, span, p))
				}
			}
		}
	}
	return bad
}

// inlineSpans returns a Markdown text's inline code spans, a span broken
// over lines joined again with a space.
func inlineSpans(md string) []string {
	var out []string
	for _, para := range strings.Split(prose(md), "\n\n") {
		for _, m := range inlineCodeRE.FindAllStringSubmatch(strings.ReplaceAll(para, "\n", " "), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// docCommands returns the commands a reader of files would type: every
// command of their ```sh blocks, and the `go run` and `go test` commands
// written inline. A command substitution stands for one word and a
// trailing `&` ends its command, so that parseShell reads the rest as sh.
func docCommands(files []mdFile) ([]shellCommand, []string) {
	var cmds []shellCommand
	var bad []string
	subst := regexp.MustCompile(`\$\([^()]*\)`)
	background := regexp.MustCompile(`[ \t]&[ \t]*(#[^\n]*)?(\n|$)`)
	add := func(f mdFile, script string) {
		script = subst.ReplaceAllString(script, "SUBSTITUTED")
		script = background.ReplaceAllString(script, "\n")
		c, err := parseShell(script, noEnv)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v in\n%s", f.rel, err, script))
		}
		cmds = append(cmds, c...)
	}
	for _, f := range files {
		for _, block := range fencedBlocks(f.text, "sh") {
			add(f, block)
		}
		for _, span := range inlineSpans(f.text) {
			if strings.HasPrefix(span, "go run ") || strings.HasPrefix(span, "go test ") {
				add(f, span)
			}
		}
	}
	return cmds, bad
}

// checkCommand says what is wrong with one documented command: a program the
// test does not know, a package, test or fuzz target that is not there, a
// script that cannot run. flags, when not nil, holds each function's flags
// (by package path, "functions/gateway") for `go run` to be checked against.
func checkCommand(root string, c shellCommand, flags map[string][]string) error {
	a := c.args
	for len(a) > 1 && envAssignRE.MatchString(a[0]) {
		a = a[1:] // NAME=value before a command sets its environment
	}
	switch {
	case a[0] == "go" && len(a) >= 3 && a[1] == "run":
		pkg := path.Clean(strings.TrimPrefix(a[2], "./"))
		if !hasGo(root, pkg, false) {
			return fmt.Errorf("no Go package %s", pkg)
		}
		known, ok := flags[pkg]
		if flags == nil || !ok {
			return nil
		}
		for _, arg := range a[3:] {
			name, isFlag := strings.CutPrefix(arg, "-")
			name, _, _ = strings.Cut(strings.TrimPrefix(name, "-"), "=")
			if isFlag && !slices.Contains(known, name) {
				return fmt.Errorf("%s has no flag -%s (it has %v)", pkg, name, known)
			}
		}
		return nil
	case a[0] == "go" && len(a) >= 2 && a[1] == "test":
		return checkGoTest(root, a[2:])
	case a[0] == "./test/run.sh" || a[0] == "test/bench/run.sh":
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(a[0])))
		if err != nil || st.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file of the repository", a[0])
		}
		return nil
	case a[0] == "export" || a[0] == "curl":
		return nil
	case a[0] == "claude": // Claude Code, a client pointed at the gateway (docs/agents.md)
		return nil
	case a[0] == "sam" && len(a) >= 2 && slices.Contains([]string{"build", "deploy"}, a[1]):
		return nil
	case a[0] == "aws" && len(a) >= 3 && slices.Contains(awsCommands, a[1]+" "+a[2]):
		return nil
	}
	return fmt.Errorf("the docs test does not know this command: teach it (test/stack/docs_test.go) or take it out of the docs")
}

// awsCommands are the AWS CLI commands the docs may use (the master key,
// the provider keys' secret, the stack's outputs: docs/deploy.md).
var awsCommands = []string{"ssm put-parameter", "ssm get-parameter", "secretsmanager create-secret",
	"secretsmanager put-secret-value", "cloudformation describe-stacks"}

// checkGoTest checks a `go test` command line: its packages exist and hold
// tests, and its -run, -fuzz and -bench patterns each match a function of
// them.
func checkGoTest(root string, args []string) error {
	patterns := map[string]string{}
	var pkgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-run" || a == "-fuzz" || a == "-bench":
			if i+1 >= len(args) {
				return fmt.Errorf("%s without a pattern", a)
			}
			patterns[a] = args[i+1]
			i++
		case a == "-fuzztime" || a == "-count" || a == "-timeout":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			pkgs = append(pkgs, a)
		}
	}
	if len(pkgs) == 0 {
		return fmt.Errorf("no package named")
	}
	var funcs []string
	for _, p := range pkgs {
		rec := strings.HasSuffix(p, "/...")
		dir := path.Clean(strings.TrimPrefix(strings.TrimSuffix(p, "/..."), "./"))
		if !hasGo(root, dir, rec) {
			return fmt.Errorf("no Go package %s", p)
		}
		funcs = append(funcs, testFuncs(root, dir, rec)...)
	}
	prefix := map[string]string{"-run": "Test", "-fuzz": "Fuzz", "-bench": "Benchmark"}
	for flag, pat := range patterns {
		if pat == "^$" || pat == "." && flag == "-bench" {
			continue
		}
		first, _, _ := strings.Cut(pat, "/") // the top-level test; the rest selects subtests
		re, err := regexp.Compile(first)
		if err != nil {
			return fmt.Errorf("%s %q: %v", flag, pat, err)
		}
		if !slices.ContainsFunc(funcs, func(fn string) bool { return strings.HasPrefix(fn, prefix[flag]) && re.MatchString(fn) }) {
			return fmt.Errorf("%s %q matches no %s function of %v", flag, pat, prefix[flag], pkgs)
		}
	}
	return nil
}

// hasGo reports whether dir (under root), or with rec any folder below it,
// holds a .go file.
func hasGo(root, dir string, rec bool) bool {
	found := false
	_ = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(dir)), func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return fs.SkipAll
		}
		if d.IsDir() && !rec && p != filepath.Join(root, filepath.FromSlash(dir)) {
			return fs.SkipDir
		}
		found = !d.IsDir() && strings.HasSuffix(p, ".go")
		return nil
	})
	return found
}

var testFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]*)\(`)

// testFuncs returns the names of the test, fuzz and benchmark functions in
// dir's _test.go files (and below it, with rec).
func testFuncs(root, dir string, rec bool) []string {
	var out []string
	top := filepath.Join(root, filepath.FromSlash(dir))
	_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != top && (!rec || d.Name() == "testdata" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, "_test.go") {
			if b, err := os.ReadFile(p); err == nil {
				for _, m := range testFuncRE.FindAllStringSubmatch(string(b), -1) {
					out = append(out, m[1])
				}
			}
		}
		return nil
	})
	return out
}

// configSections are the top-level keys that make a YAML example a config
// file rather than, say, a Prometheus scrape config.
var configSections = []string{"model_list", "router_settings", "litellm_settings", "general_settings"}

// checkConfigs loads every config example of files as the gateway loads a
// config file, with every os.environ/ variable set, and returns the
// examples that fail or draw a warning.
func checkConfigs(files []mdFile) (bad []string, n int) {
	anyEnv := func(string) (string, bool) { return "sk-docs-test", true }
	for _, f := range files {
		for _, block := range fencedBlocks(f.text, "yaml") {
			var top map[string]any
			if err := yaml.Unmarshal([]byte(block), &top); err != nil {
				bad = append(bad, fmt.Sprintf("%s: a yaml block does not parse: %v\n%s", f.rel, err, block))
				continue
			}
			if !slices.ContainsFunc(configSections, func(k string) bool { _, ok := top[k]; return ok }) {
				continue
			}
			n++
			cfg, err := config.Load([]byte(block), anyEnv)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: a config example does not load: %v\n%s", f.rel, err, block))
				continue
			}
			for _, w := range cfg.Warnings {
				bad = append(bad, fmt.Sprintf("%s: a config example draws a warning: %s\n%s", f.rel, w, block))
			}
		}
	}
	return bad, n
}

// functionFlags returns the flags each function defines, read from its
// built binary's -h, by package path ("functions/gateway").
func functionFlags(t *testing.T, root string) map[string][]string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "functions", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no functions: %v", err)
	}
	bin := t.TempDir()
	flagLine := regexp.MustCompile(`(?m)^  -([A-Za-z0-9_-]+)`)
	out := map[string][]string{}
	for _, d := range dirs {
		pkg := "functions/" + filepath.Base(d)
		exe := filepath.Join(bin, filepath.Base(d))
		build := exec.Command("go", "build", "-o", exe, "./"+pkg)
		build.Dir = root
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./%s: %v\n%s", pkg, err, b)
		}
		help := exec.Command(exe, "-h")
		help.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		b, _ := help.CombinedOutput() // -h exits 0 or 2, by flag package version
		for _, m := range flagLine.FindAllStringSubmatch(string(b), -1) {
			out[pkg] = append(out[pkg], m[1])
		}
		if len(out[pkg]) == 0 {
			t.Fatalf("./%s -h lists no flags:\n%s", pkg, b)
		}
	}
	return out
}
