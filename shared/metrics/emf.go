package metrics

import (
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/shared/wire"
)

// CloudWatch Embedded Metric Format: one JSON object per line,
//
//	{"_aws":{"Timestamp":<ms>,"CloudWatchMetrics":[{"Namespace":"Sluice",
//	  "Dimensions":[[],["model_group"],["model_group","deployment"]],
//	  "Metrics":[{"Name":"...","Unit":"Count"},...]}]},
//	 "model_group":"...","deployment":"...", <other labels as properties>,
//	 "<metric>":<value>,...}
//
// Every metric named in the directive has its value in the line, and every
// dimension its value. A request whose model group is unknown (refused
// before routing) declares only the dimensionless set, one without a
// deployment [] and ["model_group"]: a dimension never gets a made-up value.

// Units.
const (
	unitCount = "Count"
	unitMs    = "Milliseconds"
	unitNone  = "None"
)

// emfValue is one metric of a line.
type emfValue struct {
	name, unit string
	i          int64
	f          float64
	float      bool
}

// maxValues bounds the metrics of one line (a stack array, no allocation).
const maxValues = 16

type emfValues struct {
	v [maxValues]emfValue
	n int
}

func (vs *emfValues) int(name, unit string, v int64) {
	vs.v[vs.n] = emfValue{name: name, unit: unit, i: v}
	vs.n++
}

func (vs *emfValues) float(name, unit string, v float64) {
	vs.v[vs.n] = emfValue{name: name, unit: unit, f: v, float: true}
	vs.n++
}

var (
	dims3 = `[[],["model_group"],["model_group","deployment"]]`
	dims2 = `[[],["model_group"]]`
	dims1 = `[[]]`
)

