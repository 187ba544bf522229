package gateway

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

//go:generate go test -run TestEndpointsDoc . -args -update-docs

var updateDocs = flag.Bool("update-docs", false, "rewrite the route table in docs/endpoints.md")

const (
	docsPath   = "../../docs/endpoints.md"
	docsBegin  = "<!-- routes:begin: generated from shared/gateway/routes.go by `go generate ./shared/gateway`; do not edit -->\n"
	docsEnd    = "<!-- routes:end -->\n"
	docsHeader = "| method | paths | LiteLLM name |\n| --- | --- | --- |\n"
)

// routesDoc renders the route table as docs/endpoints.md shows it: one row
// per method and name, its paths in the table's order.
func routesDoc() string {
	type row struct {
		method, name string
		paths        []string
	}
	var rows []*row
	byKey := map[string]*row{}
	for _, rt := range buildRoutes() {
		k := rt.method + " " + rt.name
		r := byKey[k]
		if r == nil {
			r = &row{method: rt.method, name: rt.name}
			byKey[k] = r
			rows = append(rows, r)
		}
		r.paths = append(r.paths, "`"+rt.pattern+"`")
	}
	var b strings.Builder
	b.WriteString(docsHeader)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | `%s` |\n", r.method, strings.Join(r.paths, ", "), r.name)
	}
	return b.String()
}

// The route table in docs/endpoints.md is the one the gateway serves: a
// route added to routes.go and not to the docs fails here (go generate
// ./shared/gateway rewrites it).
func TestEndpointsDoc(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := bytes.Cut(doc, []byte(docsBegin))
	_, after, ok2 := bytes.Cut(rest, []byte(docsEnd))
	if !ok1 || !ok2 {
		t.Fatalf("%s: no generated route table (markers %q ... %q)", docsPath, docsBegin, docsEnd)
	}
	want := routesDoc()
	if *updateDocs {
		out := append(append(append(append(before[:len(before):len(before)], docsBegin...), want...), docsEnd...), after...)
		if err := os.WriteFile(docsPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := string(rest[:bytes.Index(rest, []byte(docsEnd))]); got != want {
		t.Errorf("docs/endpoints.md's route table is stale: run go generate ./shared/gateway\nwant:\n%s", want)
	}
	for _, rt := range buildRoutes() {
		if !bytes.Contains(doc, []byte("`"+rt.pattern+"`")) {
			t.Errorf("%s %s is not in docs/endpoints.md", rt.method, rt.pattern)
		}
	}
}

// Every route of the table is served (its method reaches its handler, not
// the 404 of an unknown path) and listed by /routes with its method; among
// them the ones /routes once left out.
func TestRoutesComplete(t *testing.T) {
	f := infoFixture(t, "model_list: []\ngeneral_settings: {master_key: sk-master}\n")
	listed := map[string]bool{}
	for path, methods := range listedRoutes(t, f, "sk-master") {
		for _, m := range methods {
			listed[m+" "+path] = true
		}
	}
	for _, mp := range []string{"POST /v1/responses", "POST /v1/messages", "POST /v1/messages/count_tokens",
		"POST /openai/v1/images/generations", "POST /openai/v1/audio/transcriptions", "GET /v1/responses/{response_id}"} {
		if !listed[mp] {
			t.Errorf("/routes does not list %s", mp)
		}
	}
	for _, rt := range buildRoutes() {
		if !listed[rt.method+" "+rt.pattern] {
			t.Errorf("/routes does not list %s %s", rt.method, rt.pattern)
		}
		path := strings.NewReplacer("{model}", "m", "{response_id}", "resp_x").Replace(rt.pattern)
		resp := f.send(t, rt.method, path, strings.NewReader("{}"))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed || bytes.Contains(body, []byte("no route")) {
			t.Errorf("%s %s: %d %s", rt.method, path, resp.StatusCode, body)
		}
	}
	for _, path := range []string{"/v1/rerank/x", "/openai/deployments//chat/completions", "/openai/deployments/a/b/chat/completions", "/v1/responses/"} {
		resp := f.send(t, http.MethodPost, path, strings.NewReader("{}"))
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
