// Command bareproxy is the floor for any Go gateway hop: net/http's
// ReverseProxy with no logic at all. go run ./test/bench measures the gateway
// against it in the same run. Loopback only.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18090", "listen address (loopback only)")
	upstream := flag.String("upstream", "http://127.0.0.1:18080", "upstream base URL (loopback only)")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatal(err)
	}
	if !loopback(u.Hostname()) {
		log.Fatalf("refusing non-loopback upstream %q", *upstream)
	}
	if host, _, err := net.SplitHostPort(*addr); err != nil || !loopback(host) {
		log.Fatalf("refusing non-loopback addr %q", *addr)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // stream every write, as a gateway must
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 512, DisableCompression: true}
	srv := &http.Server{Addr: *addr, Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("bare proxy on http://%s -> %s", *addr, *upstream)
	log.Fatal(srv.ListenAndServe())
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}
