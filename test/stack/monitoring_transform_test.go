package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// transformed is one run of samtransform.py: the CloudFormation template and
// the parameter values it was given, defaults filled in.
type transformed struct {
	tpl    map[string]any
	params map[string]string
}

var (
	samPythonOnce sync.Once
	samPython     string
	samPythonErr  string
)

// requireSAMTranslator returns a python3 that imports samtranslator, or
// fails (skips under -short) saying how to install it.
func requireSAMTranslator(t *testing.T) string {
	t.Helper()
	samPythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			samPythonErr = "the template tests need python3 with aws-sam-translator (" + pipInstall + ")"
			return
		}
		if out, err := exec.Command(p, "-c", "import samtranslator").CombinedOutput(); err != nil {
			samPythonErr = fmt.Sprintf("the template tests need aws-sam-translator for %s: %s\ninstall it with: %s", p, strings.TrimSpace(string(out)), pipInstall)
			return
		}
		samPython = p
	})
	if samPythonErr != "" {
		if testing.Short() {
			t.Skip(samPythonErr)
		}
		t.Fatal(samPythonErr)
	}
	return samPython
}

var (
	transformMu    sync.Mutex
	transformCache = map[string]transformed{}
)

// transform runs test/stack/samtransform.py on template.yaml with params, as
// `sam deploy --parameter-overrides` would (placeholder code locations),
// once per set of parameters. Callers must not modify the result.
func transform(t *testing.T, params map[string]string) transformed {
	t.Helper()
	key := fmt.Sprint(params)
	transformMu.Lock()
	defer transformMu.Unlock()
	if tr, ok := transformCache[key]; ok {
		return tr
	}
	tr := runTransform(t, params)
	transformCache[key] = tr
	return tr
}

func runTransform(t *testing.T, params map[string]string) transformed {
	t.Helper()
	py := requireSAMTranslator(t)
	root := repoRoot(t)
	args := []string{filepath.Join(root, "test", "stack", "samtransform.py"), filepath.Join(root, "template.yaml")}
	for _, fn := range samFunctions(t) {
		args = append(args, "--code", fn+"=s3://bucket/"+fn+".zip")
	}
	for _, k := range sortedKeys(params) {
		args = append(args, "--param", k+"="+params[k])
	}
	cmd := exec.Command(py, args...)
	cmd.Dir = root
	cmd.Env = hostEnv("AWS_DEFAULT_REGION=" + region)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aws-sam-translator %v: %v\n%s", params, err, stderr.String())
	}
	tr := transformed{params: map[string]string{}}
	if err := json.Unmarshal(out, &tr.tpl); err != nil {
		t.Fatalf("aws-sam-translator output: %v", err)
	}
	for name, p := range mapAt(tr.tpl, "Parameters") {
		tr.params[name] = fmt.Sprint(at(p, "Default"))
		if at(p, "Default") == nil {
			tr.params[name] = ""
		}
	}
	for k, v := range params {
		if _, ok := mapAt(tr.tpl, "Parameters")[k]; !ok {
			t.Fatalf("parameter %s: the template has no such parameter", k)
		}
		tr.params[k] = v
	}
	return tr
}

// param is a parameter's value as a Ref yields it: a list for a
// CommaDelimitedList, else a string.
func (tr transformed) param(t *testing.T, name string) any {
	t.Helper()
	v, ok := tr.params[name]
	if !ok {
		t.Fatalf("Ref %s: no such parameter", name)
	}
	if str(at(tr.tpl, "Parameters", name, "Type")) == "CommaDelimitedList" {
		var l []any
		for _, s := range strings.Split(v, ",") {
			l = append(l, strings.TrimSpace(s))
		}
		return l
	}
	return v
}

