package ddb_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestCallCount(t *testing.T) {
	client := ddblocal.Client(t)
	names := ddblocal.Tables(t)
	table := aws.String(names.Counters)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}

	tests := []struct {
		name  string
		calls func(ctx context.Context) error
		want  []string
	}{
		{"none", func(context.Context) error { return nil }, nil},
		{"one", func(ctx context.Context) error {
			_, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key})
			return err
		}, []string{"GetItem"}},
		{"two", func(ctx context.Context) error {
			if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: key}); err != nil {
				return err
			}
			_, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key})
			return err
		}, []string{"PutItem", "GetItem"}},
		{"failed call counts", func(ctx context.Context) error {
			_, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("no-such-table"), Key: key})
			if err == nil {
				return errors.New("want an error for a missing table")
			}
			return nil
		}, []string{"GetItem"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, count := ddb.WithCallCount(context.Background())
			if err := tt.calls(ctx); err != nil {
				t.Fatal(err)
			}
			if got := count.Operations(); !slices.Equal(got, tt.want) {
				t.Errorf("operations = %v, want %v", got, tt.want)
			}
			if count.Calls() != len(tt.want) || count.Attempts() < len(tt.want) {
				t.Errorf("calls = %d, attempts = %d, want %d calls", count.Calls(), count.Attempts(), len(tt.want))
			}
		})
	}

	t.Run("uncounted context", func(t *testing.T) {
		if ddb.CallCountFrom(context.Background()) != nil {
			t.Fatal("background context carries a count")
		}
		if _, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: table, Key: key}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUnavailable(t *testing.T) {
	client := func(url string) *dynamodb.Client {
		return dynamodb.NewFromConfig(ddblocal.ConfigAt(url), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	}
	for _, tt := range []struct {
		name string
		url  string
	}{{"connection refused", ddblocal.Refused(t)}, {"no answer", ddblocal.Unanswered(t)}} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := client(tt.url).ListTables(ctx, &dynamodb.ListTablesInput{})
			if err == nil {
				t.Fatal("want an error")
			}
			if !ddb.Unavailable(err) {
				t.Errorf("Unavailable(%v) = false, want true", err)
			}
		})
	}

	t.Run("not unavailable", func(t *testing.T) {
		for _, err := range []error{nil, errors.New("boom"), &types.ResourceNotFoundException{}, &types.ConditionalCheckFailedException{}} {
			if ddb.Unavailable(err) {
				t.Errorf("Unavailable(%v) = true", err)
			}
		}
		for _, err := range []error{&types.ProvisionedThroughputExceededException{}, &types.RequestLimitExceeded{}, &types.InternalServerError{}} {
			if !ddb.Unavailable(err) {
				t.Errorf("Unavailable(%T) = false", err)
			}
		}
	})
}

// TestOnUnavailable: the store-error hook hears of each operation
// DynamoDB did not answer (after the SDK's retries), not of its answers.
func TestOnUnavailable(t *testing.T) {
	var n atomic.Int64
	count := func() { n.Add(1) }
	down := ddb.NewClient(ddblocal.ConfigAt(ddblocal.Refused(t)), ddb.ClientOptions{MaxAttempts: 2, OnUnavailable: count})
	if _, err := down.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err == nil {
		t.Fatal("want an error")
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("unanswered call counted %d times, want 1", got)
	}

	up := ddb.NewClient(ddblocal.Config(t), ddb.ClientOptions{Emulator: true, OnUnavailable: count})
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}
	if _, err := up.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("no-such-table"), Key: key}); err == nil {
		t.Fatal("want an error for a missing table")
	}
	if _, err := up.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Fatalf("answered calls counted: %d, want 1", got)
	}
}
