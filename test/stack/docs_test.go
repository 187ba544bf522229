package stack_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The docs test keeps README.md and docs/ from rotting, the way the
// whole-stack test keeps localstack/README.md honest: every relative link
// and anchor resolves, every path written in code resolves, every config
// example loads, and every command a reader would type names a program,
// package, test, fuzz target and flag that exist. It reads only files and
// the Go source, so it runs under -short too; the flags of the functions
// are read from the built binaries' -h, which it skips under -short.

// readmeMaxLines is the README's budget: a newcomer reads it in five
// minutes; the reference belongs in docs/.
const readmeMaxLines = 150

// TestDocs keeps README.md and docs/ true to the repository.
func TestDocs(t *testing.T) {
	root := repoRoot(t)
	files := docFiles(t, root)
	readme := files[0]
	if n := strings.Count(readme.text, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, over its %d: move the reference into docs/", n, readmeMaxLines)
	}
	for _, want := range []string{"go run ./functions/gateway\n", "go test -short ./...\n", "./test/run.sh\n", "sam build && sam deploy --guided\n"} {
		if !strings.Contains(readme.text, want) {
			t.Errorf("README.md does not give the command %q", strings.TrimSpace(want))
		}
	}

	for _, e := range checkLinks(root, files) {
		t.Error(e)
	}
	for _, e := range checkPaths(root, files) {
		t.Error(e)
	}

	bad, n := checkConfigs(userDocs(files))
	for _, e := range bad {
		t.Error(e)
	}
	if n < 3 {
		t.Errorf("found %d config examples in README.md and docs/; the test's reading of them is broken", n)
	}

	var flags map[string][]string
	if !testing.Short() {
		flags = functionFlags(t, root)
		ops := files[slices.IndexFunc(files, func(f mdFile) bool { return f.rel == "docs/operations.md" })].text
		for pkg, names := range flags {
			for _, name := range names {
				if !regexp.MustCompile("`-" + regexp.QuoteMeta(name) + "[` ]").MatchString(ops) {
					t.Errorf("docs/operations.md does not document ./%s's flag -%s", pkg, name)
				}
			}
		}
	}
	cmds, parseErrs := docCommands(userDocs(files))
	for _, e := range parseErrs {
		t.Error(e)
	}
	if len(cmds) < 10 {
		t.Errorf("found %d commands in README.md and docs/; the test's reading of them is broken", len(cmds))
	}
	for _, c := range cmds {
		if err := checkCommand(root, c, flags); err != nil {
			t.Errorf("%q: %v", c.String(), err)
		}
	}
}

