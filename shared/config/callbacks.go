package config

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Callbacks are litellm_settings' logging callbacks (LiteLLM's keys,
// unchanged): which sinks receive every call's record, and what is kept
// out of them. The sinks run in the spend consumer (shared/callbacks), never
// on the request's path; see docs/callbacks.md.
type Callbacks struct {
	Success []string // success_callback: called for successful calls
	Failure []string // failure_callback: called for failed calls
	Both    []string // callbacks: called for both
	// TurnOffMessageLogging (turn_off_message_logging) keeps messages and
	// responses out of every sink; usage and cost are still sent.
	TurnOffMessageLogging bool
	// RedactUserAPIKeyInfo (redact_user_api_key_info) keeps the key's
	// hash, alias and owner ids out of every sink.
	RedactUserAPIKeyInfo bool
	// S3 is s3_callback_params (s3_bucket_name, s3_region_name,
	// s3_endpoint_url, s3_aws_access_key_id, s3_aws_secret_access_key,
	// s3_path, ...), os.environ/ values resolved.
	S3 map[string]string
}

// CallbackNames are the callback names a sink implements (shared/callbacks'
// registry holds the same names; a test there checks it). Others are
// warned about at load and left out.
var CallbackNames = map[string]bool{
	"langfuse":    true,
	"s3":          true,
	"s3_v2":       true, // LiteLLM's batched S3 logger: the same layout
	"generic_api": true,
	"webhook":     true, // an alias of generic_api
	"otel":        true, // OpenTelemetry over OTLP/HTTP (shared/callbacks/otel)
}

// Enabled reports whether any sink is named.
func (c *Callbacks) Enabled() bool {
	return len(c.Success)+len(c.Failure)+len(c.Both) > 0
}

// LogContent reports whether messages and responses go to the sinks: a
// sink is named and turn_off_message_logging is off.
func (c *Callbacks) LogContent() bool { return c.Enabled() && !c.TurnOffMessageLogging }

// Names returns every callback named, once each, sorted.
func (c *Callbacks) Names() []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range [][]string{c.Success, c.Failure, c.Both} {
		for _, n := range l {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// callbackKey reads one litellm_settings key of the callbacks; ok is false
// for any other key.
func (l *loader) callbackKey(key, path string, v *yaml.Node) (ok bool, err error) {
	c := &l.cfg.Callbacks
	switch key {
	case "success_callback":
		c.Success, err = l.callbackList(path, v)
	case "failure_callback":
		c.Failure, err = l.callbackList(path, v)
	case "callbacks":
		c.Both, err = l.callbackList(path, v)
	case "turn_off_message_logging":
		c.TurnOffMessageLogging = l.privacyBool(path, v)
	case "redact_user_api_key_info":
		c.RedactUserAPIKeyInfo = l.privacyBool(path, v)
	case "s3_callback_params":
		c.S3 = map[string]string{}
		err = pairs(path, v, func(k string, vv *yaml.Node, p string) error {
			s, set, err := l.str(p, vv)
			if err != nil {
				return err
			}
			if !set {
				l.warn(p, vv, "environment variable %s is not set", envName(vv.Value))
			}
			c.S3[k] = s
			return nil
		})
	default:
		return false, nil
	}
	return true, err
}

// privacyBool reads a setting that keeps data out of the sinks. A value
// that is not a boolean (LiteLLM's complete-schema example writes the
// placeholder "boolean") turns it on, with a warning: LiteLLM's Python
// takes any non-empty string as true, and the safe reading of a mistake
// here is the one that sends less.
func (l *loader) privacyBool(path string, v *yaml.Node) bool {
	b, err := l.boolv(path, v)
	if err != nil {
		l.warn(path, v, "must be true or false, got %q; read as true (contents kept out of the sinks)", v.Value)
		return true
	}
	return b
}

// callbackList reads a list of callback names, keeping those a sink
// implements and warning about the others (LiteLLM's Python hooks,
// integrations not built here).
func (l *loader) callbackList(path string, v *yaml.Node) ([]string, error) {
	names, err := l.strList(path, v)
	if err != nil {
		return nil, err
	}
	out := names[:0]
	for i, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if !CallbackNames[n] {
			l.warn(fmt.Sprintf("%s[%d]", path, i), v, "callback %q is not implemented; ignored (implemented: %s)", n, strings.Join(implementedCallbacks(), ", "))
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

func implementedCallbacks() []string {
	out := make([]string, 0, len(CallbackNames))
	for n := range CallbackNames {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LoadCallbacksFile reads only litellm_settings' callbacks from the config
// file at path: what the spend consumer needs, without loading (or
// resolving the credentials of) the model list. An empty path is the
// embedded default, which names no callback.
func LoadCallbacksFile(path string, getenv Getenv) (Callbacks, []Warning, error) {
	if path == "" {
		return Callbacks{}, nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Callbacks{}, nil, fmt.Errorf("read config: %w", err)
	}
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Callbacks{}, nil, fmt.Errorf("%s: parse config: %w", path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return Callbacks{}, nil, errors.New("config: empty document")
	}
	l := &loader{getenv: getenv, cfg: &Config{}}
	err = pairs("", doc.Content[0], func(key string, v *yaml.Node, p string) error {
		if key != "litellm_settings" {
			return nil
		}
		return pairs(p, v, func(k string, vv *yaml.Node, kp string) error {
			_, err := l.callbackKey(k, kp, vv)
			return err
		})
	})
	if err != nil {
		return Callbacks{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return l.cfg.Callbacks, l.cfg.Warnings, nil
}
