package lambda_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/infra/tables"
)

// samTemplate is template.yaml read twice: by goformation, typed (it resolves
// Ref only against parameter defaults and drops some SAM properties, such as
// an SQS event's FunctionResponseTypes), and as plain YAML data with every
// intrinsic kept as data ({"Ref": ...}, {"Fn::GetAtt": [...]}, {"Fn::Sub": ...}).
type samTemplate struct {
	typed *cloudformation.Template
	raw   map[string]any
}

func loadTemplate(t *testing.T) *samTemplate {
	t.Helper()
	path := filepath.Join(repoRoot(t), "template.yaml")
	typed, err := goformation.Open(path)
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	raw, ok := yamlData(&doc).(map[string]any)
	if !ok {
		t.Fatal("template.yaml is not a mapping")
	}
	return &samTemplate{typed: typed, raw: raw}
}

// yamlData converts a YAML node to plain data, turning CloudFormation's
// short-form intrinsics (!Ref, !GetAtt, !Sub, ...) into their long form.
func yamlData(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return yamlData(n.Content[0])
	case yaml.AliasNode:
		return yamlData(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = yamlData(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			s = append(s, yamlData(c))
		}
		v = s
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
			v = n.Value
		} else if err := n.Decode(&v); err != nil {
			v = n.Value
		}
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v
	}
	switch fn := strings.TrimPrefix(n.Tag, "!"); fn {
	case "Ref", "Condition":
		return map[string]any{fn: v}
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, _ := strings.Cut(s, ".")
			v = []any{res, attr}
		}
		return map[string]any{"Fn::GetAtt": v}
	default:
		return map[string]any{"Fn::" + fn: v}
	}
}

