//go:build unix

package inittrace

import "syscall"

// cpuTime is the CPU time the process has used (user + system, ns), or -1.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
