package stack_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/infra/tables"
)

// checkTables checks each table of infra/tables, live in moto's DynamoDB.
// Moto's CloudFormation ignores TimeToLiveSpecification and
// PointInTimeRecoverySpecification; when it reports them off, they are
// checked on the template instead, and the test says so.
func (s *stack) checkTables(t *testing.T) {
	for _, tb := range tables.All() {
		t.Run(tb.LogicalID, func(t *testing.T) {
			name := s.physical[tb.LogicalID]
			if name == "" {
				t.Fatalf("the stack has no %s", tb.LogicalID)
			}
			out, err := s.c.ddb.DescribeTable(ctx(t), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			d := out.Table
			if d.TableStatus != ddbtypes.TableStatusActive {
				t.Errorf("status %s", d.TableStatus)
			}
			if got, want := keyStrings(d.KeySchema), keyStrings(tb.KeySchema()); !slices.Equal(got, want) {
				t.Errorf("key schema %v, want %v", got, want)
			}
			if got, want := attrStrings(d.AttributeDefinitions), attrStrings(tb.AttributeDefinitions()); !slices.Equal(got, want) {
				t.Errorf("attributes %v, want %v", got, want)
			}
			if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != tables.BillingMode {
				t.Errorf("billing mode %+v, want %s", d.BillingModeSummary, tables.BillingMode)
			}
			ttl, err := s.c.ddb.DescribeTimeToLive(ctx(t), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			spec := mapAt(s.deployed, "Resources", tb.LogicalID, "Properties", "TimeToLiveSpecification")
			switch d := ttl.TimeToLiveDescription; {
			case d != nil && d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled:
				if aws.ToString(d.AttributeName) != tb.TTLAttribute {
					t.Errorf("TTL on %q, want %q", aws.ToString(d.AttributeName), tb.TTLAttribute)
				}
			case tb.TTLAttribute == "":
			default:
				t.Logf("moto's CloudFormation did not apply TimeToLiveSpecification; checked on the template")
				if spec["Enabled"] != true || str(spec["AttributeName"]) != tb.TTLAttribute {
					t.Errorf("TimeToLiveSpecification %v, want enabled on %q", spec, tb.TTLAttribute)
				}
			}
		})
	}
}

func keyStrings(ks []ddbtypes.KeySchemaElement) []string {
	var out []string
	for _, k := range ks {
		out = append(out, aws.ToString(k.AttributeName)+"/"+string(k.KeyType))
	}
	return out
}

func attrStrings(as []ddbtypes.AttributeDefinition) []string {
	var out []string
	for _, a := range as {
		out = append(out, aws.ToString(a.AttributeName)+"/"+string(a.AttributeType))
	}
	slices.Sort(out)
	return out
}

// checkQueues checks each queue's attributes against the template: retention,
// visibility timeout, encryption, and the redrive policy to the dead-letter
// queue.
func (s *stack) checkQueues(t *testing.T) {
	ids := s.resourcesOfType("AWS::SQS::Queue")
	if len(ids) == 0 {
		t.Fatal("no queue")
	}
	redriven := 0
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			props := mapAt(s.deployed, "Resources", id, "Properties")
			attrs := s.queueAttrs(t, s.physical[id])
			for _, k := range []string{"VisibilityTimeout", "MessageRetentionPeriod", "SqsManagedSseEnabled", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"} {
				if v, ok := props[k]; ok {
					if got, want := attrs[k], s.resolve(t, v); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
			}
			rp := mapAt(props, "RedrivePolicy")
			if rp == nil {
				if attrs["RedrivePolicy"] != "" {
					t.Errorf("RedrivePolicy %s, which the template does not set", attrs["RedrivePolicy"])
				}
				return
			}
			redriven++
			var got struct {
				DeadLetterTargetArn string `json:"deadLetterTargetArn"`
				MaxReceiveCount     any    `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(attrs["RedrivePolicy"]), &got); err != nil {
				t.Fatalf("RedrivePolicy %q: %v", attrs["RedrivePolicy"], err)
			}
			if want := s.resolve(t, rp["deadLetterTargetArn"]); got.DeadLetterTargetArn != want {
				t.Errorf("dead-letter target %q, want %q", got.DeadLetterTargetArn, want)
			}
			if fmt.Sprint(got.MaxReceiveCount) != s.resolve(t, rp["maxReceiveCount"]) {
				t.Errorf("maxReceiveCount %v, want %v", got.MaxReceiveCount, rp["maxReceiveCount"])
			}
		})
	}
	if redriven == 0 {
		t.Error("no queue has a redrive policy to a dead-letter queue")
	}
}
