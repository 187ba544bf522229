package ddblocal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// A delayed answer comes after the write was applied: the caller's
// deadline ends the call, yet the item is there. A dropped answer is the
// same with no answer at all. Without either, the same call succeeds.
func TestProxy(t *testing.T) {
	names := ddblocal.Tables(t)
	direct := ddblocal.Client(t)
	p := ddblocal.NewProxy(t, "")
	// One attempt per call: the SDK would otherwise resend a dropped call.
	proxied := ddb.NewClient(ddblocal.ConfigAt(p.URL), ddb.ClientOptions{Emulator: true, MaxAttempts: 1})
	put := func(timeout time.Duration, pk string) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := proxied.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(names.Counters), Item: ddb.PK(pk)})
		return err
	}
	exists := func(pk string) bool {
		t.Helper()
		out, err := direct.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String(names.Counters), Key: ddb.PK(pk), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item != nil
	}
	// waitExists polls for the item: the emulator applies the write on its
	// own schedule, the proxy only holds the answer back.
	waitExists := func(pk string) bool {
		t.Helper()
		for range 300 {
			if exists(pk) {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}

	if err := put(30*time.Second, "plain"); err != nil || !exists("plain") {
		t.Fatalf("through the proxy with no delay: %v", err)
	}

	p.SetDelay(5 * time.Second)
	err := put(time.Second, "late")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call whose answer is 5 s late, with a 1 s deadline: %v, want the deadline", err)
	}
	if !waitExists("late") {
		t.Fatal("the late call's write was not applied")
	}
	p.SetDelay(0)

	p.DropNext(1)
	if err := put(30*time.Second, "dropped"); err == nil {
		t.Fatal("a call whose answer was dropped succeeded")
	}
	if !waitExists("dropped") {
		t.Fatal("the dropped call's write was not applied")
	}
	if p.Dropped.Load() != 1 {
		t.Fatalf("dropped %d answers, want 1", p.Dropped.Load())
	}
	if err := put(30*time.Second, "after"); err != nil || !exists("after") {
		t.Fatalf("after the drop: %v", err)
	}

	p.Pause()
	errc := make(chan error, 1)
	go func() { errc <- put(30*time.Second, "paused") }()
	time.Sleep(300 * time.Millisecond) // the call is made and held
	if exists("paused") || p.Requests.Load() != 4 {
		t.Fatal("a call made while paused reached the emulator")
	}
	p.Resume()
	if err := <-errc; err != nil || !exists("paused") {
		t.Fatalf("the paused call, resumed: %v", err)
	}
}
