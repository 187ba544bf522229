// Package ddbalerts is the DynamoDB implementation of alerts.Claims, on the
// SPEND_TABLE (infra/tables.Spend), where the spend consumer that sends the
// alerts writes.
//
// One item per claim:
//
//	pk "<claim id>" (alert#<record>#<threshold>#<period ms>#<destination>)  sk "claim"
//	st "pending" | "sent"   tok (the holder's token)   lease (N, unix ms)
//	expires_at (TTL, epoch seconds: a day after the alert's period)
//
// Claim is one conditional UpdateItem:
//
//	SET st = pending, tok = :tok, lease = :lease, expires_at = :exp
//	IF attribute_not_exists(pk) OR (st = pending AND lease <= :now) OR expires_at <= :nows
//
// and on a failed condition the item as it was tells Sent from Busy.
// Settle is one UpdateItem conditioned on tok = :tok AND st = pending:
// SET st = sent, or SET lease = 0 (released).
package ddbalerts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/infra/tables"
	"github.com/sluice-gw/sluice/shared/alerts"
	"github.com/sluice-gw/sluice/shared/ddb"
)

// Store is alerts.Claims on DynamoDB.
type Store struct{ ddb.Table }

var _ alerts.Claims = (*Store)(nil)

// New returns a Store on the spend table named table (build client with
// ddb.NewClient); timeout bounds one call (0: ddb.DefaultTimeout).
func New(client *dynamodb.Client, table string, timeout time.Duration) *Store {
	return &Store{ddb.NewTable(client, table, timeout)}
}

const (
	sortKey = "claim"
	pending = "pending"
	sent    = "sent"
)

func key(id string) ddb.Item {
	return ddb.PKSK(id, sortKey)
}

var names = map[string]string{"#pk": tables.PartitionKey, "#st": "st", "#tok": "tok", "#lease": "lease", "#exp": tables.TTLAttribute}

// Claim implements alerts.Claims.
func (s *Store) Claim(ctx context.Context, id, token string, now time.Time, lease time.Duration, expires time.Time) (alerts.State, error) {
	if err := alerts.ValidClaim(id, token); err != nil {
		return 0, err
	}
	ctx, cancel := s.Call(ctx)
	defer cancel()
	_, err := s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.Name),
		Key:                      key(id),
		UpdateExpression:         aws.String("SET #st = :p, #tok = :tok, #lease = :lease, #exp = :exp"),
		ConditionExpression:      aws.String("attribute_not_exists(#pk) OR (#st = :p AND #lease <= :now) OR #exp <= :nows"),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: ddb.Item{
			":p": ddb.S(pending), ":tok": ddb.S(token), ":lease": ddb.N(now.Add(lease).UnixMilli()),
			":exp": ddb.N(expires.Unix()), ":now": ddb.N(now.UnixMilli()), ":nows": ddb.N(now.Unix()),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ddb.String(ccf.Item, "st") == sent {
			return alerts.Sent, nil
		}
		return alerts.Busy, nil
	}
	if err != nil {
		return 0, fmt.Errorf("claim %s: %w", id, err)
	}
	return alerts.Claimed, nil
}

// Settle implements alerts.Claims.
func (s *Store) Settle(ctx context.Context, id, token string, isSent bool) error {
	if err := alerts.ValidClaim(id, token); err != nil {
		return err
	}
	ctx, cancel := s.Call(ctx)
	defer cancel()
	expr, values := "SET #lease = :zero", ddb.Item{":zero": ddb.N(0)}
	if isSent {
		expr, values = "SET #st = :sent", ddb.Item{":sent": ddb.S(sent)}
	}
	values[":tok"], values[":p"] = ddb.S(token), ddb.S(pending)
	n := map[string]string{"#st": "st", "#tok": "tok"}
	if !isSent {
		n["#lease"] = "lease"
	}
	_, err := s.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Name),
		Key:                       key(id),
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String("#tok = :tok AND #st = :p"),
		ExpressionAttributeNames:  n,
		ExpressionAttributeValues: values,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("settle %s: %w", id, alerts.ErrLost)
	}
	if err != nil {
		return fmt.Errorf("settle %s: %w", id, err)
	}
	return nil
}