// at walks data along keys; nil if any step is missing.
func at(data any, keys ...string) any {
	for _, k := range keys {
		m, ok := data.(map[string]any)
		if !ok {
			return nil
		}
		data = m[k]
	}
	return data
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func (tpl *samTemplate) resources() map[string]any {
	m, _ := tpl.raw["Resources"].(map[string]any)
	return m
}

func (tpl *samTemplate) resourceType(id string) string {
	return str(at(tpl.resources(), id, "Type"))
}

// functions returns the logical ids of the SAM functions, sorted.
func (tpl *samTemplate) functions() []string {
	var ids []string
	for id := range tpl.typed.GetAllServerlessFunctionResources() {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// prop is a function property, falling back to Globals.Function.
func (tpl *samTemplate) prop(fn, name string) any {
	if v := at(tpl.resources(), fn, "Properties", name); v != nil {
		return v
	}
	return at(tpl.raw, "Globals", "Function", name)
}

// refTarget returns the resource a {"Ref": X} names, or "".
func refTarget(v any) string { return str(at(v, "Ref")) }

// getAttTarget returns the resource and attribute of {"Fn::GetAtt": [R, A]}.
func getAttTarget(v any) (string, string) {
	s, _ := at(v, "Fn::GetAtt").([]any)
	if len(s) != 2 {
		return "", ""
	}
	return str(s[0]), str(s[1])
}

// makeTargets reads the Makefile's build-<LogicalId> targets and the
// ./functions/<name> package each builds.
func makeTargets(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil {
		t.Fatalf("Makefile: %v", err)
	}
	defer f.Close()
	target := regexp.MustCompile(`^(build-[A-Za-z0-9]+):`)
	pkg := regexp.MustCompile(`\./functions/([a-z0-9_-]+)`)
	out := map[string]string{}
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := target.FindStringSubmatch(line); m != nil {
			cur = m[1]
			out[cur] = ""
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			cur = ""
			continue
		}
		if m := pkg.FindStringSubmatch(line); cur != "" && m != nil && strings.Contains(line, "$(ARTIFACTS_DIR)/bootstrap") {
			out[cur] = m[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// functionPackages maps each SAM function to the functions/<name> its build
// target compiles.
func functionPackages(t *testing.T, tpl *samTemplate) map[string]string {
	t.Helper()
	targets := makeTargets(t)
	out := map[string]string{}
	for _, fn := range tpl.functions() {
		out[fn] = targets["build-"+fn]
	}
	return out
}

func TestTemplateBuilds(t *testing.T) {
	tpl := loadTemplate(t)
	targets := makeTargets(t)
	if len(tpl.functions()) == 0 {
		t.Fatal("no functions in template.yaml")
	}
	for _, fn := range tpl.functions() {
		t.Run(fn, func(t *testing.T) {
			if bm := str(at(tpl.resources(), fn, "Metadata", "BuildMethod")); bm != "makefile" {
				t.Errorf("Metadata.BuildMethod = %q, want makefile", bm)
			}
			pkg, ok := targets["build-"+fn]
			if !ok {
				t.Fatalf("Makefile has no target build-%s", fn)
			}
			if pkg == "" {
				t.Fatalf("Makefile target build-%s does not build ./functions/<name> into $(ARTIFACTS_DIR)/bootstrap", fn)
			}
			if _, err := os.Stat(filepath.Join(repoRoot(t), "functions", pkg, "main.go")); err != nil {
				t.Errorf("build-%s builds functions/%s: %v", fn, pkg, err)
			}
			if rt := str(tpl.prop(fn, "Runtime")); rt != "provided.al2023" {
				t.Errorf("Runtime = %q, want provided.al2023", rt)
			}
			if arch, _ := tpl.prop(fn, "Architectures").([]any); len(arch) != 1 || arch[0] != "arm64" {
				t.Errorf("Architectures = %v, want [arm64]", arch)
			}
			if h := str(tpl.prop(fn, "Handler")); h != "bootstrap" {
				t.Errorf("Handler = %q, want bootstrap", h)
			}
		})
	}
}

func TestTemplateGatewayURLStreams(t *testing.T) {
	tpl := loadTemplate(t)
	pkgs := functionPackages(t, tpl)
	found := false
	for id, fn := range tpl.typed.GetAllServerlessFunctionResources() {
		switch pkgs[id] {
		case "gateway":
			found = true
			u := fn.FunctionUrlConfig
			if u == nil || u.InvokeMode == nil || *u.InvokeMode != "RESPONSE_STREAM" {
				t.Errorf("%s: the function URL does not stream (InvokeMode RESPONSE_STREAM)", id)
			}
			if u != nil && u.AuthType != "NONE" {
				t.Errorf("%s: AuthType = %q; OpenAI SDKs send Bearer keys and cannot sign SigV4: want NONE", id, u.AuthType)
			}
		case "admin":
			if u := fn.FunctionUrlConfig; u != nil && u.InvokeMode != nil && *u.InvokeMode != "BUFFERED" {
				t.Errorf("%s: httpadapter answers buffered: InvokeMode = %s", id, *u.InvokeMode)
			}
		}
	}
	if !found {
		t.Fatal("no function builds functions/gateway")
	}
	if v := at(tpl.raw, "Outputs", "GatewayUrl", "Value"); v == nil {
		t.Error("no GatewayUrl output")
	} else if r, attr := getAttTarget(v); attr != "FunctionUrl" || r == "" {
		t.Errorf("GatewayUrl = %v: want !GetAtt <Function>Url.FunctionUrl", v)
	}
}

// TestTemplateTablesMatchInfraTables checks template.yaml against the single
// definition of the tables in infra/tables.
func TestTemplateTablesMatchInfraTables(t *testing.T) {
	tpl := loadTemplate(t)
	declared := tpl.typed.GetAllDynamoDBTableResources()
	known := map[string]bool{}
	for _, want := range tables.All() {
		known[want.LogicalID] = true
		t.Run(want.LogicalID, func(t *testing.T) {
			got, ok := declared[want.LogicalID]
			if !ok {
				t.Fatalf("template.yaml does not declare %s", want.LogicalID)
			}
			if got.BillingMode == nil || *got.BillingMode != string(tables.BillingMode) {
				t.Errorf("BillingMode = %v, want %s", got.BillingMode, tables.BillingMode)
			}
			var gotKeys, wantKeys []string
			for _, k := range got.KeySchema {
				gotKeys = append(gotKeys, k.AttributeName+"/"+k.KeyType)
			}
			for _, k := range want.KeySchema() {
				wantKeys = append(wantKeys, *k.AttributeName+"/"+string(k.KeyType))
			}
			if !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("KeySchema = %v, want %v", gotKeys, wantKeys)
			}
			var gotAttrs, wantAttrs []string
			for _, a := range got.AttributeDefinitions {
				gotAttrs = append(gotAttrs, a.AttributeName+"/"+a.AttributeType)
			}
			for _, a := range want.AttributeDefinitions() {
				wantAttrs = append(wantAttrs, *a.AttributeName+"/"+string(a.AttributeType))
			}
			sort.Strings(gotAttrs)
			sort.Strings(wantAttrs)
			if !slices.Equal(gotAttrs, wantAttrs) {
				t.Errorf("AttributeDefinitions = %v, want %v", gotAttrs, wantAttrs)
			}
			ttl := got.TimeToLiveSpecification
			switch {
			case want.TTLAttribute == "" && ttl != nil && ttl.Enabled:
				t.Errorf("TTL on %v, but infra/tables has none", ttl.AttributeName)
			case want.TTLAttribute != "" && (ttl == nil || !ttl.Enabled || ttl.AttributeName == nil || *ttl.AttributeName != want.TTLAttribute):
				t.Errorf("TTL = %v, want enabled on %q", at(tpl.resources(), want.LogicalID, "Properties", "TimeToLiveSpecification"), want.TTLAttribute)
			}
		})
	}
	for id := range declared {
		if !known[id] {
			t.Errorf("template.yaml declares table %s, which infra/tables does not define", id)
		}
	}
}
