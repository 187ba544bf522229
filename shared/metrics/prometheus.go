package metrics

import (
	"bufio"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ContentType is the Prometheus text exposition format's content type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one metric's series: rendered label set -> value.
type family struct {
	name, help, kind string
	series           map[string]float64
	hist             map[string]*histSnap
}

type histSnap struct {
	counts [len(bucketBounds) + 1]int64
	sum    int64
}

func newFamily(name, kind, help string) *family {
	f := &family{name: name, help: help, kind: kind}
	if kind == "histogram" {
		f.hist = map[string]*histSnap{}
	} else {
		f.series = map[string]float64{}
	}
	return f
}

func (f *family) add(labels string, v float64) { f.series[labels] += v }

func (f *family) addHist(labels string, h *histogram) {
	s := f.hist[labels]
	if s == nil {
		s = &histSnap{}
		f.hist[labels] = s
	}
	var n int64
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] += c
		n += c
	}
	if n > 0 {
		s.sum += h.sum.Load()
	}
}

// labelSet renders {name="value",...}; pairs alternate names and values.
func labelSet(pairs ...string) string {
	if len(pairs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pairs[i])
		b.WriteString(`="`)
		writeLabelValue(&b, pairs[i+1])
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// writeLabelValue escapes a label value: backslash, double quote, newline.
func writeLabelValue(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
}

// WritePrometheus writes every metric in the Prometheus text format.
func (r *Registry) WritePrometheus(w io.Writer) error {
	if r == nil {
		return nil
	}
	total := newFamily(TotalRequests, "counter", "Requests that reached the router or were refused, by requested model, model group, key alias, team and status.")
	failed := newFamily(FailedRequests, "counter", "Requests answered with a status >= 400 (same labels).")
	fivexx := newFamily(Responses5xx, "counter", "Requests answered with a status >= 500, by model group.")
	latency := newFamily(Latency, "histogram", "Request latency in seconds, from the request's start to its last byte, by model group.")
	ttft := newFamily(TimeToFirstToken, "histogram", "Streams: seconds from the request's start to the first content event sent, by model group and deployment.")
	in := newFamily(InputTokens, "counter", "Input (prompt) tokens, by model group, deployment, key alias and team.")
	out := newFamily(OutputTokens, "counter", "Output (completion) tokens, by model group, deployment, key alias and team.")
	spend := newFamily(Spend, "counter", "Cost in USD, by model group, deployment, key alias and team.")
	fbOK := newFamily(FallbacksOK, "counter", "Requests served by a fallback model group, by requested model and fallback model.")
	fbBad := newFamily(FallbacksFailed, "counter", "Requests that tried a fallback model group and failed, by requested model and the last fallback model.")
	retries := newFamily(Retries, "counter", "Retries within a model group, by model group.")

	r.mu.RLock()
	for k, c := range r.cells {
		n := float64(c.requests.Load())
		status := strconv.Itoa(k.status)
		reqLabels := labelSet("requested_model", k.requested, "model_group", k.group, "api_key_alias", k.alias, "team", k.team, "status_code", status)
		total.add(reqLabels, n)
		if k.status >= 400 {
			failed.add(reqLabels, n)
		}
		group := labelSet("model_group", k.group)
		if k.status >= 500 {
			fivexx.add(group, n)
		}
		latency.addHist(group, &c.latency)
		gd := labelSet("model_group", k.group, "deployment", k.deployment)
		if k.deployment != "" {
			ttft.addHist(gd, &c.ttft)
		}
		if v := c.in.Load() + c.out.Load(); v > 0 || c.spendNanos.Load() != 0 {
			usage := labelSet("model_group", k.group, "deployment", k.deployment, "api_key_alias", k.alias, "team", k.team)
			in.add(usage, float64(c.in.Load()))
			out.add(usage, float64(c.out.Load()))
			spend.add(usage, float64(c.spendNanos.Load())/1e9)
		}
		if v := c.retries.Load(); v > 0 {
			retries.add(group, float64(v))
		}
		fb := labelSet("requested_model", k.requested, "fallback_model", k.group)
		if v := c.fbOK.Load(); v > 0 {
			fbOK.add(fb, float64(v))
		}
		if v := c.fbBad.Load(); v > 0 {
			fbBad.add(fb, float64(v))
		}
	}
	r.mu.RUnlock()
	for _, f := range []*family{latency, ttft} {
		for k, s := range f.hist {
			if sumCounts(s) == 0 {
				delete(f.hist, k)
			}
		}
	}

	state := newFamily(DeploymentState, "gauge", "Deployment state as this instance knows it: 0 healthy, 2 cooling down.")
	cooled := newFamily(CooledDown, "counter", "Cooldowns this instance started, by model group, deployment and the failure's status.")
	now := r.now()
	r.depMu.Lock()
	for k, u := range r.until {
		v := float64(stateHealthy)
		if u.After(now) {
			v = stateCooling
		}
		state.add(labelSet("model_group", k.group, "deployment", k.deployment), v)
	}
	for k, n := range r.cooldowns {
		cooled.add(labelSet("model_group", k.group, "deployment", k.deployment, "exception_status", strconv.Itoa(k.status)), float64(n))
	}
	r.depMu.Unlock()

	rl := newFamily(RateLimited, "counter", "Requests refused with a 429 by an RPM/TPM limit, by the limit's scope.")
	bud := newFamily(BudgetExceeded, "counter", "Requests refused by a budget, by the budget's scope.")
	for i, s := range scopes {
		rl.add(labelSet("scope", s), float64(r.rateLimited[i].Load()))
		bud.add(labelSet("scope", s), float64(r.budget[i].Load()))
	}
	fo := newFamily(FailOpen, "counter", "Admissions let through uncounted because the limits store failed.")
	fo.add("", float64(r.failOpen.Load()))
	th := newFamily(Throttled, "counter", "Admission writes DynamoDB throttled (retried with backoff, or on another shard of a hot scope).")
	th.add("", float64(r.throttled.Load()))
	se := newFamily(StoreErrors, "counter", "Failed calls to AWS stores, by store.")
	for i, s := range stores {
		se.add(labelSet("store", s), float64(r.storeErrs[i].Load()))
	}
	sf := newFamily(SpendFallback, "counter", "Spend events not sent to SQS: written to the store directly, or only logged.")
	for i, p := range paths {
		sf.add(labelSet("path", p), float64(r.spendFB[i].Load()))
	}

	bw := bufio.NewWriter(w)
	for _, f := range []*family{total, failed, fivexx, latency, ttft, in, out, spend, state, cooled, fbOK, fbBad, retries, rl, bud, fo, th, se, sf} {
		f.write(bw)
	}
	return bw.Flush()
}

func sumCounts(s *histSnap) int64 {
	var n int64
	for _, c := range s.counts {
		n += c
	}
	return n
}

func (f *family) write(w *bufio.Writer) {
	w.WriteString("# HELP " + f.name + " " + f.help + "\n")
	w.WriteString("# TYPE " + f.name + " " + f.kind + "\n")
	if f.hist == nil {
		for _, labels := range slices.Sorted(maps.Keys(f.series)) {
			w.WriteString(f.name + labels + " " + formatFloat(f.series[labels]) + "\n")
		}
		return
	}
	for _, labels := range slices.Sorted(maps.Keys(f.hist)) {
		s := f.hist[labels]
		inner := ""
		if labels != "" {
			inner = labels[1:len(labels)-1] + ","
		}
		var cum int64
		for i := range s.counts {
			cum += s.counts[i]
			le := "+Inf"
			if i < len(bucketBounds) {
				le = formatFloat(bucketBounds[i])
			}
			w.WriteString(f.name + "_bucket{" + inner + `le="` + le + `"} ` + strconv.FormatInt(cum, 10) + "\n")
		}
		w.WriteString(f.name + "_sum" + labels + " " + formatFloat(time.Duration(s.sum).Seconds()) + "\n")
		w.WriteString(f.name + "_count" + labels + " " + strconv.FormatInt(cum, 10) + "\n")
	}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
