//go:build !unix

package inittrace

// cpuTime is unknown here.
func cpuTime() int64 { return -1 }
