package sysroots

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFromBundleChoice(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	bundle := filepath.Join(dir, "bundle.pem")
	link := filepath.Join(dir, "link.pem")
	for f, data := range map[string]string{empty: "", bundle: "-----BEGIN CERTIFICATE-----\n"} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bundle, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, c := range []struct {
		name  string
		env   map[string]string
		files []string
		want  string
	}{
		{"first that exists", nil, []string{missing, empty, dir, bundle, link}, bundle},
		{"through a symlink", nil, []string{missing, link, bundle}, link},
		{"none", nil, []string{missing, empty, dir}, ""},
		{"SSL_CERT_FILE set", map[string]string{"SSL_CERT_FILE": "/etc/mine.pem"}, []string{bundle}, ""},
		{"SSL_CERT_DIR set", map[string]string{"SSL_CERT_DIR": "/etc/mine"}, []string{bundle}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range c.env {
				env[k] = v
			}
			got := fromBundle(func(k string) string { return env[k] },
				func(k, v string) error { env[k] = v; return nil }, os.Stat, c.files)
			if got != c.want {
				t.Fatalf("chose %q, want %q", got, c.want)
			}
			switch {
			case c.want != "" && (env["SSL_CERT_FILE"] != c.want || env["SSL_CERT_DIR"] != NoDir):
				t.Errorf("environment %v, want SSL_CERT_FILE=%s SSL_CERT_DIR=%s", env, c.want, NoDir)
			case c.want == "" && len(env) != len(c.env):
				t.Errorf("environment changed to %v", env)
			}
		})
	}
}

// TestFromBundleRoots loads the system roots in two processes, as
// crypto/x509 does by default and after FromBundle: the bundle's must be
// there and be the default's, less only what the directories add (on
// Amazon Linux 2023 nothing, https://go.dev/issue/79018; on Debian its
// snakeoil certificate, which is no CA).
func TestFromBundleRoots(t *testing.T) {
	if os.Getenv("SLUICE_SYSROOTS_HELPER") != "" {
		return // the helper run, below
	}
	if fromBundle(func(string) string { return "" }, func(string, string) error { return nil }, os.Stat, bundles) == "" {
		t.Skip("no CA bundle file on this machine")
	}
	roots := func(fromBundle bool) []string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRootsHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "SLUICE_SYSROOTS_HELPER=1", "SSL_CERT_FILE=", "SSL_CERT_DIR=")
		if fromBundle {
			cmd.Env = append(cmd.Env, "SLUICE_SYSROOTS_FROM_BUNDLE=1")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		var subjects []string
		for _, line := range strings.Split(string(out), "\n") {
			if s, ok := strings.CutPrefix(line, "root "); ok {
				subjects = append(subjects, s)
			}
		}
		return subjects
	}
	all, bundleOnly := roots(false), roots(true)
	if len(bundleOnly) == 0 {
		t.Fatal("no roots from the bundle")
	}
	for _, s := range bundleOnly {
		if _, found := slices.BinarySearch(all, s); !found {
			t.Errorf("root subject %s is in the bundle-only pool and not in the default one", s)
		}
	}
	t.Logf("%d root subjects from the bundle alone, %d with the directories", len(bundleOnly), len(all))
}

// TestRootsHelper prints the system roots' distinct subjects (hashed,
// sorted), after FromBundle when asked; it runs only as
// TestFromBundleRoots's subprocess.
func TestRootsHelper(t *testing.T) {
	if os.Getenv("SLUICE_SYSROOTS_HELPER") == "" {
		t.Skip("run by TestFromBundleRoots")
	}
	if os.Getenv("SLUICE_SYSROOTS_FROM_BUNDLE") != "" && FromBundle() == "" {
		t.Fatal("FromBundle found no bundle")
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, s := range pool.Subjects() { //nolint:staticcheck // a Linux pool lists its roots
		sum := sha256.Sum256(s)
		subjects = append(subjects, hex.EncodeToString(sum[:8]))
	}
	slices.Sort(subjects)
	for _, s := range slices.Compact(subjects) {
		os.Stdout.WriteString("root " + s + "\n")
	}
}
