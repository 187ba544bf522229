package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

type procs []*proc

// last is the process id of the server started last.
func (ps *procs) last() int { return (*ps)[len(*ps)-1].cmd.Process.Pid }

// start runs a server with its output in out/name.log and waits (bounded)
// until it accepts connections on the address after its -addr flag.
func (ps *procs) start(ctx context.Context, out, name string, env []string, path string, args ...string) error {
	addr := ""
	for i, a := range args {
		if a == "-addr" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	logPath := filepath.Join(out, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(p.done) }()
	*ps = append(*ps, p)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited at start-up (%s); log %s:\n%s", name, cmd.ProcessState, logPath, readFile(logPath))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not come up on %s; log %s:\n%s", name, addr, logPath, readFile(logPath))
		}
	}
}

// stop ends every server this run started: SIGTERM, then SIGKILL after 3s.
func (ps *procs) stop() {
	for _, p := range *ps {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range *ps {
		select {
		case <-p.done:
		case <-time.After(3 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// ready polls a readiness URL until it answers 2xx (bounded).
func ready(ctx context.Context, url string) error {
	client := &http.Client{Timeout: time.Second}
	var last error
	for i := 0; i < 50; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return last
}
