package lambda_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/app/appenv"
)

// resourceEnvVars are the environment variables that name a deployed
// resource, with the resource type each must refer to.
func resourceEnvVars() map[string]string {
	m := map[string]string{tables.SpendQueueEnvVar: "AWS::SQS::Queue"}
	for _, tb := range tables.All() {
		m[tb.EnvVar] = "AWS::DynamoDB::Table"
	}
	return m
}

func TestTemplateEnvironmentRefersToDeclaredResources(t *testing.T) {
	tpl := loadTemplate(t)
	kinds := resourceEnvVars()
	for _, fn := range tpl.functions() {
		t.Run(fn, func(t *testing.T) {
			vars, _ := at(tpl.resources(), fn, "Properties", "Environment", "Variables").(map[string]any)
			for name, v := range vars {
				want, isResource := kinds[name]
				if !isResource && (strings.HasSuffix(name, "_TABLE") || strings.HasSuffix(name, "_QUEUE_URL")) {
					t.Errorf("%s names a table or queue that infra/tables does not know", name)
					continue
				}
				if isResource {
					target := refTarget(v)
					if target == "" {
						t.Errorf("%s = %v: want !Ref to a declared resource", name, v)
					} else if got := tpl.resourceType(target); got != want {
						t.Errorf("%s = !Ref %s, a %q; want a declared %s", name, target, got, want)
					}
				}
				if s, ok := v.(string); ok && (strings.Contains(s, "sk-") || strings.Contains(strings.ToLower(name), "master_key") && name != "GATEWAY_MASTER_KEY_PARAMETER") {
					t.Errorf("%s looks like a secret in plain text", name)
				}
			}
			if v, ok := vars["GATEWAY_MASTER_KEY_PARAMETER"]; ok {
				sub := str(at(v, "Fn::Sub"))
				if sub != "/${MasterKeyParameterName}" || at(tpl.raw, "Parameters", "MasterKeyParameterName") == nil {
					t.Errorf("GATEWAY_MASTER_KEY_PARAMETER = %v: want !Sub \"/${MasterKeyParameterName}\" on a declared parameter", v)
				}
			}
		})
	}
}

// envVarsReadBy returns the resource environment variables functions/<pkg>
// reads: every name its settings (appenv.Read, run as in Lambda) look up,
// and any name written as a literal in its own sources.
func envVarsReadBy(t *testing.T, pkg string) []string {
	t.Helper()
	candidates := resourceEnvVars()
	candidates["GATEWAY_MASTER_KEY_PARAMETER"] = ""
	seen := map[string]bool{}
	lookup := func(name string) (string, bool) {
		if _, ok := candidates[name]; ok {
			seen[name] = true
		}
		if name == "AWS_LAMBDA_RUNTIME_API" {
			return "127.0.0.1:9001", true
		}
		return "", false
	}
	if _, err := appenv.Read(appenv.Function(pkg), lookup, []string{pkg}); err != nil {
		t.Fatalf("appenv.Read(%s) in Lambda with no other variable: %v", pkg, err)
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "functions", pkg, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name := range candidates {
			if strings.Contains(string(b), `"`+name+`"`) {
				seen[name] = true
			}
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
