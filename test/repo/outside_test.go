// Package repo checks the repository itself: a fresh clone must hold
// everything its tests and tools read.
package repo

import (
	"bytes"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNothingOutsideTheRepository fails when a file other than Markdown
// refers to a path outside the repository: a relative path whose leading
// ../ chain (or run of ".." arguments, as in filepath.Join) climbs above the
// repository root from the file's own directory, or one that lands on a
// "shared" folder the repository does not have (the sibling ../shared a
// newcomer's clone lacks). Comments in Go files are prose, like Markdown,
// and are not read.
func TestNothingOutsideTheRepository(t *testing.T) {
	root := moduleRoot(t)
	files := repoFiles(t, root)
	if len(files) == 0 {
		t.Fatal("found no files to check")
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil
	}
	checked := 0
	for _, rel := range files {
		if ext := strings.ToLower(path.Ext(rel)); ext == ".md" || ext == ".markdown" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked but deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		checked++
		for _, f := range outside(rel, data, exists) {
			t.Errorf("%s:%d: %q refers to a path outside the repository (%s)", rel, f.line, f.text, f.why)
		}
	}
	if checked == 0 {
		t.Fatal("checked no files")
	}
}

// moduleRoot is the nearest directory above the test's with this module's
// go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/sluice-gw/sluice\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/sluice-gw/sluice above the test's directory")
		}
		dir = parent
	}
}

// repoFiles lists the files git tracks (slash-separated, relative to root);
// outside a git checkout (an unpacked archive), every file in the tree but
// build output and installed dependencies.
func repoFiles(t *testing.T, root string) []string {
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		cmd := exec.Command("git", "ls-files", "-z")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			t.Fatalf("git ls-files in a git checkout: %v", err)
		}
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", ".aws-sam":
				return filepath.SkipDir
			}
			if d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

type finding struct {
	line      int
	text, why string
}

var (
	// A chain of ".." path elements: ../../x, ..\..\x, a bare "..".
	dotdotChain = regexp.MustCompile(`\.\.(?:[/\\]\.\.)*`)
	// A run of ".." arguments: filepath.Join("..", ".."), path.join('..', '..').
	dotdotArgs = regexp.MustCompile(`["']\.\.["'](?:\s*,\s*["']\.\.["'])*`)
	// What follows either, when it names a folder "shared".
	sharedAfterChain = regexp.MustCompile(`^[/\\]shared(?:$|[^\w.\-])`)
	sharedAfterArgs  = regexp.MustCompile(`^\s*,\s*["']shared["']`)
)

// outside reports the relative paths in a file (rel: its slash-separated
// path from the repository root) that leave the repository from the file's
// directory, or that name a "shared" folder that does not exist there.
// exists tells whether a slash-separated path from the root exists.
func outside(rel string, data []byte, exists func(string) bool) []finding {
	if strings.HasSuffix(rel, ".go") {
		data = blankGoComments(data)
	}
	dir := path.Dir(rel)
	depth := 0
	if dir != "." {
		depth = strings.Count(dir, "/") + 1
	}
	text := string(data)
	var found []finding
	check := func(start, end, climb int, shared bool) {
		why := ""
		switch {
		case climb > depth:
			why = fmt.Sprintf("climbs %d levels from %s, %d deep", climb, dir, depth)
		case shared:
			target := path.Join(dir, strings.Repeat("../", climb), "shared")
			if !exists(target) {
				why = fmt.Sprintf("%s does not exist in the repository", target)
			}
		}
		if why == "" {
			return
		}
		lineEnd := strings.IndexByte(text[end:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text) - end
		}
		show := text[start : end+min(lineEnd, 40)]
		found = append(found, finding{line: 1 + strings.Count(text[:start], "\n"), text: strings.TrimSpace(show), why: why})
	}
	for _, m := range dotdotChain.FindAllStringIndex(text, -1) {
		start, end := m[0], m[1]
		if start > 0 && !startsPath(text[:start]) {
			continue
		}
		if end < len(text) && isNameByte(text[end]) {
			continue // "...", "..x"
		}
		check(start, end, strings.Count(text[start:end], ".."), sharedAfterChain.MatchString(text[end:]))
	}
	for _, m := range dotdotArgs.FindAllStringIndex(text, -1) {
		start, end := m[0], m[1]
		check(start, end, strings.Count(text[start:end], ".."), sharedAfterArgs.MatchString(text[end:]))
	}
	return found
}

