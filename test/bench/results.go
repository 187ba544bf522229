package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// loadgen runs one measurement and returns its RESULT line.
// loadgen runs one load and returns its RESULT line and the CPU time the
// load generator used.
func loadgen(ctx context.Context, path, url string, c int, mode string, o options, label string) (string, time.Duration, error) {
	cmd := exec.CommandContext(ctx, path, "-url", url, "-c", strconv.Itoa(c), "-d", o.dur.String(),
		"-warmup", o.warmup.String(), "-stream="+strconv.FormatBool(mode != "json"), "-label", label,
		"-messages="+strconv.FormatBool(mode == "messages"), "-model", modelOf(mode))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", 0, fmt.Errorf("loadgen %s %s c=%d: %w\n%s", label, mode, c, err, stderr.String())
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "RESULT ") {
			return line, cpu, nil
		}
	}
	return "", 0, fmt.Errorf("loadgen %s %s c=%d printed no RESULT line:\n%s%s", label, mode, c, out, stderr.String())
}

type result struct {
	label, mode string
	c, round    int
	rps, p50    float64
	errs        int
	cpu         time.Duration // the server's CPU per request
	rest        time.Duration // the mock's and the load generator's CPU per request
}

// parseResult reads the fields the summary needs from a RESULT line.
func parseResult(line string) (result, error) {
	kv := map[string]string{}
	for _, f := range strings.Fields(line)[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	var r result
	var errs [4]error
	r.label, r.mode = kv["label"], kv["mode"]
	r.c, errs[0] = strconv.Atoi(kv["c"])
	r.rps, errs[1] = strconv.ParseFloat(kv["rps"], 64)
	r.p50, errs[2] = strconv.ParseFloat(kv["p50_ms"], 64)
	r.errs, errs[3] = strconv.Atoi(kv["err"])
	if err := errors.Join(errs[:]...); err != nil {
		return r, fmt.Errorf("bad RESULT line %q: %w", line, err)
	}
	return r, nil
}

// summary prints, per mode and concurrency, the medians of rps, p50 and
// server CPU per request of each target over the rounds, and each gateway's
// rps ratio and p50 difference to the bare proxy; then the goals,
// judged on the gateway at its default log level (info), every round's
// ratio counting; then the peak RSS and what the measured CPU means for a
// Lambda function's memory size.
func summary(w io.Writer, lines []result, o options, rss map[string]int64) {
	type key struct {
		label, mode string
		c           int
	}
	rps, p50, cpu, rest := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	errs := map[key]int{}
	byRound := map[key]map[int]float64{}
	for _, r := range lines {
		k := key{r.label, r.mode, r.c}
		rps[k] = append(rps[k], r.rps)
		p50[k] = append(p50[k], r.p50)
		cpu[k] = append(cpu[k], float64(r.cpu)/1e3)
		if r.rest > 0 {
			rest[k] = append(rest[k], float64(r.rest)/1e3)
		}
		errs[k] += r.errs
		if byRound[k] == nil {
			byRound[k] = map[int]float64{}
		}
		byRound[k][r.round] = r.rps
	}
	fmt.Fprintf(w, "%-8s %4s | %9s %8s %6s | %9s %8s %6s %8s %6s | %9s %8s %6s %8s %6s | %s\n",
		"mode", "c", "bare rps", "p50 ms", "cpu us", "info rps", "p50 ms", "ratio", "dp50 ms", "cpu us", "warn rps", "p50 ms", "ratio", "dp50 ms", "cpu us", "errors")
	for _, m := range []string{"json", "sse", "messages"} {
		for _, c := range o.concs {
			kb, ki, kw := key{"bare", m, c}, key{"gw_info", m, c}, key{"gw_warn", m, c}
			if len(rps[kb]) == 0 {
				continue
			}
			br, bp := median(rps[kb]), median(p50[kb])
			ir, ip := median(rps[ki]), median(p50[ki])
			wr, wp := median(rps[kw]), median(p50[kw])
			fmt.Fprintf(w, "%-8s %4d | %9.0f %8.3f %6.0f | %9.0f %8.3f %5.2fx %+8.3f %6.0f | %9.0f %8.3f %5.2fx %+8.3f %6.0f | %d\n",
				m, c, br, bp, median(cpu[kb]), ir, ip, ir/br, ip-bp, median(cpu[ki]), wr, wp, wr/br, wp-bp, median(cpu[kw]), errs[kb]+errs[ki]+errs[kw])
		}
	}
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	fmt.Fprintln(w, "\n== goals (the gateway at log level info; cpu us: the server's CPU per request, warmup included)")
	for _, m := range []string{"sse", "messages", "json"} {
		for _, c := range o.concs {
			kb, ki := key{"bare", m, c}, key{"gw_info", m, c}
			if len(rps[kb]) == 0 || c < 32 {
				continue
			}
			var ratios []string
			all := true
			for round := 1; round <= o.rounds; round++ {
				b, g := byRound[kb][round], byRound[ki][round]
				if b <= 0 {
					continue
				}
				ratios = append(ratios, fmt.Sprintf("%.2fx", g/b))
				all = all && g/b >= 1.2
			}
			fmt.Fprintf(w, "%s  %s c=%d: rps >= 1.2x the bare proxy's in every round: %s\n", verdict(all), m, c, strings.Join(ratios, " "))
			// On two shared cores the rate goes as 1 / (CPU per request of
			// server + mock + load generator): what 1.2x asks of the server.
			if rb, rg := median(rest[kb]), median(rest[ki]); rb > 0 && rg > 0 {
				b, g := median(cpu[kb]), median(cpu[ki])
				fmt.Fprintf(w, "      CPU per request: bare %.0f us + mock and loadgen %.0f us; gateway %.0f us + %.0f us. 1.2x needs the gateway at <= %.0f us\n",
					b, rb, g, rg, (b+rb)/1.2-rg)
			}
			if kn := (key{"null", m, c}); len(rps[kn]) > 0 {
				var nr []string
				for round := 1; round <= o.rounds; round++ {
					if b := byRound[kb][round]; b > 0 {
						nr = append(nr, fmt.Sprintf("%.2fx", byRound[kn][round]/b))
					}
				}
				fmt.Fprintf(w, "      null hop (net/http server + h1 client, no logic): %s the bare proxy's rps; CPU per request %.0f us\n",
					strings.Join(nr, " "), median(cpu[kn]))
			}
		}
		kb, ki := key{"bare", m, 1}, key{"gw_info", m, 1}
		if len(p50[kb]) > 0 {
			bp, ip := median(p50[kb]), median(p50[ki])
			fmt.Fprintf(w, "%s  %s c=1: p50 %.3f ms, no worse than the bare proxy's %.3f ms (%+.3f ms)\n", verdict(ip <= bp), m, ip, bp, ip-bp)
		}
	}
	if r := rss["gw_info"]; r > 0 {
		fmt.Fprintf(w, "%s  peak RSS of the gateway %.1f MB <= 64 MB (log level warn: %.1f MB; bare proxy %.1f MB)\n",
			verdict(r <= 64<<20), float64(r)/(1<<20), float64(rss["gw_warn"])/(1<<20), float64(rss["bare"])/(1<<20))
	}
	cj, cs := median(cpu[key{"gw_info", "json", 1}]), median(cpu[key{"gw_info", "sse", 1}])
	if cj > 0 || cs > 0 {
		tlsCPU, err := tlsClientCPU(50, false)
		if err != nil {
			fmt.Fprintf(w, "TLS handshake not measured: %v\n", err)
		}
		tlsResumed, err := tlsClientCPU(50, true)
		if err != nil {
			fmt.Fprintf(w, "resumed TLS handshake not measured: %v\n", err)
		}
		lambdaModel(w, time.Duration(cj*1e3), time.Duration(cs*1e3), tlsCPU, tlsResumed, rss["gw_info"], 5)
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// modelOf is the model a mode's requests name: the messages mode's is an
// anthropic/ deployment on the mock, passed through.
func modelOf(mode string) string {
	if mode == "messages" {
		return messagesModel
	}
	return "gpt-4o-mini"
}