func bool01(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// appendRequestLine appends the EMF line of one request. state is the
// final deployment's state, or -1 when there is none.
func (r *Registry) appendRequestLine(b []byte, q *Request, requested string, state int) []byte {
	var vs emfValues
	vs.int(TotalRequests, unitCount, 1)
	vs.int(FailedRequests, unitCount, bool01(q.Status >= 400))
	vs.int(Responses5xx, unitCount, bool01(q.Status >= 500))
	vs.float(Latency, unitMs, ms(q.Latency))
	if q.TTFT > 0 {
		vs.float(TimeToFirstToken, unitMs, ms(q.TTFT))
	}
	if q.HasUsage {
		vs.int(InputTokens, unitCount, q.InputTokens)
		vs.int(OutputTokens, unitCount, q.OutputTokens)
		if q.CostKnown {
			vs.float(Spend, unitNone, float64(q.CostNanos)/1e9)
		}
	}
	if state >= 0 {
		vs.int(DeploymentState, unitNone, int64(state))
	}
	if q.ModelGroup != "" {
		vs.int(Retries, unitCount, int64(q.Retries))
	}
	if q.Fallbacks > 0 {
		if q.Status < 400 {
			vs.int(FallbacksOK, unitCount, 1)
		} else {
			vs.int(FallbacksFailed, unitCount, 1)
		}
	}
	if scopeIndex(q.RateLimited) >= 0 {
		vs.int(RateLimited, unitCount, 1)
	}
	if scopeIndex(q.BudgetExceeded) >= 0 {
		vs.int(BudgetExceeded, unitCount, 1)
	}
	dims := dims1
	switch {
	case q.ModelGroup != "" && q.Deployment != "":
		dims = dims3
	case q.ModelGroup != "":
		dims = dims2
	}
	b = r.appendHead(b, q.End, dims, &vs)
	if q.ModelGroup != "" {
		b = appendProp(b, "model_group", q.ModelGroup)
	}
	if q.Deployment != "" {
		b = appendProp(b, "deployment", q.Deployment)
	}
	b = appendProp(b, "requested_model", requested)
	b = appendProp(b, "api_key_alias", q.KeyAlias)
	b = appendProp(b, "team", q.Team)
	b = append(b, `,"status_code":`...)
	b = strconv.AppendInt(b, int64(q.Status), 10)
	if q.CallID != "" {
		b = appendProp(b, "call_id", q.CallID)
	}
	if q.Stream {
		b = append(b, `,"stream":true`...)
	}
	if q.Fallbacks > 0 {
		b = appendProp(b, "fallback_model", q.ModelGroup)
	}
	if i := scopeIndex(q.RateLimited); i >= 0 {
		b = appendProp(b, "scope", scopes[i])
	} else if i := scopeIndex(q.BudgetExceeded); i >= 0 {
		b = appendProp(b, "scope", scopes[i])
	}
	return appendValues(b, &vs)
}

// appendCooldownLine appends the line of a cooldown this instance started.
func (r *Registry) appendCooldownLine(b []byte, group, deployment string, status int) []byte {
	var vs emfValues
	vs.int(DeploymentState, unitNone, stateCooling)
	vs.int(CooledDown, unitCount, 1)
	b = r.appendHead(b, r.now(), dims3, &vs)
	b = appendProp(b, "model_group", group)
	b = appendProp(b, "deployment", deployment)
	b = append(b, `,"exception_status":"`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, '"')
	return appendValues(b, &vs)
}

// appendServiceLine appends, when any changed since prev, one
// dimensionless line with the service-wide counters' increments, and
// updates prev. Its labels (store, path) are properties.
func (r *Registry) appendServiceLine(b []byte, prev []int64) []byte {
	var cur [len(stores) + len(paths) + 2]int64
	for i := range stores {
		cur[i] = r.storeErrs[i].Load()
	}
	for i := range paths {
		cur[len(stores)+i] = r.spendFB[i].Load()
	}
	cur[len(cur)-2] = r.failOpen.Load()
	cur[len(cur)-1] = r.throttled.Load()
	var d [len(cur)]int64
	changed := false
	for i := range cur {
		d[i] = cur[i] - prev[i]
		changed = changed || d[i] != 0
		prev[i] = cur[i]
	}
	if !changed {
		return b
	}
	var vs emfValues
	vs.int(StoreErrors, unitCount, d[0]+d[1]+d[2])
	vs.int(SpendFallback, unitCount, d[3]+d[4])
	vs.int(FailOpen, unitCount, d[5])
	vs.int(Throttled, unitCount, d[6])
	b = r.appendHead(b, r.now(), dims1, &vs)
	for i, s := range stores {
		b = append(b, `,"store_errors_`...)
		b = append(b, s...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, d[i], 10)
	}
	for i, p := range paths {
		b = append(b, `,"spend_fallback_`...)
		b = append(b, p...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, d[len(stores)+i], 10)
	}
	return appendValues(b, &vs)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// appendHead appends `{"_aws":{...}` (the object stays open).
func (r *Registry) appendHead(b []byte, t time.Time, dims string, vs *emfValues) []byte {
	if t.IsZero() {
		t = r.now()
	}
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, t.UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = wire.AppendString(b, r.ns)
	b = append(b, `,"Dimensions":`...)
	b = append(b, dims...)
	b = append(b, `,"Metrics":[`...)
	for i := range vs.n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":"`...)
		b = append(b, vs.v[i].name...)
		b = append(b, `","Unit":"`...)
		b = append(b, vs.v[i].unit...)
		b = append(b, `"}`...)
	}
	return append(b, `]}]}`...)
}

// appendValues appends the metrics' values and closes the line.
func appendValues(b []byte, vs *emfValues) []byte {
	for i := range vs.n {
		v := &vs.v[i]
		b = append(b, `,"`...)
		b = append(b, v.name...)
		b = append(b, `":`...)
		if v.float {
			b = strconv.AppendFloat(b, v.f, 'f', -1, 64)
		} else {
			b = strconv.AppendInt(b, v.i, 10)
		}
	}
	return append(b, "}\n"...)
}

func appendProp(b []byte, name, value string) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return wire.AppendString(b, value)
}
