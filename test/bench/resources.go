package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procCPU is the CPU time a process has used so far: the sum of its
// threads' run time from /proc/<pid>/task/*/schedstat (nanoseconds, Linux).
func procCPU(pid int) (time.Duration, bool) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += ns
	}
	return time.Duration(total), true
}

// procPeakRSS is a process's peak resident set size (VmHWM) in bytes.
func procPeakRSS(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// tlsClientCPU is the CPU time the client side of one TLS handshake takes
// (a fresh connection to an HTTPS upstream: key exchange and certificate
// verification), measured on a locked OS thread with getrusage
// (RUSAGE_THREAD) while the server runs on others.
func tlsClientCPU(n int, resume bool) (time.Duration, error) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	addr := strings.TrimPrefix(srv.URL, "https://")
	conf := &tls.Config{RootCAs: pool, ServerName: "example.com", ClientSessionCache: nil}
	dial := func() error {
		c, err := tls.Dial("tcp", addr, conf)
		if err != nil {
			return err
		}
		if err := c.Handshake(); err != nil {
			return err
		}
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
		_, _ = io.Copy(io.Discard, c) // the TLS 1.3 session ticket comes with the response
		return c.Close()
	}
	if resume { // as the gateway's upstream client: a session cache, the host met before
		conf.ClientSessionCache = tls.NewLRUClientSessionCache(8)
		if err := dial(); err != nil {
			return 0, err
		}
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	var before, after syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &before); err != nil {
		return 0, err
	}
	for range n {
		if err := dial(); err != nil {
			return 0, err
		}
	}
	if err := syscall.Getrusage(rusageThread, &after); err != nil {
		return 0, err
	}
	used := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / time.Duration(n)
	return used, nil
}

// Lambda gives a function CPU in proportion to its memory: 1,769 MB is one
// vCPU. Prices: arm64 in us-east-1.
const (
	lambdaFullCPUMB   = 1769
	lambdaPerGBSecond = 0.0000133334
	lambdaPerRequest  = 0.20 / 1e6
)

// lambdaModel prints, for each memory size, what the gateway's own CPU work
// per request and a TLS handshake to the provider become when the CPU is
// that fraction of a vCPU, next to the price of a request that waits
// streamSecs for the model: Lambda bills the whole wait, in proportion to
// memory. cpuJSON and cpuSSE are measured here, on a machine whose core may
// be faster or slower than Lambda's, so the figures are estimates.
func lambdaModel(w io.Writer, cpuJSON, cpuSSE, tlsCPU, tlsResumedCPU time.Duration, peakRSS int64, streamSecs float64) {
	fmt.Fprintf(w, "\n== Lambda memory (CPU is memory/%d MB of a vCPU; arm64 prices; a %gs stream)\n", lambdaFullCPUMB, streamSecs)
	fmt.Fprintf(w, "measured here: gateway CPU per request json %s, sse %s; TLS handshake (client side) %s, resumed %s; peak RSS %.1f MB\n",
		round(cpuJSON), round(cpuSSE), round(tlsCPU), round(tlsResumedCPU), float64(peakRSS)/(1<<20))
	fmt.Fprintf(w, "%7s %6s | %12s %12s %14s %14s | %14s\n", "memory", "vCPU", "json own", "sse own", "new TLS conn", "resumed", "$ per 1M reqs")
	for _, mb := range []int{128, 256, 512, 1024, 1769} {
		share := float64(mb) / lambdaFullCPUMB
		scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / share) }
		price := (float64(mb)/1024*streamSecs*lambdaPerGBSecond + lambdaPerRequest) * 1e6
		fmt.Fprintf(w, "%4d MB %6.3f | %12s %12s %14s %14s | %14.2f\n", mb, share, round(scale(cpuJSON)), round(scale(cpuSSE)), round(scale(tlsCPU)), round(scale(tlsResumedCPU)), price)
	}
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Nanosecond)
}
