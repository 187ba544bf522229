package ddblocal

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Throttler is an HTTP proxy in front of DynamoDB Local that models
// DynamoDB's per-partition write ceiling, which the emulator does not
// have: every item write (PutItem, UpdateItem, DeleteItem, each item of a
// TransactWriteItems or BatchWriteItem) draws its write units from a token
// bucket of its partition key (table and "pk"), refilled at Rate units a
// second up to Burst; a write whose bucket lacks its units is answered with
// DynamoDB's own throttling error instead of reaching the emulator:
//
//   - PutItem, UpdateItem, DeleteItem, BatchWriteItem: HTTP 400,
//     __type ...#ProvisionedThroughputExceededException (or
//     ThrottlingException with ThrottleCode), which the AWS SDK's retryer
//     treats as throttling (retried with backoff, within its attempts);
//   - TransactWriteItems: HTTP 400, __type ...#TransactionCanceledException
//     with CancellationReasons naming ThrottlingError on the throttled items
//     and None on the others, as DynamoDB answers (not retried by the SDK).
//
// The write units of an item write are DynamoDB's: ceil(size / 1 KB),
// at least 1, where size is the item's size as the request states it (a
// Put's item; an Update's key and expression values: the counter items
// this project writes are far below 1 KB, so both are 1 unit), twice that
// inside a transaction. A write is drawn whether or not its condition
// holds: a failed conditional write consumes units on DynamoDB too. A
// throttled write draws nothing. Reads pass through unmetered.
//
// Time scale: Rate is the scaled ceiling. DynamoDB's real one is about
// 1,000 units a second per partition; Rate 100 makes a run on one machine
// stand for one ten times its size when its limits and load are scaled
// alike (limits.ScaledWrites).
type Throttler struct {
	// URL is the proxy's address, http://127.0.0.1:<port>.
	URL string
	// Rate is the write units a second each partition key takes; Burst the
	// most its bucket holds (0: Rate, one second's worth).
	Rate, Burst float64
	// ThrottleCode is the error a throttled single write gets:
	// "ProvisionedThroughputExceededException" (the default) or
	// "ThrottlingException".
	ThrottleCode string

	// Counters: Writes are the item writes forwarded, Units their write
	// units, Calls the write calls forwarded, Throttled the item writes
	// refused and ThrottledCalls the calls answered with a throttling
	// error.
	Writes, Units, Calls, Throttled, ThrottledCalls atomic.Int64

	mu      sync.Mutex
	buckets map[string]*bucket
	now     func() time.Time
	srv     *http.Server
	proxy   *httputil.ReverseProxy
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewThrottler starts a throttling proxy on 127.0.0.1:0 in front of the
// emulator (or of target, a URL such as http://127.0.0.1:8000, when not
// empty), rate write units a second per partition key; it stops when the
// test ends. Give a store its URL with ConfigAt.
func NewThrottler(t testing.TB, target string, rate float64) *Throttler {
	t.Helper()
	if target == "" {
		require(t)
		target = endpoint()
	}
	p, err := StartThrottler(target, rate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartThrottler is NewThrottler outside a test; Close stops it.
func StartThrottler(target string, rate float64) (*Throttler, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Throttler{URL: "http://" + l.Addr().String(), Rate: rate, buckets: map[string]*bucket{}, now: time.Now}
	p.proxy = httputil.NewSingleHostReverseProxy(u)
	p.proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Close stops the proxy.
func (p *Throttler) Close() { _ = p.srv.Close() }

// ServeHTTP meters one DynamoDB call and forwards it or answers the
// throttling error.
func (p *Throttler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	writes := ItemWrites(op, body)
	if len(writes) > 0 {
		p.Calls.Add(1)
		if throttled := p.draw(writes); throttled != nil {
			p.ThrottledCalls.Add(1)
			p.answerThrottled(w, op, throttled)
			return
		}
	}
	p.proxy.ServeHTTP(w, r)
}

// draw takes every write's units from its bucket, or none of them when one
// lacks its units; it returns which writes were throttled (nil: none).
func (p *Throttler) draw(writes []ItemWrite) []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	burst := p.Burst
	if burst <= 0 {
		burst = p.Rate
	}
	var throttled []bool
	for i, wr := range writes {
		b := p.buckets[wr.Partition]
		if b == nil {
			b = &bucket{tokens: burst, last: now}
			p.buckets[wr.Partition] = b
		}
		b.tokens = math.Min(burst, b.tokens+now.Sub(b.last).Seconds()*p.Rate)
		b.last = now
		if b.tokens < float64(wr.Units) {
			if throttled == nil {
				throttled = make([]bool, len(writes))
			}
			throttled[i] = true
		}
	}
	if throttled != nil {
		for _, th := range throttled {
			if th {
				p.Throttled.Add(1)
			}
		}
		return throttled
	}
	for _, wr := range writes {
		p.buckets[wr.Partition].tokens -= float64(wr.Units)
		p.Units.Add(int64(wr.Units))
	}
	p.Writes.Add(int64(len(writes)))
	return nil
}

const (
	errPrefix     = "com.amazonaws.dynamodb.v20120810#"
	throttleMsg   = "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
	jsonAmzHeader = "application/x-amz-json-1.0"
)

func (p *Throttler) answerThrottled(w http.ResponseWriter, op string, throttled []bool) {
	var body any
	if op == "TransactWriteItems" {
		reasons := make([]map[string]string, len(throttled))
		codes := make([]string, len(throttled))
		for i, th := range throttled {
			reasons[i], codes[i] = map[string]string{"Code": "None"}, "None"
			if th {
				reasons[i] = map[string]string{"Code": "ThrottlingError", "Message": throttleMsg}
				codes[i] = "ThrottlingError"
			}
		}
		body = map[string]any{
			"__type":              errPrefix + "TransactionCanceledException",
			"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
			"CancellationReasons": reasons,
		}
	} else {
		code := p.ThrottleCode
		if code == "" {
			code = "ProvisionedThroughputExceededException"
		}
		body = map[string]string{"__type": errPrefix + code, "message": throttleMsg}
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", jsonAmzHeader)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

// ItemWrite is one item write of a DynamoDB call: its partition (table and
// partition key value) and its write units.
type ItemWrite struct {
	Partition string
	Units     int
}

type attrMap = map[string]json.RawMessage

type writeReq struct {
	TableName                 string
	Key, Item                 attrMap
	ExpressionAttributeValues attrMap
	ExpressionAttributeNames  map[string]string
}

// ItemWrites returns the item writes of a call (op: its X-Amz-Target's
// operation, body: its JSON), nil for a read or a body it cannot parse.
func ItemWrites(op string, body []byte) []ItemWrite {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		var r writeReq
		if json.Unmarshal(body, &r) != nil {
			return nil
		}
		return []ItemWrite{r.write(1)}
	case "TransactWriteItems":
		var r struct {
			TransactItems []struct{ Put, Update, Delete, ConditionCheck *writeReq }
		}
		if json.Unmarshal(body, &r) != nil {
			return nil
		}
		out := make([]ItemWrite, 0, len(r.TransactItems))
		for _, it := range r.TransactItems {
			for _, w := range []*writeReq{it.Put, it.Update, it.Delete, it.ConditionCheck} {
				if w != nil {
					// A condition check is a read (2 read units in a
					// transaction): it holds the item's partition no write.
					u := 2
					if w == it.ConditionCheck {
						u = 0
					}
					iw := w.write(u)
					if u > 0 {
						out = append(out, iw)
					}
				}
			}
		}
		return out
	case "BatchWriteItem":
		var r struct {
			RequestItems map[string][]struct {
				PutRequest    *struct{ Item attrMap }
				DeleteRequest *struct{ Key attrMap }
			}
		}
		if json.Unmarshal(body, &r) != nil {
			return nil
		}
		var out []ItemWrite
		for table, reqs := range r.RequestItems {
			for _, q := range reqs {
				w := writeReq{TableName: table}
				if q.PutRequest != nil {
					w.Item = q.PutRequest.Item
				}
				if q.DeleteRequest != nil {
					w.Key = q.DeleteRequest.Key
				}
				out = append(out, w.write(1))
			}
		}
		return out
	}
	return nil
}

// write is the item write of r, its units multiplied by mult (2 in a
// transaction).
func (r *writeReq) write(mult int) ItemWrite {
	key := r.Key
	if key == nil {
		key = r.Item
	}
	size := attrsSize(r.Item) + attrsSize(r.Key)
	for _, v := range r.ExpressionAttributeValues {
		size += len(v)
	}
	for _, n := range r.ExpressionAttributeNames {
		size += len(n)
	}
	units := max(1, (size+1023)/1024)
	return ItemWrite{Partition: r.TableName + "\x00" + partitionValue(key), Units: units * mult}
}

// partitionValue is the value of an item's partition key: "pk" in every
// table of this project, else the whole key.
func partitionValue(key attrMap) string {
	if v, ok := key["pk"]; ok {
		return string(v)
	}
	b, _ := json.Marshal(key)
	return string(b)
}

// attrsSize approximates DynamoDB's item size: names plus values (their
// JSON, a close upper bound for strings and numbers).
func attrsSize(m attrMap) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}
