package stack_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// samFunctions returns template.yaml's serverless functions, in name
// order, checking each is built by the Makefile (BuildMethod: makefile).
func samFunctions(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type     string            `yaml:"Type"`
			Metadata map[string]string `yaml:"Metadata"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(b, &tpl); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	var out []string
	for id, r := range tpl.Resources {
		if r.Type != "AWS::Serverless::Function" {
			continue
		}
		if r.Metadata["BuildMethod"] != "makefile" {
			t.Fatalf("%s: BuildMethod %q: the test builds as `sam build` does with BuildMethod: makefile", id, r.Metadata["BuildMethod"])
		}
		out = append(out, id)
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatal("template.yaml has no AWS::Serverless::Function")
	}
	return out
}

// buildTimeout bounds one function's build: a cold build takes tens of
// seconds on a busy machine; one that takes longer is stuck.
const buildTimeout = 4 * time.Minute

// build does what `samlocal build` does for BuildMethod: makefile: runs
// `make build-<LogicalId>` with ARTIFACTS_DIR set, one directory per
// function. The one change: the Makefile's LAMBDA_ENV builds for this host
// instead of arm64, so that the bootstrap runs here under aws-lambda-rie
// (the template's arm64 is checked on the template). Each function's
// artifacts are then zipped, the package `sam deploy` uploads.
func (s *stack) build(t *testing.T, tl tools) {
	fns := samFunctions(t)
	root := repoRoot(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, len(fns))
	start := time.Now()
	for i, fn := range fns {
		p := &pkg{artifacts: filepath.Join(dir, fn)}
		s.packages[fn] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := os.MkdirAll(p.artifacts, 0o755)
			if err != nil {
				errs[i] = err
				return
			}
			c, cancel := context.WithTimeout(context.Background(), buildTimeout)
			defer cancel()
			cmd := exec.CommandContext(c, tl.make, "--no-print-directory", "build-"+fn,
				"ARTIFACTS_DIR="+p.artifacts,
				fmt.Sprintf("LAMBDA_ENV=GOOS=linux GOARCH=%s CGO_ENABLED=0", runtime.GOARCH))
			cmd.Dir = root
			cmd.Env = hostEnv()
			cmd.WaitDelay = time.Second
			if out, err := cmd.CombinedOutput(); err != nil {
				if c.Err() != nil {
					err = fmt.Errorf("not done after %v (is go waiting for a module download or a lock?)", buildTimeout)
				}
				errs[i] = fmt.Errorf("make build-%s: %v\n%s", fn, err, out)
				return
			}
			if fi, err := os.Stat(filepath.Join(p.artifacts, "bootstrap")); err != nil || fi.Mode()&0o111 == 0 {
				errs[i] = fmt.Errorf("make build-%s made no executable bootstrap in ARTIFACTS_DIR: %v", fn, err)
				return
			}
			// The package `sam deploy` uploads: the artifacts, zipped.
			if p.zip, err = zipDir(p.artifacts); err != nil {
				errs[i] = fmt.Errorf("package %s: %v", fn, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("built and packaged %d functions in %v", len(fns), time.Since(start).Round(time.Millisecond))
}

// zipDir zips a directory's files as `sam package` does, keeping their
// modes (bootstrap must stay executable). The entries are stored, not
// deflated: under the race detector deflating the bootstraps takes tens of
// seconds, and Lambda takes either.
func zipDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Name = filepath.ToSlash(rel)
		h.Method = zip.Store
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// artifactBucket is the bucket the packages go to: `sam deploy
// --resolve-s3` creates and uses a managed bucket of this kind.
const artifactBucket = "aws-sam-cli-managed-default-samclisourcebucket-sluice"
