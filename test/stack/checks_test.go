package stack_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfn "github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// resolve evaluates a template value (a literal or an intrinsic function)
// against the deployed stack, as CloudFormation did when it created it.
func (s *stack) resolve(t *testing.T, v any) string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		if len(x) != 1 {
			break
		}
		if r, ok := x["Ref"]; ok {
			return s.ref(t, str(r))
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			return s.getAtt(t, str(g[0]), str(g[1]))
		}
		if l, ok := x["Fn::If"].([]any); ok && len(l) == 3 {
			v := l[2]
			if s.condition(t, str(l[0])) {
				v = l[1]
			}
			if isNoValue(v) {
				return ""
			}
			return s.resolve(t, v)
		}
		if sub, ok := x["Fn::Sub"]; ok {
			tmpl, vars := str(sub), map[string]any{}
			if l, ok := sub.([]any); ok && len(l) == 2 {
				tmpl, vars = str(l[0]), mapAt(l[1])
			}
			return subVar.ReplaceAllStringFunc(tmpl, func(m string) string {
				name := m[2 : len(m)-1]
				if v, ok := vars[name]; ok {
					return s.resolve(t, v)
				}
				if res, attr, ok := strings.Cut(name, "."); ok {
					return s.getAtt(t, res, attr)
				}
				return s.ref(t, name)
			})
		}
	}
	t.Fatalf("the test cannot resolve %v: teach resolve (checks_test.go)", v)
	return ""
}

func (s *stack) ref(t *testing.T, name string) string {
	t.Helper()
	if v, ok := s.params[name]; ok {
		return v
	}
	switch name {
	case "AWS::Region":
		return region
	case "AWS::Partition":
		return "aws"
	case "AWS::AccountId":
		return s.account(t)
	case "AWS::StackName":
		return s.name
	}
	if p, ok := s.physical[name]; ok {
		return p
	}
	t.Fatalf("Ref %s: neither a parameter nor a resource of the stack", name)
	return ""
}

func (s *stack) getAtt(t *testing.T, id, attr string) string {
	t.Helper()
	typ := str(at(s.deployed, "Resources", id, "Type"))
	phys := s.ref(t, id)
	switch {
	case typ == "AWS::SQS::Queue" && attr == "Arn":
		return s.queueAttrs(t, phys)[string(sqstypes.QueueAttributeNameQueueArn)]
	case typ == "AWS::SQS::Queue" && attr == "QueueName":
		return phys[strings.LastIndex(phys, "/")+1:]
	case typ == "AWS::Lambda::Function" && attr == "Arn":
		return aws.ToString(s.functionConfig(t, phys).FunctionArn)
	case typ == "AWS::IAM::Role" && attr == "Arn":
		return fmt.Sprintf("arn:aws:iam::%s:role/%s", s.account(t), phys)
	case typ == "AWS::DynamoDB::Table" && attr == "Arn":
		out, err := s.c.ddb.DescribeTable(ctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(phys)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.Table.TableArn)
	}
	t.Fatalf("the test cannot resolve Fn::GetAtt %s.%s (%s): teach getAtt (checks_test.go)", id, attr, typ)
	return ""
}

// account is the stack's account, as moto reports it in ARNs.
func (s *stack) account(t *testing.T) string {
	t.Helper()
	for _, id := range s.resourcesOfType("AWS::Lambda::Function") {
		arn := aws.ToString(s.functionConfig(t, s.physical[id]).FunctionArn)
		if parts := strings.Split(arn, ":"); len(parts) > 4 {
			return parts[4]
		}
	}
	t.Fatal("no function ARN to read the account from")
	return ""
}

func (s *stack) queueAttrs(t *testing.T, url string) map[string]string {
	t.Helper()
	out, err := s.c.sqs.GetQueueAttributes(ctx(t), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("queue %s: %v", url, err)
	}
	return out.Attributes
}

func (s *stack) functionConfig(t *testing.T, name string) *lambda.GetFunctionConfigurationOutput {
	t.Helper()
	out, err := s.c.lambda.GetFunctionConfiguration(ctx(t), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(name)})
	if err != nil {
		t.Fatalf("function %s: %v", name, err)
	}
	return out
}

// checkStack checks that what came up is what the template declares.
func (s *stack) checkStack(t *testing.T) {
	t.Run("resources", s.checkResources)
	t.Run("stripped", s.checkStripped)
	t.Run("outputs", s.checkOutputs)
	t.Run("tables", s.checkTables)
	t.Run("queues", s.checkQueues)
	t.Run("functions", s.checkFunctions)
	t.Run("master key parameter", s.checkMasterKey)
}

