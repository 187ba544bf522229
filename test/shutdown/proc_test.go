package shutdown_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/shared/spend"
)

// gatewayBin is the gateway binary, built once for the package.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func gatewayBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-shutdown-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gateway")
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if out, err := exec.Command(goBin, "build", "-o", binPath, "github.com/sluice-gw/sluice/functions/gateway").CombinedOutput(); err != nil {
			buildErr = err
			binPath = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build the gateway: %v\n%s", buildErr, binPath)
	}
	return binPath
}

// gateway is the gateway binary running in local mode.
type gateway struct {
	cmd    *exec.Cmd
	base   string
	mu     sync.Mutex
	log    bytes.Buffer  // stderr, whole
	copied chan struct{} // stderr read to its end
	exited chan struct{}
	err    error // the exit, once exited is closed
}

// startGateway runs the binary with args and env (added to the test's own)
// and waits for its banner.
func startGateway(t *testing.T, env []string, args ...string) *gateway {
	t.Helper()
	g := &gateway{copied: make(chan struct{}), exited: make(chan struct{})}
	g.cmd = exec.Command(gatewayBin(t), append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	g.cmd.Env = append(os.Environ(), env...)
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	base := make(chan string, 1)
	go func() {
		defer close(g.copied)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			g.mu.Lock()
			g.log.WriteString(line + "\n")
			g.mu.Unlock()
			if a, ok := strings.CutPrefix(line, "Gateway listening on "); ok {
				select {
				case base <- strings.Fields(a)[0]:
				default:
				}
			}
		}
	}()
	go func() {
		<-g.copied
		g.err = g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		_ = g.cmd.Process.Kill()
		<-g.exited
	})
	select {
	case g.base = <-base:
	case <-g.exited:
		t.Fatalf("the gateway exited: %v\n%s", g.err, g.output())
	case <-time.After(60 * time.Second):
		t.Fatalf("the gateway did not start:\n%s", g.output())
	}
	return g
}

func (g *gateway) output() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}

// term sends SIGTERM and waits for the process to exit (a minute at most:
// past that the test fails, it does not measure).
func (g *gateway) term(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the gateway did not exit within a minute of SIGTERM:\n%s", g.output())
	}
}

// logged returns the request ids of the events logged whole as
// "spend event not recorded" (what -replay reads back).
func (g *gateway) logged(t *testing.T) map[string]bool {
	t.Helper()
	evs, bad, err := spend.ReadReplay(strings.NewReader(g.output()))
	if err != nil || len(bad) > 0 {
		t.Fatalf("replay lines: %v %v", err, bad)
	}
	ids := map[string]bool{}
	for _, e := range evs {
		ids[e.RequestID] = true
	}
	return ids
}
