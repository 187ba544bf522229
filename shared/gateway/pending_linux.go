package gateway

import (
	"syscall"
	"unsafe"
)

const pendingSupported = true

// pendingBytes is the number of bytes the kernel holds unread for a socket
// (SIOCINQ), or 0 when it cannot tell.
func pendingBytes(fd uintptr) int {
	var n int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int(n)
}
