package tables_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestMain(m *testing.M) { os.Exit(ddblocal.Main(m)) }

func TestNames(t *testing.T) {
	env := map[string]string{"KEYS_TABLE": "k", "SPEND_TABLE": ""}
	got := tables.NamesFromEnv(func(k string) string { return env[k] })
	want := tables.Names{Keys: "k", Counters: "sluice-counters", Spend: "sluice-spend"}
	if got != want {
		t.Errorf("NamesFromEnv = %+v, want %+v", got, want)
	}
	env["COUNTERS_TABLE"] = "c"
	if got, want := tables.NamesFromEnv(func(k string) string { return env[k] }, tables.Counters), (tables.Names{Keys: "sluice-keys", Counters: "c", Spend: "sluice-spend"}); got != want {
		t.Errorf("NamesFromEnv(Counters) = %+v, want %+v", got, want)
	}
	if got := tables.WithAffix("p-", "-s"); got.Counters != "p-sluice-counters-s" {
		t.Errorf("WithAffix = %+v", got)
	}
	for _, tb := range tables.All() {
		if tables.DefaultNames().Of(tb) != tb.DefaultName {
			t.Errorf("Of(%s) = %q", tb.LogicalID, tables.DefaultNames().Of(tb))
		}
	}
}

// TestCreate creates the tables in DynamoDB Local twice (idempotent) and
// reads back their key schema, billing mode and TTL.
func TestCreate(t *testing.T) {
	client := ddblocal.Client(t)
	names := ddblocal.Tables(t) // the first Create
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tables.Create(ctx, client, names); err != nil {
		t.Fatalf("second Create: %v", err)
	}
	for _, tb := range tables.All() {
		t.Run(tb.LogicalID, func(t *testing.T) {
			d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(names.Of(tb))})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(d.Table.KeySchema); got != len(tb.KeySchema()) {
				t.Errorf("key schema has %d elements, want %d", got, len(tb.KeySchema()))
			}
			for i, ks := range d.Table.KeySchema {
				if aws.ToString(ks.AttributeName) != aws.ToString(tb.KeySchema()[i].AttributeName) || ks.KeyType != tb.KeySchema()[i].KeyType {
					t.Errorf("key %d = %s %s", i, aws.ToString(ks.AttributeName), ks.KeyType)
				}
			}
			if bm := d.Table.BillingModeSummary; bm == nil || bm.BillingMode != types.BillingModePayPerRequest {
				t.Errorf("billing mode = %+v, want PAY_PER_REQUEST", bm)
			}
			ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(names.Of(tb))})
			if err != nil {
				t.Fatal(err)
			}
			enabled := ttl.TimeToLiveDescription.TimeToLiveStatus == types.TimeToLiveStatusEnabled
			if enabled != (tb.TTLAttribute != "") || (enabled && aws.ToString(ttl.TimeToLiveDescription.AttributeName) != tb.TTLAttribute) {
				t.Errorf("ttl = %+v, want attribute %q", ttl.TimeToLiveDescription, tb.TTLAttribute)
			}
		})
	}
}
