package ddbkeys_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/keys/ddbkeys"
	"github.com/sluice-gw/sluice/shared/keys/keystest"
	"github.com/sluice-gw/sluice/test/ddblocal"
)

func TestConformance(t *testing.T) {
	tables := map[*testing.T]string{}
	keystest.Run(t, func(t *testing.T) keystest.Store {
		name, ok := tables[t]
		if !ok {
			name = ddblocal.Tables(t).Keys
			tables[t] = name
		}
		return ddbkeys.New(ddblocal.Client(t), name, ddbkeys.Options{})
	})
}

// A regeneration leaves a forwarding marker at moved#<old hash> that
// expires after keys.MoveTTL (expires_at, the tables' TTL attribute); an
// expired marker forwards nothing even while its item remains.
func TestMoveMarker(t *testing.T) {
	c := context.Background()
	client := ddblocal.Client(t)
	table := ddblocal.Tables(t).Keys
	st := ddbkeys.New(client, table, ddbkeys.Options{})
	old, nk := keys.Key{Hash: keys.HashSecret("sk-old")}, keys.Key{Hash: keys.HashSecret("sk-new")}
	if err := st.CreateKey(c, old); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := st.RegenerateKey(c, old.Hash, nk); err != nil {
		t.Fatal(err)
	}
	pk := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "moved#" + old.Hash}}
	out, err := client.GetItem(c, &dynamodb.GetItemInput{TableName: aws.String(table), Key: pk, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	str := func(name string) string {
		v, _ := out.Item[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	var marker struct {
		Kind, KeyHash string
		Expires       int64
	}
	marker.Kind, marker.KeyHash = str("kind"), str("key_hash")
	if v, ok := out.Item["expires_at"].(*types.AttributeValueMemberN); ok {
		marker.Expires, _ = strconv.ParseInt(v.Value, 10, 64)
	}
	if exp := time.Unix(marker.Expires, 0); marker.Kind != "moved" || marker.KeyHash != nk.Hash ||
		exp.Before(before.Add(keys.MoveTTL-time.Second)) || exp.After(time.Now().Add(keys.MoveTTL)) {
		t.Fatalf("marker %+v, want kind moved, key_hash %s, expires_at in MoveTTL", marker, nk.Hash)
	}
	// Expired (DynamoDB deletes lazily, or not at all without TTL on).
	_, err = client.UpdateItem(c, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: pk, UpdateExpression: aws.String("SET expires_at = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().Unix()-1, 10)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplySpend(c, []keys.SpendDelta{{Ref: keys.Ref{Kind: keys.KindKey, ID: old.Hash}, Nanos: 5, At: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if k, err := st.GetKey(c, nk.Hash); err != nil || k.Spend != 0 {
		t.Errorf("new key after an expired marker: %+v, %v; want no spend", k, err)
	}
}
