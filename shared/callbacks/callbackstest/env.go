package callbackstest

import "github.com/sluice-gw/sluice/shared/callbacks"

// Env is a sink's callbacks.Env whose environment holds vars (nil: none).
func Env(vars map[string]string) callbacks.Env {
	return callbacks.Env{Getenv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
}
