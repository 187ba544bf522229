package appenv

import (
	"flag"
	"time"
)

// Shutdown bounds how a local process stops on SIGTERM or SIGINT. Lambda
// has no use for it (the gateway's spend events are sent before each
// invocation returns; see docs/operations.md).
type Shutdown struct {
	// Drain is how long in-flight requests and streams may take to finish
	// once the gateway stops accepting (the spend poller: its batch in
	// hand); past it they are cut, and their spend events still recorded.
	Drain time.Duration
	// Flush is how long the spend events still queued then get to reach
	// SQS or the store, on its own clock (not what is left of Drain); past
	// it each is logged whole as "spend event not recorded", for -replay.
	Flush time.Duration
}

// DefaultShutdown: 20 s of drain covers a typical chat stream, and with
// the 5 s flush the worst case (25 s) stays inside the 30 s grace that
// Kubernetes (terminationGracePeriodSeconds) and ECS (stopTimeout) give
// by default before SIGKILL, which would lose what is still queued. A
// deployment serving longer streams raises both the drain and its grace.
func DefaultShutdown() Shutdown {
	return Shutdown{Drain: 20 * time.Second, Flush: 5 * time.Second}
}

// Environment variables of the gateway's shutdown (the flags override them).
const (
	DrainTimeoutEnv      = "GATEWAY_DRAIN_TIMEOUT"
	SpendFlushTimeoutEnv = "GATEWAY_SPEND_FLUSH_TIMEOUT"
)

// gatewayShutdown reads the gateway's shutdown bounds from the environment
// and declares their flags.
func (s *Settings) gatewayShutdown(fs *flag.FlagSet, get func(string) string) error {
	d := DefaultShutdown()
	for _, v := range []struct {
		name string
		v    *time.Duration
	}{{DrainTimeoutEnv, &d.Drain}, {SpendFlushTimeoutEnv, &d.Flush}} {
		if get(v.name) == "" {
			continue
		}
		var err error
		if *v.v, err = duration(get, v.name); err != nil {
			return err
		}
	}
	fs.DurationVar(&s.Shutdown.Drain, "drain-timeout", d.Drain, "local mode: on SIGTERM or SIGINT, how long in-flight requests and streams may finish before they are cut (env "+DrainTimeoutEnv+")")
	fs.DurationVar(&s.Shutdown.Flush, "spend-flush-timeout", d.Flush, "local mode: then how long the queued spend events get to be recorded before each is logged for -replay (env "+SpendFlushTimeoutEnv+")")
	return nil
}
