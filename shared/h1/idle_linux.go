package h1

import (
	"syscall"
	"unsafe"
)

// idleCheck looks at an idle connection without reading from it; set up
// once per connection, so that the look allocates nothing.
type idleCheck struct {
	rc   syscall.RawConn // nil: the connection is not a socket
	peek func(fd uintptr) bool
	b    [1]byte
	ok   bool
}

func (k *idleCheck) init(nc any) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	k.rc = rc
	k.peek = func(fd uintptr) bool {
		_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&k.b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		k.ok = errno == syscall.EAGAIN
		return true // never wait
	}
}

// quiet reports whether an idle connection is still fit to send a request
// on: nothing has arrived on it since its last response and the server has
// not closed it. It peeks without waiting (MSG_PEEK|MSG_DONTWAIT): a read
// that would block means quiet. Anything else is a connection to drop: an
// end of stream (the server closed it while idle), or bytes nobody asked for
// (an HTTP/1.1 408 some servers send before closing an idle connection, or
// a broken server's excess body), which would otherwise be read as the
// next request's response.
func (k *idleCheck) quiet() bool {
	if k.rc == nil {
		return true
	}
	k.ok = false
	return k.rc.Read(k.peek) == nil && k.ok
}
