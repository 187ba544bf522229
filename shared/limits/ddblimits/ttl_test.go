package ddblimits_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/limits"
	"github.com/sluice-gw/sluice/shared/limits/ddblimits"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

// Counter items carry the TTL attribute (window end plus CounterTTL), and a
// full window's item left undeleted past its TTL does not block the next
// window: correctness never waits for TTL deletion.
func TestCounterTTLAttribute(t *testing.T) {
	names := ddblocal.Tables(t)
	client := ddblocal.Client(t)
	st := ddblimits.New(client, names.Counters, ddblimits.Options{})
	ctx := context.Background()
	w := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	scope := limits.Scope{Kind: limits.KindKey, ID: "k", RPM: 1}
	if d, err := st.Admit(ctx, limits.AdmitRequest{Now: w.Add(5 * time.Second), Scopes: []limits.Scope{scope}}); err != nil || !d.Allowed {
		t.Fatalf("first admit: %+v %v", d, err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(names.Counters),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: ddblimits.PK(limits.Slot{Kind: limits.KindKey, ID: "k"}, w)}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("counter item: %v %v", out, err)
	}
	exp, ok := out.Item["expires_at"].(*types.AttributeValueMemberN)
	want := w.Add(time.Minute + limits.CounterTTL).Unix()
	if !ok || exp.Value != strconv.FormatInt(want, 10) {
		t.Fatalf("expires_at = %v, want %d", out.Item["expires_at"], want)
	}
	// Long past the TTL the old item still exists (the emulator, like AWS,
	// deletes lazily): the next window is admitted regardless.
	later := w.Add(time.Hour)
	if d, err := st.Admit(ctx, limits.AdmitRequest{Now: later, Scopes: []limits.Scope{scope}}); err != nil || !d.Allowed {
		t.Fatalf("later window: %+v %v", d, err)
	}
	if d, _ := st.Admit(ctx, limits.AdmitRequest{Now: w.Add(30 * time.Second), Scopes: []limits.Scope{scope}}); d.Allowed {
		t.Fatal("the full window admitted a second request")
	}
}
