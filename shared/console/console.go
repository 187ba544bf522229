// Package console is the admin console: a small web client of the admin
// API, served at /ui by the admin function (and on the gateway's port in
// local mode). Its files are plain ES modules and CSS embedded in the
// binary: no build step, nothing fetched from another origin. Everything
// it shows or changes goes through the admin API with the signed-in key,
// so the API's role checks are the only authority (docs/console.md).
//
// The gateway's Lambda bootstrap does not link this package (test/repo).
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// Prefix is where the console is served.
const Prefix = "/ui"

//go:embed static
var embedded embed.FS

// CSP is the console's Content-Security-Policy: its own scripts, styles,
// images and API calls only; no inline script or style, no framing, no
// form posted elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// file is one embedded file with its strong ETag.
type file struct {
	body []byte
	etag string
}

var (
	filesOnce sync.Once
	files     map[string]file // by path under static/, e.g. "app.js"
)

// load reads and hashes the embedded files on the first request, not at
// init: the admin function's cold start pays nothing for the console
// until someone opens it.
func load() map[string]file {
	filesOnce.Do(func() {
		files = map[string]file{}
		sub, _ := fs.Sub(embedded, "static")
		_ = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(sub, p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			files[p] = file{body: b, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
			return nil
		})
	})
	return files
}

// Handler serves the console: Prefix and Prefix/ answer index.html (the
// client routes by the URL's fragment), Prefix/<file> the embedded file,
// and any other path under Prefix without an extension index.html too.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

// Wrap serves the console's paths with Handler and every other path with
// next.
func Wrap(next http.Handler) http.Handler {
	h := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Handles(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handles reports whether p is one of the console's paths.
func Handles(p string) bool {
	return p == Prefix || strings.HasPrefix(p, Prefix+"/")
}

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, Prefix), "/")
	if path.Ext(name) == "" {
		name = "index.html"
	}
	f, ok := load()[name]
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	// Files carry no version in their names (no build step): the browser
	// revalidates each one, and an unchanged file costs a 304.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if typ := contentType(name); typ != "" {
		h.Set("Content-Type", typ)
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}

// contentType is the type of the console's few kinds of file, fixed here
// rather than read from the system's MIME tables (a module script served
// as anything but JavaScript does not run under nosniff).
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".txt", ".md":
		return "text/plain; charset=utf-8"
	}
	return ""
}