// startsPath tells whether a ".." right after before begins a relative path:
// at a word boundary, or right after "$(...)/" (a shell script's
// $(dirname "$0")/.., relative to the script's directory).
func startsPath(before string) bool {
	last := before[len(before)-1]
	if last == '/' || last == '\\' {
		return strings.HasSuffix(before, ")/")
	}
	return !isNameByte(last) && last != '$' && last != '~'
}

func isNameByte(b byte) bool {
	return b == '.' || b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// blankGoComments returns Go source with its comments replaced by spaces
// (line breaks kept, so line numbers stay right).
func blankGoComments(src []byte) []byte {
	out := bytes.Clone(src)
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, func(token.Position, string) {}, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.COMMENT {
			continue
		}
		off := file.Offset(pos)
		for i := off; i < off+len(lit) && i < len(out); i++ {
			if out[i] != '\n' {
				out[i] = ' '
			}
		}
	}
}

func TestOutsideFinds(t *testing.T) {
	up := func(n int) string { return strings.Repeat("../", n) }
	args := func(n int) string { return strings.Repeat(`"..", `, n) }
	// The tree these cases see: shared/ at the root, nothing else.
	exists := func(p string) bool { return p == "shared" }
	tests := []struct {
		name, rel, text string
		want            int
	}{
		{"Join climbing out (the old fixture path)", "shared/config/config_test.go",
			"package config\nvar dir = filepath.Join(" + args(3) + `"shared", "fixtures")` + "\n", 1},
		{"Join staying in", "shared/config/config_test.go",
			"package config\nvar dir = filepath.Join(" + args(2) + `"shared", "config")` + "\n", 0},
		{"Join to a shared folder the repo lacks", "test/bench/main_test.go",
			"package main\nvar dir = filepath.Join(" + args(1) + `"shared", "bench")` + "\n", 1},
		{"chain climbing out", "test/bench/run.sh",
			"cd " + up(3) + "elsewhere\n", 1},
		{"chain to a shared folder the repo lacks", "test/bench/run.sh",
			"bench=" + up(1) + "shared/bench\n", 1},
		{"chain to the repo's own shared folder", "functions/gateway/gen.sh",
			"cp " + up(2) + "shared/config/default.yaml .\n", 0},
		{"script directory, in the repo", "test/bench/run.sh",
			`cd "$(dirname "$0")/` + up(2)[:5] + "\"\n", 0},
		{"script directory, out of the repo", "test/bench/run.sh",
			`cd "$(dirname "$0")/` + up(3)[:8] + "\"\n", 1},
		{"a root file climbing at all", "Makefile",
			"include " + up(1) + "common.mk\n", 1},
		{"ellipses, spreads, ranges", "shared/x/x.go",
			"package x\nfunc f(a ...int) { g(a...); _ = [...]int{1}; _ = \"{1..5}\" }\n", 0},
		{"a climb in a Go comment", "shared/x/x.go",
			"package x\n// see " + up(3) + "shared/bench\nvar x = 1\n", 0},
		{"a climb in a YAML comment", "shared/x/a.yaml",
			"# from " + up(3) + "shared/bench\na: 1\n", 1},
		{"a path below a name", "shared/x/x.go",
			"package x\nvar p = \"a/b/" + up(4) + "c\"\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outside(tt.rel, []byte(tt.text), exists)
			if len(got) != tt.want {
				t.Errorf("%s:\n%s\nfindings = %+v, want %d", tt.rel, tt.text, got, tt.want)
			}
		})
	}
}
