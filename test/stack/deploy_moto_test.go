package stack_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// notInMoto are the resource types moto's CloudFormation cannot create.
// Moto (5.x) has no AWS::Lambda::Url: its CreateStack fails outright on an
// output that reads one's FunctionUrl. It has no AWS::CloudWatch::Alarm
// either: it skips one with a warning, so it never comes up and a GetAtt of
// its Arn (the dashboard's alarm widget) fails the stack. Only these, the
// resources that refer to them (the dashboard) and the outputs that refer to
// any of those, are taken out; the test checks them on the transformed
// template (checkStripped, and the monitoring_*_test.go files for the
// alarms and the dashboard).
var notInMoto = []string{"AWS::Lambda::Url", "AWS::CloudWatch::Alarm"}

// stripForMoto returns a copy of the template without the resources moto
// cannot create, the resources and outputs that refer to them, and what it
// took out.
func stripForMoto(tpl map[string]any) (map[string]any, []string) {
	out := deepCopy(tpl).(map[string]any)
	var stripped []string
	gone := map[string]bool{}
	res := mapAt(out, "Resources")
	for _, id := range sortedKeys(res) {
		if slices.Contains(notInMoto, str(at(res[id], "Type"))) {
			gone[id] = true
			delete(res, id)
			stripped = append(stripped, "Resources."+id)
		}
	}
	for changed := true; changed; {
		changed = false
		for _, id := range sortedKeys(res) {
			if slices.ContainsFunc(references(res[id]), func(r string) bool { return gone[r] }) {
				gone[id], changed = true, true
				delete(res, id)
				stripped = append(stripped, "Resources."+id)
			}
		}
	}
	outs := mapAt(out, "Outputs")
	for _, id := range sortedKeys(outs) {
		for _, r := range references(outs[id]) {
			if gone[r] {
				delete(outs, id)
				stripped = append(stripped, "Outputs."+id)
				break
			}
		}
	}
	return out, stripped
}

// references returns the logical ids a template value refers to: Ref,
// Fn::GetAtt, ${...} in Fn::Sub, DependsOn.
func references(v any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch k {
				case "Ref":
					out = append(out, str(e))
				case "Fn::GetAtt":
					if l, ok := e.([]any); ok && len(l) > 0 {
						out = append(out, str(l[0]))
					} else if s, ok := e.(string); ok {
						out = append(out, strings.SplitN(s, ".", 2)[0])
					}
				case "Fn::Sub":
					s := str(e)
					if l, ok := e.([]any); ok && len(l) > 0 {
						s = str(l[0])
					}
					for _, m := range subVar.FindAllStringSubmatch(s, -1) {
						out = append(out, strings.SplitN(m[1], ".", 2)[0])
					}
				case "DependsOn":
					if s, ok := e.(string); ok {
						out = append(out, s)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

var subVar = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// decideRolePolicies decides, as CloudFormation would with the deployed
// parameters, each Fn::If in an IAM role's Policies list, dropping those
// that come to AWS::NoValue: moto's IAM fails on such an item (a 500 on
// CreateStack, which the SDK retries into AlreadyExistsException), while
// CloudFormation drops it. The optional policies (Secrets Manager, the
// callback bucket, ...) stay optional in the README's deploy command.
func (s *stack) decideRolePolicies(t *testing.T) {
	t.Helper()
	res := mapAt(s.deployed, "Resources")
	for _, id := range sortedKeys(res) {
		if str(at(res[id], "Type")) != "AWS::IAM::Role" {
			continue
		}
		props, _ := at(res[id], "Properties").(map[string]any)
		policies, ok := props["Policies"].([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(policies))
		for _, p := range policies {
			for {
				m, ok := p.(map[string]any)
				l, isIf := m["Fn::If"].([]any)
				if !ok || !isIf || len(l) != 3 {
					break
				}
				if s.condition(t, str(l[0])) {
					p = l[1]
				} else {
					p = l[2]
				}
			}
			if !isNoValue(p) {
				kept = append(kept, p)
			}
		}
		props["Policies"] = kept
	}
}
