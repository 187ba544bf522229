package h1

import (
	"net"
	"syscall"
	"unsafe"
)

// quiet reports whether an idle connection is still fit to send a request
// on: nothing has arrived on it since its last response and the server has
// not closed it. It peeks without waiting (MSG_PEEK|MSG_DONTWAIT): a read
// that would block means quiet. Anything else is a connection to drop: an
// end of stream (the server closed it while idle), or bytes nobody asked for
// (an HTTP/1.1 408 some servers send before closing an idle connection, or
// a broken server's excess body), which would otherwise be read as the
// next request's response.
func quiet(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		ok = errno == syscall.EAGAIN
		return true // never wait
	})
	return err == nil && ok
}
