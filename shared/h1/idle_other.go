//go:build !linux

package h1

// idleCheck cannot look at the socket here: a connection the server closed
// while idle is found when the request is sent on it (and sent again once,
// on a new connection).
type idleCheck struct{}

func (*idleCheck) init(any) {}

func (*idleCheck) quiet() bool { return true }