// TestDocsSettings checks that the docs name every deploy parameter of
// template.yaml and every GATEWAY_ variable the code reads.
func TestDocsSettings(t *testing.T) {
	root := repoRoot(t)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var tmpl struct {
		Parameters map[string]yaml.Node `yaml:"Parameters"`
	}
	if err := yaml.Unmarshal([]byte(read("template.yaml")), &tmpl); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	if len(tmpl.Parameters) == 0 {
		t.Fatal("template.yaml has no Parameters")
	}
	deploy := read("docs/deploy.md")
	for name := range tmpl.Parameters {
		if !strings.Contains(deploy, "`"+name+"`") {
			t.Errorf("docs/deploy.md does not describe the stack parameter %s", name)
		}
	}

	ops := read("docs/operations.md")
	envRE := regexp.MustCompile(`"(GATEWAY_[A-Z0-9_]+)"`)
	seen := 0
	for _, dir := range []string{"functions", "shared"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range envRE.FindAllStringSubmatch(string(b), -1) {
				seen++
				if !strings.Contains(ops, "`"+m[1]+"`") {
					rel, _ := filepath.Rel(root, p)
					t.Errorf("%s reads %s, which docs/operations.md does not describe", rel, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen == 0 {
		t.Error("found no GATEWAY_ variable in the code; the test's reading of it is broken")
	}
}

// TestDocChecksFail shows that each check of TestDocs finds what it is
// for, on a small broken repository.
func TestDocChecksFail(t *testing.T) {
	root := t.TempDir()
	for rel, text := range map[string]string{
		"docs/a.md":            "# A\n\n## Some `code` heading\n\n[ok](b.md#b) [ok](#some-code-heading) [gone](c.md) [no anchor](b.md#nope) [out](../../x.md)\n",
		"docs/b.md":            "# B\n\n```sh\n# not a heading\n```\n",
		"shared/x/x.go":        "package x\n",
		"shared/x/x_test.go":   "package x\n\nfunc TestReal(t *testing.T) {}\n\nfunc FuzzReal(f *testing.F) {}\n",
		"functions/gw/main.go": "package main\n",
		"test/run.sh":          "#!/bin/sh\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rel string) mdFile {
		b, _ := os.ReadFile(filepath.Join(root, rel))
		return mdFile{rel: rel, text: string(b)}
	}
	links := checkLinks(root, []mdFile{read("docs/a.md"), read("docs/b.md")})
	if len(links) != 3 || !strings.Contains(links[0], "c.md") || !strings.Contains(links[1], "#nope") || !strings.Contains(links[2], "leaves") {
		t.Errorf("checkLinks found %q, want the missing file, the missing anchor and the link out", links)
	}
	if got := anchors(read("docs/b.md").text); got["not-a-heading"] || !got["b"] {
		t.Errorf("anchors(b.md) = %v", got)
	}

	paths := checkPaths(root, []mdFile{{rel: "x.md", text: "see `shared/x` and `shared/y/z.go`,\nand `go test ./shared/x/...`"}})
	if len(paths) != 1 || !strings.Contains(paths[0], "shared/y/z.go") {
		t.Errorf("checkPaths found %q, want shared/y/z.go only", paths)
	}

	flags := map[string][]string{"functions/gw": {"config"}}
	for cmd, wantErr := range map[string]bool{
		"go run ./functions/gw -config c.yaml":             false,
		"go run ./functions/gw -cfg c.yaml":                true,
		"go run ./functions/nope":                          true,
		"go test -run TestReal -v ./shared/x/":             false,
		"go test -run 'TestReal/sub' ./shared/...":         false,
		"go test -run TestGone ./shared/x/":                true,
		"go test -run '^$' -fuzz '^FuzzReal$' ./shared/x/": false,
		"go test -run '^$' -fuzz '^FuzzGone$' ./shared/x/": true,
		"go test ./shared/y/":                              true,
		"./test/run.sh":                                    true, // not executable
		"make deploy":                                      true,
	} {
		cmds, err := parseShell(cmd, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkCommand(root, cmds[0], flags); (err != nil) != wantErr {
			t.Errorf("%q: error %v, want an error: %v", cmd, err, wantErr)
		}
	}

	cmds, bad := docCommands([]mdFile{{rel: "x.md", text: "```sh\nexport K=\"sk-$(openssl rand -hex 8)\"\ngo run ./a -store dynamodb &\ngo run ./b\n```\nthen `go test -run TestX\n./c/`.\n"}})
	if len(bad) != 0 || len(cmds) != 4 || cmds[1].String() != "go run ./a -store dynamodb" || cmds[3].String() != "go test -run TestX ./c/" {
		t.Errorf("docCommands = %v, %v", cmds, bad)
	}

	cfgs, n := checkConfigs([]mdFile{{rel: "x.md", text: "```yaml\nmodel_list:\n  - model_name: a\n    litellm_params: {model: opnai/gpt-4o}\n```\n" +
		"```yaml\nmodel_list:\n  - model_name: a\n    litellm_params: {model: openai/gpt-4o}\ngeneral_settings: {database_url: x}\n```\n" +
		"```yaml\nscrape_configs: []\n```\n"}})
	if n != 2 || len(cfgs) != 2 || !strings.Contains(cfgs[0], "opnai") || !strings.Contains(cfgs[1], "database_url") {
		t.Errorf("checkConfigs = %q (%d examples), want the unknown provider and the ignored key", cfgs, n)
	}
}