func (s *stack) checkResources(t *testing.T) {
	out, err := s.c.cfn.DescribeStackResources(ctx(t), &cfn.DescribeStackResourcesInput{StackName: aws.String(s.name)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range out.StackResources {
		got[aws.ToString(r.LogicalResourceId)] = string(r.ResourceStatus)
		if want := str(at(s.deployed, "Resources", aws.ToString(r.LogicalResourceId), "Type")); want != aws.ToString(r.ResourceType) {
			t.Errorf("%s: type %s, want %s", aws.ToString(r.LogicalResourceId), aws.ToString(r.ResourceType), want)
		}
	}
	for _, id := range sortedKeys(mapAt(s.deployed, "Resources")) {
		if got[id] != "CREATE_COMPLETE" {
			t.Errorf("%s (%s): %q, want CREATE_COMPLETE", id, str(at(s.deployed, "Resources", id, "Type")), got[id])
		}
	}
	for id := range got {
		if mapAt(s.deployed, "Resources", id) == nil {
			t.Errorf("the stack has %s, which the template does not declare", id)
		}
	}
}

// checkStripped checks what moto could not create on the transformed
// template: the function URLs, one per function that declares a
// FunctionUrlConfig, the gateway's streaming.
func (s *stack) checkStripped(t *testing.T) {
	urls := 0
	for _, id := range sortedKeys(mapAt(s.transformed, "Resources")) {
		r := mapAt(s.transformed, "Resources", id)
		if str(r["Type"]) != "AWS::Lambda::Url" {
			continue
		}
		urls++
		target := references(at(r, "Properties", "TargetFunctionArn"))
		if len(target) != 1 || str(at(s.deployed, "Resources", target[0], "Type")) != "AWS::Lambda::Function" {
			t.Errorf("%s: TargetFunctionArn %v is not a function of the stack", id, at(r, "Properties", "TargetFunctionArn"))
			continue
		}
		if a := str(at(r, "Properties", "AuthType")); a != "NONE" {
			t.Errorf("%s: AuthType %q, want NONE (the functions check Bearer keys themselves)", id, a)
		}
		mode := str(at(r, "Properties", "InvokeMode"))
		if s.handlerOf(t, target[0]) == "gateway" && mode != "RESPONSE_STREAM" {
			t.Errorf("%s: the gateway's URL has InvokeMode %q, want RESPONSE_STREAM", id, mode)
		}
		// The permissions SAM adds for a public URL did come up.
		perms := 0
		for _, pid := range s.resourcesOfType("AWS::Lambda::Permission") {
			if slices.Contains(references(at(s.deployed, "Resources", pid, "Properties", "FunctionName")), target[0]) {
				perms++
			}
		}
		if perms == 0 {
			t.Errorf("%s: no AWS::Lambda::Permission lets the public invoke %s", id, target[0])
		}
	}
	if urls == 0 {
		t.Error("the template has no function URL")
	}
	for _, x := range s.stripped {
		id, ok := strings.CutPrefix(x, "Resources.")
		if !ok {
			continue
		}
		switch typ := str(at(s.transformed, "Resources", id, "Type")); typ {
		case "AWS::Lambda::Url", "AWS::CloudWatch::Alarm":
		case "AWS::CloudWatch::Dashboard": // its alarm widget reads the alarms' Arn
		default:
			t.Errorf("stripped %s, a %s, which moto can create", x, typ)
		}
	}
}

// checkOutputs checks every output moto could compute against what it
// names.
func (s *stack) checkOutputs(t *testing.T) {
	outs := mapAt(s.deployed, "Outputs")
	for _, k := range sortedKeys(outs) {
		want := s.resolve(t, at(outs[k], "Value"))
		if got, ok := s.outputs[k]; !ok || got != want {
			t.Errorf("output %s = %q, want %q", k, got, want)
		}
	}
	for k := range s.outputs {
		if _, ok := outs[k]; !ok {
			t.Errorf("output %s, which the template does not declare", k)
		}
	}
}

// isNoValue reports whether v is {"Ref": "AWS::NoValue"}.
func isNoValue(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 1 && m["Ref"] == "AWS::NoValue"
}

// present reports whether v, a property's value, is there once its
// Fn::If is decided (not AWS::NoValue).
func (s *stack) present(t *testing.T, v any) bool {
	t.Helper()
	if isNoValue(v) {
		return false
	}
	if m, ok := v.(map[string]any); ok {
		if l, ok := m["Fn::If"].([]any); ok && len(l) == 3 {
			if s.condition(t, str(l[0])) {
				return s.present(t, l[1])
			}
			return s.present(t, l[2])
		}
	}
	return true
}

// condition decides the template's condition name with the deployed
// parameters (Fn::Not, Fn::And, Fn::Or, Fn::Equals, Fn::Join, Ref,
// Condition: what template.yaml uses).
func (s *stack) condition(t *testing.T, name string) bool {
	t.Helper()
	c, ok := mapAt(s.transformed, "Conditions")[name]
	if !ok {
		t.Fatalf("no condition %s in the template", name)
	}
	return s.truth(t, c)
}

func (s *stack) truth(t *testing.T, v any) bool {
	t.Helper()
	m, _ := v.(map[string]any)
	if len(m) == 1 {
		if c, ok := m["Condition"]; ok {
			return s.condition(t, str(c))
		}
		if l, ok := m["Fn::Not"].([]any); ok && len(l) == 1 {
			return !s.truth(t, l[0])
		}
		if l, ok := m["Fn::And"].([]any); ok {
			for _, c := range l {
				if !s.truth(t, c) {
					return false
				}
			}
			return true
		}
		if l, ok := m["Fn::Or"].([]any); ok {
			for _, c := range l {
				if s.truth(t, c) {
					return true
				}
			}
			return false
		}
		if l, ok := m["Fn::Equals"].([]any); ok && len(l) == 2 {
			return s.value(t, l[0]) == s.value(t, l[1])
		}
	}
	t.Fatalf("the test cannot decide the condition %v: teach truth (checks_test.go)", v)
	return false
}

// value is a condition's operand: a string, or Fn::Join of a list
// (literal or a list parameter's Ref, whose value is comma-delimited).
func (s *stack) value(t *testing.T, v any) string {
	t.Helper()
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		if l, ok := m["Fn::Join"].([]any); ok && len(l) == 2 {
			var parts []string
			switch items := l[1].(type) {
			case []any:
				for _, it := range items {
					parts = append(parts, s.resolve(t, it))
				}
			default:
				parts = strings.Split(s.resolve(t, items), ",")
			}
			return strings.Join(parts, str(l[0]))
		}
	}
	return s.resolve(t, v)
}
