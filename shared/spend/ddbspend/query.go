package ddbspend

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sluice-gw/sluice/shared/ddb"
	"github.com/sluice-gw/sluice/shared/spend"
)

// batchGet reads items by key, 100 at a time, consistently.
func (st *Store) batchGet(ctx context.Context, ks []ddb.Item, projection string) ([]ddb.Item, error) {
	var out []ddb.Item
	for len(ks) > 0 {
		n := min(len(ks), 100)
		ka := types.KeysAndAttributes{Keys: ks[:n], ConsistentRead: aws.Bool(true)}
		if projection != "" {
			ka.ProjectionExpression = aws.String("#p")
			ka.ExpressionAttributeNames = map[string]string{"#p": projection}
		}
		req := map[string]types.KeysAndAttributes{st.table: ka}
		ks = ks[n:]
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				if err := backoff(ctx, attempt); err != nil {
					return nil, fmt.Errorf("read spend logs: %w: %w", spend.ErrUnavailable, err)
				}
			}
			cctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
			r, err := st.client.BatchGetItem(cctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("read spend logs: %w: %w", spend.ErrUnavailable, err)
			}
			out = append(out, r.Responses[st.table]...)
			req = r.UnprocessedKeys
		}
	}
	return out, nil
}

// queryAll queries every partition in pks (sort keys beginning with
// prefix, items whose attributes equal filter's non-empty values), a few
// at a time.
func (st *Store) queryAll(ctx context.Context, pks []string, prefix string, filter map[string]string) ([]ddb.Item, error) {
	var (
		mu    sync.Mutex
		out   []ddb.Item
		first error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 8)
	)
	for _, pk := range pks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			items, err := st.query(ctx, pk, prefix, filter, "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out = append(out, items...)
		}()
	}
	wg.Wait()
	return out, first
}

// query reads the items of partition pk whose sort keys begin with prefix
// and whose attributes equal filter's non-empty values; with before, the
// items whose sort keys sort below it, consistently (the hold sweeper).
func (st *Store) query(ctx context.Context, pk, prefix string, filter map[string]string, before string) ([]ddb.Item, error) {
	names := map[string]string{"#pk": aPK}
	values := ddb.Item{":pk": ddb.S(pk)}
	cond := "#pk = :pk"
	switch {
	case prefix != "":
		names["#sk"] = aSK
		values[":pre"] = ddb.S(prefix)
		cond += " AND begins_with(#sk, :pre)"
	case before != "":
		names["#sk"] = aSK
		values[":before"] = ddb.S(before)
		cond += " AND #sk < :before"
	}
	var fs []string
	for a, v := range filter {
		if v == "" {
			continue
		}
		names["#f"+a] = a
		values[":f"+a] = ddb.S(v)
		fs = append(fs, "#f"+a+" = :f"+a)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ConsistentRead:            aws.Bool(before != ""),
	}
	if len(fs) > 0 {
		slices.Sort(fs)
		in.FilterExpression = aws.String(strings.Join(fs, " AND "))
	}
	var out []ddb.Item
	for {
		cctx, cancel := context.WithTimeout(ctx, st.o.Timeout)
		r, err := st.client.Query(cctx, in)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("query spend table: %w: %w", spend.ErrUnavailable, err)
		}
		out = append(out, r.Items...)
		if len(r.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = r.LastEvaluatedKey
	}
}

func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(min(attempt+1, 10)) * 25 * time.Millisecond
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
