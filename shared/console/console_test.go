package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestServesAppAndFiles(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := Wrap(next)
	for _, c := range []struct {
		path, typ, contains string
		code                int
	}{
		{"/ui", "text/html; charset=utf-8", `src="/ui/app.js"`, 200},
		{"/ui/", "text/html; charset=utf-8", `src="/ui/app.js"`, 200},
		{"/ui/keys", "text/html; charset=utf-8", `src="/ui/app.js"`, 200},
		{"/ui/app.js", "text/javascript; charset=utf-8", "import", 200},
		{"/ui/pages/keys.js", "text/javascript; charset=utf-8", "export default", 200},
		{"/ui/style.css", "text/css; charset=utf-8", "body", 200},
		{"/ui/nope.js", "", "", 404},
		{"/ui/../console.go", "", "", 404},
		{"/uix", "", "", http.StatusTeapot},
		{"/key/list", "", "", http.StatusTeapot},
	} {
		w := get(t, h, http.MethodGet, c.path)
		if w.Code != c.code {
			t.Errorf("GET %s: %d, want %d", c.path, w.Code, c.code)
			continue
		}
		if c.code == http.StatusTeapot {
			continue
		}
		if got := w.Header().Get("Content-Security-Policy"); got != CSP {
			t.Errorf("GET %s: CSP %q", c.path, got)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if got := w.Header().Get(k); got != v {
				t.Errorf("GET %s: %s %q, want %q", c.path, k, got, v)
			}
		}
		if c.code != 200 {
			continue
		}
		if got := w.Header().Get("Content-Type"); got != c.typ {
			t.Errorf("GET %s: Content-Type %q, want %q", c.path, got, c.typ)
		}
		if got := w.Header().Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q", c.path, got)
		}
		if !strings.Contains(w.Body.String(), c.contains) {
			t.Errorf("GET %s: body lacks %q", c.path, c.contains)
		}
	}
}

func TestRevalidatesWithETag(t *testing.T) {
	w := get(t, Handler(), http.MethodGet, "/ui/app.js")
	etag := w.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if w := get(t, Handler(), http.MethodGet, "/ui/app.js", "If-None-Match", etag); w.Code != http.StatusNotModified {
		t.Errorf("If-None-Match the ETag: %d, want 304", w.Code)
	}
	if w := get(t, Handler(), http.MethodGet, "/ui/ui.js", "If-None-Match", etag); w.Code != http.StatusOK {
		t.Errorf("another file with app.js's ETag: %d, want 200", w.Code)
	}
}

func TestOnlyReads(t *testing.T) {
	w := get(t, Handler(), http.MethodPost, "/ui/")
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /ui/: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	if w := get(t, Handler(), http.MethodHead, "/ui/app.js"); w.Code != http.StatusOK {
		t.Errorf("HEAD: %d", w.Code)
	}
}

// TestAssetsKeepThePolicy reads every embedded file for what the CSP
// would block or what would let data become markup: inline scripts,
// style attributes or elements, assets of another origin, innerHTML.
func TestAssetsKeepThePolicy(t *testing.T) {
	bad := []struct {
		re   *regexp.Regexp
		why  string
		exts string
	}{
		{regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`), "inline script", ".html"},
		{regexp.MustCompile(`\sstyle\s*=|<style`), "inline style", ".html .js"},
		{regexp.MustCompile(`\son[a-z]+\s*=\s*["']`), "inline event handler", ".html"},
		{regexp.MustCompile(`(?i)(?:src|href|url\(|import[^'"]*|from)\s*=?\s*["']?(?:https?:)?//`), "asset of another origin", ".html .js .css"},
		{regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function`), "markup from strings", ".js"},
		{regexp.MustCompile(`localStorage|document\.cookie`), "key kept beyond the tab's session", ".js"},
	}
	n := 0
	err := fs.WalkDir(embedded, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(embedded, p)
		if err != nil {
			return err
		}
		n++
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAll(b, -1) {
			if !strings.Contains(string(tag), ` src="/ui/`) {
				t.Errorf("%s: script not loaded from /ui/: %s", p, tag)
			}
		}
		ext := p[strings.LastIndex(p, "."):]
		for _, c := range bad {
			if !strings.Contains(" "+c.exts+" ", " "+ext+" ") {
				continue
			}
			if loc := c.re.FindIndex(b); loc != nil {
				t.Errorf("%s: %s: %q", p, c.why, b[loc[0]:loc[1]])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("read %d files", n)
	}
}

// TestPagesImportNoPage: a page reads shared specs and helpers from the
// modules beside ui.js, never from another page (pages/index.js, the
// list of pages, alone imports them).
func TestPagesImportNoPage(t *testing.T) {
	pages, err := fs.Glob(embedded, "static/pages/*.js")
	if err != nil || len(pages) < 5 {
		t.Fatalf("pages: %v %v", pages, err)
	}
	imp := regexp.MustCompile(`(?m)^import[^'"]*['"]\./`)
	for _, p := range pages {
		if strings.HasSuffix(p, "/index.js") {
			continue
		}
		b, err := fs.ReadFile(embedded, p)
		if err != nil {
			t.Fatal(err)
		}
		if m := imp.Find(b); m != nil {
			t.Errorf("%s imports another page: %q", p, m)
		}
	}
}

// TestFormModel runs the console's JavaScript unit tests (jstest/*.test.mjs:
// the form model's pure parts, static/form.js and static/specs.js) with
// node --test. They are fast, so -short runs
// them too; without node they skip, unless CI is set (then they fail).
func TestFormModel(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		const msg = "no node on the PATH (./test/run.sh installs npm, which brings node)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (CI is set: the console's unit tests must run)")
		}
		t.Skip(msg)
	}
	files, err := filepath.Glob(filepath.Join("jstest", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no jstest/*.test.mjs files: %v", err)
	}
	out, err := exec.Command(node, append([]string{"--test", "--test-reporter=tap"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %v: %v\n%s", files, err, out)
	}
	t.Logf("%s", out)
}
