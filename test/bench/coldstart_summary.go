package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// coldSummary prints the median of each phase over the runs, on the
// bootstrap's timeline from exec, then the emulators' times and the
// gateway's own time.
func coldSummary(w io.Writer, runs []coldRun, emu map[string]time.Duration) {
	ms := func(d float64) string { return strconv.FormatFloat(d/1e6, 'f', 2, 64) }
	// at returns an instant of the trace relative to exec (ns), or -1.
	at := func(r coldRun, name string, i int) float64 {
		v, ok := r.trace[name]
		if !ok || len(v) <= i {
			return -1
		}
		return float64(v[i] - r.exec)
	}
	cpu := func(r coldRun, name string) float64 {
		v, ok := r.trace["cpu."+name]
		if !ok || len(v) != 1 {
			return -1
		}
		return float64(v[0])
	}
	span := func(r coldRun, name string) float64 {
		v, ok := r.trace[name]
		if !ok || len(v) < 2 {
			return -1
		}
		return float64(v[1] - v[0])
	}
	type row struct {
		label string
		f     func(coldRun) float64
		note  string
	}
	rows := []row{
		{"exec -> main()", func(r coldRun) float64 { return at(r, "main", 0) }, "Go runtime and package init"},
		{"AWS configuration", func(r coldRun) float64 { return span(r, "aws_config") }, "awsconf.Load (the environment only)"},
		{"SSM master key", func(r coldRun) float64 { return span(r, "ssm") }, "GetParameter, from its start to the key in hand"},
		{"  init waited for SSM, read-ahead", func(r coldRun) float64 {
			if d := span(r, "init_wait"); d >= 0 {
				return d
			}
			return span(r, "ssm")
		}, "the part nothing else overlapped"},
		{"build", func(r coldRun) float64 { return span(r, "build") }, "app.Build: config, prices, stores, router, handler"},
		{"runtime start -> first next", func(r coldRun) float64 {
			if t := at(r, "lambda_start", 0); t >= 0 {
				return float64(r.next1-r.exec) - t
			}
			return -1
		}, "aws-lambda-go's start, its first GET"},
		{"exec -> first next", func(r coldRun) float64 { return float64(r.next1 - r.exec) }, "init done, Runtime API asked for the event"},
		{"next -> handler", func(r coldRun) float64 { return at(r, "request", 0) - float64(r.next1-r.exec) }, "event decoded into an http.Request"},
		{"key read (GetItem)", func(r coldRun) float64 { return span(r, "aws:DynamoDB_20120810.GetItem") }, "first DynamoDB call: connection, signing, the call"},
		{"cooldowns (BatchGetItem)", func(r coldRun) float64 { return span(r, "aws:DynamoDB_20120810.BatchGetItem") }, "the router's read of the deployments' cooldowns"},
		{"  in the request", func(r coldRun) float64 { return inRequest(r, "aws:DynamoDB_20120810.BatchGetItem") }, "0 when init read them ahead"},
		{"first admission (UpdateItem)", func(r coldRun) float64 { return span(r, "aws:DynamoDB_20120810.UpdateItem") }, "the key's rpm counter"},
		{"upstream", func(r coldRun) float64 { return span(r, "upstream") }, "the mock's answer, headers in"},
		{"handler -> response end", func(r coldRun) float64 { return float64(r.respEnd-r.exec) - at(r, "request", 0) }, "whole request in the gateway, to the last byte at the Runtime API"},
		{"exec -> first response start", func(r coldRun) float64 { return float64(r.respStart - r.exec) }, "the response's POST reached the Runtime API (status and headers)"},
		{"exec -> first response end", func(r coldRun) float64 { return float64(r.respEnd - r.exec) }, "TOTAL: the client has the whole response"},
		{"spend flush (SendMessageBatch)", func(r coldRun) float64 { return span(r, "spend_flush") }, "after the response, before the next `next`"},
		{"exec -> second next", func(r coldRun) float64 { return float64(r.next2 - r.exec) }, "the invocation ends"},
		{"CPU time: exec -> main()", func(r coldRun) float64 { return cpu(r, "main") }, "the bootstrap's user + system time, every thread"},
		{"CPU time: exec -> first next", func(r coldRun) float64 { return cpu(r, "lambda_start") }, ""},
		{"CPU time: exec -> response end", func(r coldRun) float64 { return cpu(r, "response_sent") }, "the gateway's own work, whatever the load on the machine"},
		{"CPU time: whole process", func(r coldRun) float64 { return float64(r.cpuTotal) }, "until killed after the second next"},
	}
	fmt.Fprintf(w, "%-32s %9s %9s %9s   %s\n", "phase", "p50 ms", "min ms", "max ms", "")
	for _, rw := range rows {
		var v []float64
		for _, r := range runs {
			if x := rw.f(r); x >= 0 {
				v = append(v, x)
			}
		}
		if len(v) == 0 {
			fmt.Fprintf(w, "%-32s %9s %9s %9s   %s\n", rw.label, "-", "-", "-", rw.note)
			continue
		}
		sort.Float64s(v)
		fmt.Fprintf(w, "%-32s %9s %9s %9s   %s\n", rw.label, ms(median(v)), ms(v[0]), ms(v[len(v)-1]), rw.note)
	}
	fmt.Fprintf(w, "\nemulators' own answer (from the bench; SSM, BatchGetItem, upstream, SQS on a new connection):")
	for _, k := range []string{"ssm", "GetItem", "BatchGetItem", "UpdateItem", "upstream", "SendMessageBatch"} {
		fmt.Fprintf(w, " %s %s ms;", k, ms(float64(emu[k])))
	}
	fmt.Fprintln(w)
	// The gateway's own time: the total minus what the path to the first
	// response waited on the emulators and the upstream: init's wait for
	// the calls it made ahead (SSM; the read-ahead, made beside it), and
	// each call made during the request, each at most the emulator's own
	// answer time (what the gateway added to a call stays the gateway's).
	var own, totals []float64
	for _, r := range runs {
		total := float64(r.respEnd - r.exec)
		wait := span(r, "init_wait")
		if wait < 0 {
			wait = span(r, "ssm")
		}
		ahead := emu["ssm"]
		if _, ok := r.trace["read_ahead"]; ok {
			ahead = max(ahead, emu["BatchGetItem"])
		}
		sub := min(max(wait, 0), float64(ahead))
		for name := range r.trace {
			op, ok := strings.CutPrefix(name, "aws:DynamoDB_20120810.")
			if ok {
				sub += min(max(inRequest(r, name), 0), float64(emu[op]))
			}
		}
		sub += min(max(span(r, "upstream"), 0), float64(emu["upstream"]))
		own = append(own, total-sub)
		totals = append(totals, total)
	}
	fmt.Fprintf(w, "gateway's own time, exec -> first response end: p50 %s ms (total %s ms minus the emulators' and upstream's answer times on the path)\n",
		ms(median(own)), ms(median(totals)))
	fmt.Fprintln(w, "goal (issue 12): <= 20 ms")
}

// inRequest is the span of a traced call if it started once the first
// request was in the handler, else 0 (made ahead, in init); -1 if absent.
func inRequest(r coldRun, name string) float64 {
	v, ok := r.trace[name]
	if !ok || len(v) < 2 {
		return -1
	}
	if req, ok := r.trace["request"]; !ok || v[0] < req[0] {
		return 0
	}
	return float64(v[1] - v[0])
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
