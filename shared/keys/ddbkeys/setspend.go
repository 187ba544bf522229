package ddbkeys

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/keys"
)

// SetSpend implements keys.Admin: it reads the record's budget_duration,
// then SETs its spend state (keys.SpendAfterSet) conditioned on that
// duration, so that a concurrent budget_duration change re-reads.
func (st *Store) SetSpend(ctx context.Context, r keys.Ref, nanos int64, at time.Time) error {
	what := whatOf(r)
	if nanos < 0 {
		return fmt.Errorf("set spend of %s to %d nano-USD: %w: negative", what, nanos, keys.ErrInvalid)
	}
	for attempt := 0; ; attempt++ {
		item, err := st.get(ctx, r.String(), what)
		if err != nil {
			return err
		}
		b := decodeSettings(item).Budget
		s := keys.SpendAfterSet(b, nanos, at)
		names := map[string]string{"#pk": attrPK, "#spend": attrSpend, "#pspend": attrPeriodSpend, "#ps": attrPeriodStart, "#sa": attrSoftAlerted, "#dur": attrDuration}
		values := ddb.Item{":v": money(s.Total), ":p": money(s.Period)}
		expr := "SET #spend = :v, #pspend = :p REMOVE #sa, #ps"
		cond := "attribute_exists(#pk) AND attribute_not_exists(#dur)"
		if b.Duration != "" {
			expr = "SET #spend = :v, #pspend = :p, #ps = :ps REMOVE #sa"
			values[":ps"] = ddb.N(s.PeriodStart.UnixMilli())
			cond = "attribute_exists(#pk) AND #dur = :dur"
			values[":dur"] = ddb.S(b.Duration)
		}
		_, err = st.runUpdate(ctx, &types.Update{
			TableName: aws.String(st.table), Key: ddb.PK(r.String()), UpdateExpression: aws.String(expr),
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		}, types.ReturnValueNone)
		switch {
		case err == nil:
			return nil
		case !ddb.ConditionFailed(err):
			return wrap("set spend of", what, err)
		case attempt == 4:
			return fmt.Errorf("set spend of %s: %w: its budget_duration kept changing", what, keys.ErrUnavailable)
		}
		if err := backoff(ctx, attempt+1); err != nil {
			return err
		}
	}
}
