package lambda_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// policy is one SAM policy template use, or one statement of an inline
// policy: its name ("Statement:<service>" for a statement whose actions
// are all of one service) and the resource it is scoped to.
type policy struct {
	name, target string
	actions      []string // inline statements only
}

func (tpl *samTemplate) policies(fn string) []policy {
	var out []policy
	list, _ := at(tpl.resources(), fn, "Properties", "Policies").([]any)
	for _, p := range list {
		// A policy on an optional parameter: !If [Cond, policy, !Ref AWS::NoValue].
		if alt, _ := at(p, "Fn::If").([]any); len(alt) == 3 && refTarget(alt[2]) == "AWS::NoValue" {
			p = alt[1]
		}
		m, ok := p.(map[string]any)
		if !ok {
			out = append(out, policy{name: fmt.Sprint(p)})
			continue
		}
		// A policy on a condition: !If [Cond, policy, !Ref AWS::NoValue].
		if c, _ := m["Fn::If"].([]any); len(c) == 3 && refTarget(c[2]) == "AWS::NoValue" {
			if m, ok = c[1].(map[string]any); !ok {
				out = append(out, policy{name: fmt.Sprint(c[1])})
				continue
			}
		}
		if stmts, ok := m["Statement"].([]any); ok {
			out = append(out, statements(stmts)...)
			continue
		}
		for name, args := range m {
			var target string
			for _, key := range []string{"TableName", "QueueName", "ParameterName"} {
				if v := at(args, key); v != nil {
					if r := refTarget(v); r != "" {
						target = r
					} else if r, attr := getAttTarget(v); r != "" && attr == "QueueName" {
						target = r
					}
				}
			}
			out = append(out, policy{name: name, target: target})
		}
	}
	return out
}

// statements reads inline policy statements: each Allow statement on one
// resource (!GetAtt X.Arn) becomes a policy named by its actions' service.
func statements(stmts []any) []policy {
	var out []policy
	for _, st := range stmts {
		var actions []string
		switch a := at(st, "Action").(type) {
		case string:
			actions = []string{a}
		case []any:
			for _, x := range a {
				actions = append(actions, str(x))
			}
		}
		service := ""
		for _, a := range actions {
			svc, _, _ := strings.Cut(a, ":")
			if service == "" {
				service = svc
			} else if service != svc {
				service = "mixed"
			}
		}
		if str(at(st, "Effect")) != "Allow" || len(actions) == 0 || strings.Contains(strings.Join(actions, ","), "*") {
			service = "broad"
		}
		target, attr := getAttTarget(at(st, "Resource"))
		if attr != "Arn" {
			target = refTarget(at(st, "Resource")) // a parameter's ARNs
		}
		// Resources from a parameter, with a default when it is empty:
		// !If [Cond, [defaults...], !Ref Param].
		if cond, _ := at(st, "Resource", "Fn::If").([]any); len(cond) == 3 {
			target = refTarget(cond[2])
		}
		// Objects of a bucket a parameter names: !Sub "arn:...:s3:::${Param}/*".
		if sub := str(at(st, "Resource", "Fn::Sub")); target == "" && strings.Contains(sub, ":s3:::${") {
			target, _, _ = strings.Cut(strings.SplitN(sub, ":s3:::${", 2)[1], "}")
		}
		out = append(out, policy{name: "Statement:" + service, target: target, actions: actions})
	}
	return out
}

func hasPolicy(ps []policy, target string, names ...string) bool {
	return slices.ContainsFunc(ps, func(p policy) bool { return p.target == target && slices.Contains(names, p.name) })
}

