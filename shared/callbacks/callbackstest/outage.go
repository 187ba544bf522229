package callbackstest

import (
	"net/http"
	"sync"
)

// outage is a fake's lock and its down state, which SetDown sets.
type outage struct {
	mu sync.Mutex
	// down answers every request with this status while non-zero (0: up);
	// a negative value closes the connection instead.
	down int
}

// SetDown makes the fake answer status (or drop the connection, -1) until
// SetDown(0).
func (o *outage) SetDown(status int) {
	o.mu.Lock()
	o.down = status
	o.mu.Unlock()
}

// refused answers a request while the fake is down, and reports whether
// it did (o.mu held).
func (o *outage) refused(w http.ResponseWriter) bool {
	switch {
	case o.down < 0:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return true
			}
		}
		w.WriteHeader(http.StatusBadGateway)
		return true
	case o.down > 0:
		w.WriteHeader(o.down)
		return true
	}
	return false
}
