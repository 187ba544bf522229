// Command loadgen is a bounded closed-loop load generator for
// POST /v1/chat/completions on loopback, used by go run ./test/bench. It prints
// one RESULT line: rps, p50/p90/p99/max latency and time to first byte.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	target := flag.String("url", "http://127.0.0.1:18080/v1/chat/completions", "target URL (loopback only)")
	conc := flag.Int("c", 32, "concurrent workers (each one keep-alive connection)")
	dur := flag.Duration("d", 20*time.Second, "measured duration")
	warm := flag.Duration("warmup", 2*time.Second, "warmup duration (not recorded)")
	maxN := flag.Int64("n", 5_000_000, "hard cap on measured requests")
	stream := flag.Bool("stream", false, "send stream:true and read SSE until [DONE]")
	model := flag.String("model", "gpt-4o-mini", "model field")
	messages := flag.Bool("messages", false, "send an Anthropic Messages request (POST /v1/messages) and, with -stream, read its events until message_stop")
	label := flag.String("label", "", "label printed with results")
	flag.Parse()

	u, err := url.Parse(*target)
	if err != nil {
		panic(err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
		fmt.Fprintln(os.Stderr, "refusing non-loopback target", host)
		os.Exit(2)
	}
	body := []byte(fmt.Sprintf(`{"model":%q,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":64,"temperature":0.2,"stream":%v}`, *model, *stream))
	doneLine := []byte("data: [DONE]")
	if *messages {
		body = []byte(fmt.Sprintf(`{"model":%q,"system":"You are a helpful assistant.","messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":64,"temperature":0.2,"stream":%v}`, *model, *stream))
		doneLine = []byte(`data: {"type":"message_stop"`)
	}

	tr := &http.Transport{
		MaxIdleConns: *conc * 2, MaxIdleConnsPerHost: *conc * 2, MaxConnsPerHost: *conc,
		DisableCompression: true, IdleConnTimeout: 60 * time.Second,
	}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var recording atomic.Bool
	var stop atomic.Bool
	var count atomic.Int64
	var errs atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, *conc)
	ttfb := make([][]time.Duration, *conc)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), *warm+*dur+60*time.Second) // absolute bound
	defer cancel()

	one := func() (time.Duration, time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", *target, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-mock")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		var first time.Duration
		if *stream {
			br := bufio.NewReaderSize(resp.Body, 16<<10)
			done, events := false, 0
			for {
				line, err := br.ReadSlice('\n')
				if len(line) > 0 && first == 0 {
					first = time.Since(t0)
				}
				if bytes.HasPrefix(line, []byte("data: ")) {
					events++
					if bytes.HasPrefix(line, doneLine) {
						done = true
					}
				}
				if err != nil {
					if err != io.EOF && err != bufio.ErrBufferFull {
						return 0, 0, err
					}
					if err == io.EOF {
						break
					}
				}
			}
			el := time.Since(t0)
			if resp.StatusCode != 200 || !done {
				return 0, 0, fmt.Errorf("stream status=%d done=%v events=%d", resp.StatusCode, done, events)
			}
			return el, first, nil
		}
		b, err := io.ReadAll(resp.Body)
		el := time.Since(t0)
		if err != nil {
			return 0, 0, err
		}
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"usage"`)) {
			return 0, 0, fmt.Errorf("status=%d body=%.200s", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return el, el, nil
	}

	for w := 0; w < *conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for !stop.Load() {
				el, fb, err := one()
				if !recording.Load() {
					continue
				}
				if stop.Load() {
					return
				}
				if err != nil {
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					continue
				}
				if count.Add(1) > *maxN {
					stop.Store(true)
					return
				}
				lat[w] = append(lat[w], el)
				ttfb[w] = append(ttfb[w], fb)
			}
		}(w)
	}
	time.Sleep(*warm)
	recording.Store(true)
	t0 := time.Now()
	deadline := time.NewTimer(*dur)
	tick := time.NewTicker(100 * time.Millisecond)
loop:
	for {
		select {
		case <-deadline.C:
			break loop
		case <-tick.C:
			if stop.Load() {
				break loop
			}
		}
	}
	stop.Store(true)
	elapsed := time.Since(t0)
	wg.Wait()

	var all, allfb []time.Duration
	for w := range lat {
		all = append(all, lat[w]...)
		allfb = append(allfb, ttfb[w]...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	sort.Slice(allfb, func(i, j int) bool { return allfb[i] < allfb[j] })
	pct := func(s []time.Duration, p float64) float64 {
		if len(s) == 0 {
			return 0
		}
		i := int(p * float64(len(s)-1))
		return float64(s[i].Microseconds()) / 1000
	}
	fe, _ := firstErr.Load().(string)
	mode := "json"
	if *stream {
		mode = "sse"
	}
	if *messages {
		mode = "messages"
	}
	fmt.Printf("RESULT label=%s mode=%s c=%d ok=%d err=%d secs=%.2f rps=%.0f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f ttfb_p50_ms=%.3f ttfb_p99_ms=%.3f",
		*label, mode, *conc, len(all), errs.Load(), elapsed.Seconds(), float64(len(all))/elapsed.Seconds(),
		pct(all, .50), pct(all, .90), pct(all, .99), pct(all, 1), pct(allfb, .5), pct(allfb, .99))
	if fe != "" {
		fmt.Printf(" first_err=%q", fe)
	}
	fmt.Println()
}
