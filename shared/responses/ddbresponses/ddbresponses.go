// Package ddbresponses is the DynamoDB implementation of responses.Store,
// on the COUNTERS_TABLE (infra/tables.Counters): the table of short-lived
// state that expires by itself, so the stack gains no table.
//
// One item per stored response:
//
//	pk "resp#<response id>"   k (S): the creating key's hash; t (S): its team
//	                          d (S): the deployment; p (S): previous_response_id
//	                          in (B): the turn's input items, gzip
//	                          r (B): the response object, gzip
//	                          c (N, unix ms): created
//	                          expires_at (N, unix s): the TTL
//
// Reads are strongly consistent: a conversation is continued, often within
// a second, by whichever instance gets the next request. An item is at
// most 400 KB: the JSON is compressed (text shrinks 4 to 10 times), and a
// response still too large is not stored (Put fails, the gateway logs it).
package ddbresponses

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/responses"
)

// Options tune a Store.
type Options = ddb.Options

// Store is a responses.Store on DynamoDB.
type Store struct{ ddb.Table }

var _ responses.Store = (*Store)(nil)

// New returns a Store on the counters table named table.
func New(client *dynamodb.Client, table string, o Options) *Store {
	return &Store{o.Table(client, table)}
}

// PK returns the partition key of a response's item.
func PK(id string) string { return "resp#" + id }

// maxItem is DynamoDB's item size limit.
const maxItem = 400 << 10

// Put implements responses.Store.
func (s *Store) Put(ctx context.Context, r responses.Record) error {
	if r.ID == "" {
		return &apierr.InvalidParam{Param: "id", Reason: "empty"}
	}
	item := ddb.PK(PK(r.ID))
	for name, v := range map[string]string{"k": r.KeyHash, "t": r.TeamID, "d": r.Deployment, "p": r.Previous} {
		if v != "" {
			item[name] = ddb.S(v)
		}
	}
	in, out := compress(r.Input), compress(r.Response)
	if len(in)+len(out) > maxItem-1024 {
		return &apierr.InvalidParam{Param: "response", Reason: "larger than DynamoDB's 400 KB item limit, compressed (" + strconv.Itoa(len(in)+len(out)) + " bytes)"}
	}
	item["in"] = &types.AttributeValueMemberB{Value: in}
	item["r"] = &types.AttributeValueMemberB{Value: out}
	item["c"] = ddb.N(r.Created.UnixMilli())
	if !r.Expires.IsZero() {
		item["expires_at"] = ddb.N(r.Expires.Unix())
		item["x"] = ddb.N(r.Expires.UnixMilli()) // exact expiry; the TTL is in seconds and deletes late
	}
	ctx, cancel := s.Call(ctx)
	defer cancel()
	if _, err := s.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.Name), Item: item}); err != nil {
		return wrap("put response "+r.ID, err)
	}
	return nil
}

// Get implements responses.Store.
func (s *Store) Get(ctx context.Context, id string, now time.Time) (responses.Record, error) {
	ctx, cancel := s.Call(ctx)
	defer cancel()
	out, err := s.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Name), Key: ddb.PK(PK(id)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return responses.Record{}, wrap("get response "+id, err)
	}
	it := out.Item
	if it == nil {
		return responses.Record{}, apierr.ErrNotFound
	}
	r := responses.Record{ID: id, KeyHash: ddb.String(it, "k"), TeamID: ddb.String(it, "t"), Deployment: ddb.String(it, "d"), Previous: ddb.String(it, "p")}
	if ms, ok := ddb.Int(it, "c"); ok {
		r.Created = time.UnixMilli(ms).UTC()
	}
	if ms, ok := ddb.Int(it, "x"); ok {
		r.Expires = time.UnixMilli(ms).UTC()
		if !now.Before(r.Expires) {
			return responses.Record{}, apierr.ErrNotFound
		}
	}
	if r.Input, err = decompress(it["in"]); err == nil {
		r.Response, err = decompress(it["r"])
	}
	if err != nil {
		return responses.Record{}, fmt.Errorf("get response %s: %w", id, err)
	}
	return r, nil
}

// Delete implements responses.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	ctx, cancel := s.Call(ctx)
	defer cancel()
	_, err := s.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.Name), Key: ddb.PK(PK(id)),
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if ddb.ConditionFailed(err) {
		return apierr.ErrNotFound
	}
	if err != nil {
		return wrap("delete response "+id, err)
	}
	return nil
}

func wrap(what string, err error) error {
	if ddb.Unavailable(err) {
		return fmt.Errorf("%s: %w", what, errors.Join(apierr.ErrUnavailable, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

func compress(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func decompress(v types.AttributeValue) ([]byte, error) {
	b, ok := v.(*types.AttributeValueMemberB)
	if !ok {
		return nil, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(b.Value))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return out, nil
}
