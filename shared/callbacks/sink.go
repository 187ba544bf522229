package callbacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Sink is one logging destination (Langfuse, S3, a webhook, ...). Send
// delivers recs (one consumer batch's calls, at least one) and returns
// nil only when all of them are stored; the Dispatcher retries an error
// (unless Permanent), and the batch comes again after an SQS redelivery,
// so a Send must be idempotent per Record.CallID where the destination
// allows it. Send must return when ctx ends.
type Sink interface {
	Send(ctx context.Context, recs []Record) error
}

// Factory builds a sink from its settings; an error says what is missing
// or wrong (the consumer then does not start).
type Factory func(ctx context.Context, env Env) (Sink, error)

// Registry maps LiteLLM callback names ("langfuse", "s3", "generic_api")
// to the factories of their sinks.
type Registry map[string]Factory

// Env is what a Factory builds a sink from.
type Env struct {
	// Name is the callback name the sink is built for.
	Name string
	// Getenv reads the process environment (os.LookupEnv in the mains;
	// packages below them read none themselves).
	Getenv func(string) (string, bool)
	// Params are the sink's own settings: s3_callback_params for "s3";
	// for a team's or key's callback, its callback_vars. A Params entry
	// wins over the environment variable of the same meaning (Var).
	Params map[string]string
	// AWS is the process's AWS configuration (nil: none loaded; a sink
	// that needs one builds it from its Params and the environment).
	AWS *aws.Config
	// HTTP is the client for HTTP sinks (nil: http.DefaultClient).
	HTTP *http.Client
	Log  *slog.Logger
}

// Var returns the sink's setting: Params[param] when set, else the
// environment variable env ("" when neither is).
func (e Env) Var(param, env string) string {
	if v, ok := e.Params[param]; ok && v != "" {
		return v
	}
	if v, ok := e.Params[strings.ToUpper(param)]; ok && v != "" {
		return v
	}
	if e.Getenv != nil && env != "" {
		if v, ok := e.Getenv(env); ok {
			return v
		}
	}
	return ""
}

// Client returns e.HTTP, or http.DefaultClient.
func (e Env) Client() *http.Client {
	if e.HTTP != nil {
		return e.HTTP
	}
	return http.DefaultClient
}

// Logger returns e.Log, or slog.Default().
func (e Env) Logger() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

// permanent marks an error that a retry cannot fix (the destination
// rejected the records themselves: a 400, a 413).
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one a retry cannot fix: the Dispatcher logs it
// and drops the records for that sink rather than have the batch
// redelivered. A destination that is down, overloaded or refuses the
// credentials is not permanent (the operator may fix it; the messages
// wait, then go to the dead-letter queue for a redrive).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// HTTPStatusError is the error of an HTTP sink's non-2xx answer: 400, 404,
// 413 and 422 are Permanent, others are retried.
func HTTPStatusError(name string, status int, body []byte) error {
	const max = 512
	if len(body) > max {
		body = body[:max]
	}
	err := &StatusError{Sink: name, Status: status, Body: string(body)}
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return Permanent(err)
	}
	return err
}

// StatusError is a sink's HTTP error answer.
type StatusError struct {
	Sink   string
	Status int
	Body   string // its first bytes
}

func (e *StatusError) Error() string {
	return e.Sink + ": HTTP " + http.StatusText(e.Status) + " (" + strconv.Itoa(e.Status) + "): " + e.Body
}

// HTTPURL parses an HTTP sink's endpoint: an http or https URL with a
// host, else nil.
func HTTPURL(s string) *neturl.URL {
	u, err := neturl.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil
	}
	return u
}

// PostJSON posts body (JSON) to url with client, headers set by prepare
// (nil: none), and returns the answer's first MB. A failure to connect is
// retried by the Dispatcher; a non-2xx answer is HTTPStatusError (its body
// the answer's first bytes); the error never shows url, which may carry a
// token.
func PostJSON(ctx context.Context, client *http.Client, name, url string, body []byte, prepare func(*http.Request)) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, Permanent(fmt.Errorf("%s: the endpoint is not a valid URL", name)) // err names it
	}
	if prepare != nil {
		prepare(req)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return nil, HTTPStatusError(name, resp.StatusCode, b)
	}
	return b, nil
}
