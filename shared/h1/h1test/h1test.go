// Package h1test is a raw TCP server for tests of HTTP/1 clients: the test
// writes the bytes of each answer itself.
package h1test

import (
	"net"
	"testing"
)

// Server accepts connections on a loopback port until the test ends and
// hands each, with its number, to serve on a goroutine of its own; the
// connection is closed when serve returns. It returns the server's URL.
func Server(t testing.TB, serve func(n int, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(n, c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}