// condition evaluates a condition function as CloudFormation does (the
// functions conditions may use: Fn::Equals, Fn::Not, Fn::And, Fn::Or,
// Condition, with Ref to parameters and Fn::Join inside).
func (tr transformed) condition(t *testing.T, v any) bool {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("condition %v: want one condition function", v)
	}
	for fn, arg := range m {
		l, _ := arg.([]any)
		switch fn {
		case "Fn::Equals":
			if len(l) != 2 {
				t.Fatalf("Fn::Equals %v: want two values", arg)
			}
			a, b := tr.value(t, l[0]), tr.value(t, l[1])
			return fmt.Sprint(a) == fmt.Sprint(b)
		case "Fn::Not":
			if len(l) != 1 {
				t.Fatalf("Fn::Not %v: want one condition", arg)
			}
			return !tr.condition(t, l[0])
		case "Fn::And", "Fn::Or":
			and := fn == "Fn::And"
			for _, c := range l {
				if tr.condition(t, c) != and {
					return !and
				}
			}
			return and
		case "Condition":
			return tr.named(t, str(arg))
		}
		t.Fatalf("condition function %s: teach condition (monitoring_transform_test.go)", fn)
	}
	return false
}

// named evaluates the template's condition name.
func (tr transformed) named(t *testing.T, name string) bool {
	t.Helper()
	c := at(tr.tpl, "Conditions", name)
	if c == nil {
		t.Fatalf("condition %s is not declared", name)
	}
	return tr.condition(t, c)
}

// value resolves what a condition compares: Ref to a parameter, Fn::Join,
// literals.
func (tr transformed) value(t *testing.T, v any) any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if r, ok := m["Ref"]; ok {
		return tr.param(t, str(r))
	}
	if j, ok := m["Fn::Join"].([]any); ok && len(j) == 2 {
		list, _ := tr.value(t, j[1]).([]any)
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = fmt.Sprint(tr.value(t, e))
		}
		return strings.Join(parts, str(j[0]))
	}
	t.Fatalf("value %v: teach value (monitoring_transform_test.go)", v)
	return nil
}

// applyConditions returns v with every Fn::If decided, AWS::NoValue
// dropping its property or list item, and Ref to parameters replaced by
// their values: a resource's properties as CloudFormation hands them to the
// service (Ref and GetAtt of resources stay as they are).
func (tr transformed) applyConditions(t *testing.T, v any) (any, bool) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		if f, ok := x["Fn::If"].([]any); ok && len(x) == 1 {
			if len(f) != 3 {
				t.Fatalf("Fn::If %v: want [condition, then, else]", f)
			}
			if tr.named(t, str(f[0])) {
				return tr.applyConditions(t, f[1])
			}
			return tr.applyConditions(t, f[2])
		}
		if r, ok := x["Ref"]; ok && len(x) == 1 {
			if str(r) == "AWS::NoValue" {
				return nil, false
			}
			if _, isParam := tr.params[str(r)]; isParam {
				return tr.param(t, str(r)), true
			}
			return x, true
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if r, keep := tr.applyConditions(t, e); keep {
				out[k] = r
			}
		}
		return out, true
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if r, keep := tr.applyConditions(t, e); keep {
				out = append(out, r)
			}
		}
		return out, true
	}
	return v, true
}

// resources returns the logical ids of the resources of a type, sorted.
func (tr transformed) resources(typ string) []string {
	var out []string
	for _, id := range sortedKeys(mapAt(tr.tpl, "Resources")) {
		if str(at(tr.tpl, "Resources", id, "Type")) == typ {
			out = append(out, id)
		}
	}
	return out
}

// props returns a resource's properties with the conditions applied.
func (tr transformed) props(t *testing.T, id string) map[string]any {
	t.Helper()
	p, _ := tr.applyConditions(t, at(tr.tpl, "Resources", id, "Properties"))
	m, _ := p.(map[string]any)
	return m
}

// gatewayURL returns the logical id of the gateway's function URL.
func (tr transformed) gatewayURL(t *testing.T) string {
	t.Helper()
	for _, id := range tr.resources("AWS::Lambda::Url") {
		if str(at(tr.tpl, "Resources", id, "Properties", "TargetFunctionArn", "Ref")) == "GatewayFunction" {
			return id
		}
	}
	t.Fatal("no function URL targets GatewayFunction")
	return ""
}

func getAtt(v any) (string, string) {
	l, _ := at(v, "Fn::GetAtt").([]any)
	if len(l) != 2 {
		return "", ""
	}
	return str(l[0]), str(l[1])
}

func stringsOf(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, str(e))
	}
	return out
}

// goLiterals returns the string literals of the non-test Go files of a
// repository directory that match re's first group.
func goLiterals(t *testing.T, dir string, re *regexp.Regexp) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
	}
	return sortedKeys(seen)
}