func TestTemplatePoliciesCoverWhatEachFunctionUses(t *testing.T) {
	tpl := loadTemplate(t)
	pkgs := functionPackages(t, tpl)
	dynamo := []string{"DynamoDBCrudPolicy", "DynamoDBReadPolicy", "DynamoDBWritePolicy", "Statement:dynamodb"}
	for _, fn := range tpl.functions() {
		t.Run(fn, func(t *testing.T) {
			ps := tpl.policies(fn)
			vars, _ := at(tpl.resources(), fn, "Properties", "Environment", "Variables").(map[string]any)
			// The code reads no resource the template does not give it.
			for _, name := range envVarsReadBy(t, pkgs[fn]) {
				if _, ok := vars[name]; !ok {
					t.Errorf("functions/%s reads %s, which the template does not set", pkgs[fn], name)
				}
			}
			granted := map[string]bool{}
			for name, v := range vars {
				target := refTarget(v)
				switch resourceEnvVars()[name] {
				case "AWS::DynamoDB::Table":
					if !hasPolicy(ps, target, dynamo...) {
						t.Errorf("%s names table %s, but no DynamoDB policy is scoped to it", name, target)
					}
					granted[target] = true
				case "AWS::SQS::Queue":
					// A sender needs SQSSendMessagePolicy; the queue's own
					// consumer names it too (it polls it outside Lambda).
					if !hasPolicy(ps, target, "SQSSendMessagePolicy") && !(hasPolicy(ps, target, "SQSPollerPolicy") && slices.Contains(tpl.sqsEventQueues(fn), target)) {
						t.Errorf("%s names queue %s, but no SQSSendMessagePolicy (or, for its consumer, SQSPollerPolicy) is scoped to it", name, target)
					}
					granted[target] = true
				}
				if name == "GATEWAY_MASTER_KEY_PARAMETER" {
					if !hasPolicy(ps, "MasterKeyParameterName", "SSMParameterReadPolicy") {
						t.Error("the function reads the master key parameter without SSMParameterReadPolicy on it")
					}
					granted["MasterKeyParameterName"] = true
				}
				if name == "GATEWAY_SALT_KEY_PARAMETER" {
					if !hasPolicy(ps, "SaltKeyParameterName", "SSMParameterReadPolicy") {
						t.Error("the function reads the salt key parameter without SSMParameterReadPolicy on it")
					}
					granted["SaltKeyParameterName"] = true
				}
			}
			if pkgs[fn] == "gateway" { // calls Bedrock with its role; reads the provider keys' secrets
				if !hasPolicy(ps, "BedrockModelArns", "Statement:bedrock") {
					t.Error("the gateway has no bedrock statement scoped by BedrockModelArns")
				}
				granted["BedrockModelArns"] = true
				granted["ProviderSecretArns"] = true
			}
			if pkgs[fn] == "spend" { // the s3 logging callback writes the bucket (docs/callbacks.md)
				if !hasPolicy(ps, "CallbackBucketName", "Statement:s3") {
					t.Error("the spend function has no s3 statement scoped by CallbackBucketName")
				}
				granted["CallbackBucketName"] = true
			}
			for _, q := range tpl.sqsEventQueues(fn) {
				if !hasPolicy(ps, q, "SQSPollerPolicy") {
					t.Errorf("SQS event source on %s without SQSPollerPolicy scoped to it", q)
				}
				granted[q] = true
			}
			// Least privilege: every policy is scoped to a resource the
			// function is given.
			for _, p := range ps {
				if p.target == "" || !granted[p.target] {
					t.Errorf("policy %s on %q: not scoped to a resource this function uses", p.name, p.target)
				}
			}
		})
	}
}

// The gateway may invoke Bedrock models (what Converse and ConverseStream
// need, nothing more), on the ARNs of the BedrockModelArns parameter, by
// default the region's inference profiles and the foundation models.
func TestTemplateBedrockPolicy(t *testing.T) {
	tpl := loadTemplate(t)
	if at(tpl.raw, "Parameters", "BedrockModelArns", "Type") != "CommaDelimitedList" {
		t.Fatal("no BedrockModelArns parameter (CommaDelimitedList)")
	}
	var found []policy
	for _, p := range tpl.policies("GatewayFunction") {
		if p.name == "Statement:bedrock" {
			found = append(found, p)
		}
	}
	if len(found) != 1 || found[0].target != "BedrockModelArns" {
		t.Fatalf("bedrock statements %+v, want one scoped by BedrockModelArns", found)
	}
	want := []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}
	if got := found[0].actions; !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	if at(tpl.raw, "Conditions", "BedrockDefaultModels") == nil {
		t.Error("no BedrockDefaultModels condition")
	}
	for _, fn := range []string{"AdminFunction", "SpendFunction"} {
		for _, p := range tpl.policies(fn) {
			if p.name == "Statement:bedrock" {
				t.Errorf("%s may call Bedrock", fn)
			}
		}
	}
}

// The gateway may read the provider keys' secrets (GetSecretValue, nothing
// more) named by ProviderSecretArns, only when it names some; no other
// function may.
func TestTemplateSecretsPolicy(t *testing.T) {
	tpl := loadTemplate(t)
	if at(tpl.raw, "Parameters", "ProviderSecretArns", "Type") != "CommaDelimitedList" || at(tpl.raw, "Parameters", "ProviderSecretArns", "Default") != "" {
		t.Fatal("no ProviderSecretArns parameter (CommaDelimitedList, default empty)")
	}
	if at(tpl.raw, "Conditions", "HasProviderSecrets") == nil {
		t.Fatal("no HasProviderSecrets condition")
	}
	for _, fn := range tpl.functions() {
		var found []policy
		for _, p := range tpl.policies(fn) {
			if p.name == "Statement:secretsmanager" || slices.ContainsFunc(p.actions, func(a string) bool { return strings.HasPrefix(a, "secretsmanager:") }) {
				found = append(found, p)
			}
		}
		if fn != "GatewayFunction" {
			if len(found) != 0 {
				t.Errorf("%s may read secrets: %+v", fn, found)
			}
			continue
		}
		if len(found) != 1 || found[0].target != "ProviderSecretArns" || !slices.Equal(found[0].actions, []string{"secretsmanager:GetSecretValue"}) {
			t.Fatalf("gateway secrets statements %+v, want one GetSecretValue on ProviderSecretArns", found)
		}
	}
	list, _ := at(tpl.resources(), "GatewayFunction", "Properties", "Policies").([]any)
	conditional := false
	for _, p := range list {
		if c, _ := at(p, "Fn::If").([]any); len(c) == 3 && str(c[0]) == "HasProviderSecrets" {
			conditional = true
		}
	}
	if !conditional {
		t.Error("the secrets statement is not under HasProviderSecrets: an empty parameter would grant on nothing (an invalid policy)")
	}
}
