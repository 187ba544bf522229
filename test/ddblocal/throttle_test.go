package ddblocal

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
)

// The write units of each call, as DynamoDB counts them.
func TestItemWrites(t *testing.T) {
	big := `{"S":"` + strings.Repeat("x", 1500) + `"}`
	for _, tt := range []struct {
		name, op, body string
		want           []ItemWrite
	}{
		{"read", "GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}}}`, nil},
		{"bad json", "PutItem", `{`, nil},
		{"small put", "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"n":{"N":"1"}}}`, []ItemWrite{{"t\x00" + `{"S":"a"}`, 1}}},
		{"1.5 KB put", "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"v":` + big + `}}`, []ItemWrite{{"t\x00" + `{"S":"a"}`, 2}}},
		{"update", "UpdateItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"UpdateExpression":"ADD n :one","ExpressionAttributeValues":{":one":{"N":"1"}}}`, []ItemWrite{{"t\x00" + `{"S":"a"}`, 1}}},
		{"delete with sort key", "DeleteItem", `{"TableName":"t","Key":{"pk":{"S":"a"},"sk":{"S":"b"}}}`, []ItemWrite{{"t\x00" + `{"S":"a"}`, 1}}},
		{"transaction: twice, condition checks free", "TransactWriteItems", `{"TransactItems":[{"Update":{"TableName":"t","Key":{"pk":{"S":"a"}}}},{"Put":{"TableName":"u","Item":{"pk":{"S":"b"},"v":` + big + `}}},{"ConditionCheck":{"TableName":"t","Key":{"pk":{"S":"c"}}}}]}`,
			[]ItemWrite{{"t\x00" + `{"S":"a"}`, 2}, {"u\x00" + `{"S":"b"}`, 4}}},
		{"batch", "BatchWriteItem", `{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"}}}},{"DeleteRequest":{"Key":{"pk":{"S":"b"}}}}]}}`,
			[]ItemWrite{{"t\x00" + `{"S":"a"}`, 1}, {"t\x00" + `{"S":"b"}`, 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ItemWrites(tt.op, []byte(tt.body))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("write %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// Through the SDK, on a clock the test moves: a partition's writes beyond
// its bucket get DynamoDB's throttling errors (a single write the SDK's
// throttle code, a transaction its cancellation reasons) and never reach
// the emulator; another partition is unaffected; time refills the bucket.
func TestThrottler(t *testing.T) {
	names := Tables(t)
	p := NewThrottler(t, "", 3)
	var mu sync.Mutex
	clock := time.Unix(1_000_000, 0)
	p.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	c := ddb.NewClient(ConfigAt(p.URL), ddb.ClientOptions{Emulator: true, MaxAttempts: 1})
	direct := Client(t)
	ctx := context.Background()
	add := func(pk string) error {
		_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(names.Counters), Key: ddb.PK(pk),
			UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: ddb.Item{":one": ddb.N(1)},
		})
		return err
	}
	count := func(pk string) int64 {
		t.Helper()
		out, err := direct.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(names.Counters), Key: ddb.PK(pk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return ddb.Int0(out.Item, "n")
	}
	for i := range 3 {
		if err := add("hot"); err != nil {
			t.Fatalf("write %d within the bucket: %v", i, err)
		}
	}
	err := add("hot")
	var ptee *types.ProvisionedThroughputExceededException
	if !errors.As(err, &ptee) {
		t.Fatalf("4th write of 3 units a second: %v, want ProvisionedThroughputExceededException", err)
	}
	if err := add("cold"); err != nil {
		t.Fatalf("another partition: %v", err)
	}
	if n := count("hot"); n != 3 {
		t.Fatalf("hot counter %d, want 3: a throttled write reached the emulator", n)
	}
	p.ThrottleCode = "ThrottlingException"
	if err := add("hot"); err == nil || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Fatalf("with ThrottleCode ThrottlingException: %v", err)
	}

	// A transaction: 2 units per item; "cold" has 2 left, "hot" none.
	tx := func() error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(names.Counters), Key: ddb.PK("cold"), UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: ddb.Item{":one": ddb.N(1)}}},
			{Update: &types.Update{TableName: aws.String(names.Counters), Key: ddb.PK("hot"), UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: ddb.Item{":one": ddb.N(1)}}},
		}})
		return err
	}
	var tce *types.TransactionCanceledException
	if err := tx(); !errors.As(err, &tce) || len(tce.CancellationReasons) != 2 ||
		aws.ToString(tce.CancellationReasons[0].Code) != "None" || aws.ToString(tce.CancellationReasons[1].Code) != "ThrottlingError" {
		t.Fatalf("transaction on a throttled item: %v, want cancelled [None, ThrottlingError]", err)
	}
	if count("cold") != 1 || count("hot") != 3 {
		t.Fatal("a throttled transaction wrote")
	}
	advance(time.Second) // 3 units back: enough for the transaction's 2 on each
	if err := tx(); err != nil {
		t.Fatalf("after a second: %v", err)
	}
	if count("cold") != 2 || count("hot") != 4 {
		t.Fatal("the transaction after the refill did not write")
	}
	if p.Throttled.Load() != 3 || p.ThrottledCalls.Load() != 3 || p.Writes.Load() != 6 || p.Units.Load() != 8 {
		t.Fatalf("counters: throttled %d in %d calls, %d writes of %d units; want 3 in 3, 6 of 8",
			p.Throttled.Load(), p.ThrottledCalls.Load(), p.Writes.Load(), p.Units.Load())
	}
}
