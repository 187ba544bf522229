// Command nullhop is the floor of a gateway hop built as Sluice's local mode
// is: net/http's server, and the gateway's upstream client (shared/h1), with
// no logic between them: it reads the request, sends it to the upstream and
// copies the answer back, flushing once at the end. The bench runs it with
// -null, to show how much of the gateway's cost is its own logic and how
// much the server and client it is built on.
package main

import (
	"bytes"
	"flag"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/sluice-gw/sluice/shared/h1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18083", "listen address (loopback)")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "upstream base URL")
	flag.Parse()
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ReadBufferSize, base.WriteBufferSize = 32<<10, 32<<10
	base.MaxIdleConnsPerHost = 256
	client := &http.Client{Transport: h1.NewTransport(base)}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, *upstream+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, "upstream unreachable", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.CopyBuffer(struct{ io.Writer }{w}, resp.Body, make([]byte, 32<<10))
	})
	s := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(s.ListenAndServe())
}
