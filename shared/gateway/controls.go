package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/router"
	"github.com/sluice-gw/sluice/shared/wire"
)

// LiteLLM's request controls that are not part of OpenAI's API: the
// x-litellm-timeout header (the body's timeout is read by wire.Parse), the
// mock_testing_* switches and a deployment's mock_timeout.

// requestTimeouts sets the request's own timeouts from LiteLLM's headers,
// x-litellm-timeout and x-litellm-stream-timeout, which win over the body's
// timeout and stream_timeout as in LiteLLM. A header that is not a
// positive number of seconds is refused.
func requestTimeouts(r *http.Request, req *wire.Request) error {
	var err error
	if req.Timeout, err = headerSeconds(r, "X-Litellm-Timeout", req.Timeout); err != nil {
		return err
	}
	req.StreamTimeout, err = headerSeconds(r, "X-Litellm-Stream-Timeout", req.StreamTimeout)
	return err
}

func headerSeconds(r *http.Request, name string, body time.Duration) (time.Duration, error) {
	v, ok := r.Header[name]
	if !ok || len(v) == 0 {
		return body, nil
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(v[0]), 64)
	if d := wire.SecondsDuration(secs); err == nil && d > 0 {
		return d, nil
	}
	param := strings.ToLower(name)
	e := apierr.New(apierr.InvalidRequest, "header %s must be a positive number of seconds, got %q", param, v[0])
	e.Param = param
	return 0, e
}

// timeoutHeader is the x-litellm-timeout response header: the request's
// timeout in seconds, as LiteLLM echoes it.
// timeoutHeader is a timeout in seconds as LiteLLM's header shows it
// (Python's float: "1.0", "0.2").
func timeoutHeader(d time.Duration) []string {
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return []string{s}
}

// mockTesting is the failure a mock_testing_* switch asks of the requested
// model group (LiteLLM's messages), made without calling the upstream. A
// fallback group is called as usual.
func mockTesting(a *router.Attempt, m wire.MockTest) error {
	const trigger = "This is a mock exception for model=%s, to trigger a fallback."
	switch m {
	case wire.MockContextWindow:
		return apierr.New(apierr.ContextWindowExceeded, trigger+" (mock_testing_context_fallbacks)", a.Group)
	case wire.MockContentPolicy:
		return apierr.New(apierr.ContentPolicy, trigger+" (mock_testing_content_policy_fallbacks)", a.Group)
	case wire.MockRateLimit:
		return apierr.New(apierr.UpstreamRateLimited, "This is a mock exception for model=%s, to trigger a rate limit error. (mock_testing_rate_limit_error)", a.Group)
	}
	return apierr.New(apierr.UpstreamServer, trigger+" (mock_testing_fallbacks)", a.Group)
}

// mockTimeout is a call to a deployment with mock_timeout: it waits the
// attempt's timeout, then fails as a timeout, as LiteLLM's does.
func mockTimeout(ctx context.Context, a *router.Attempt, stream bool) error {
	wait := a.Timeout
	if stream {
		wait = a.StreamTimeout
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return apierr.New(apierr.UpstreamTimeout, "This is a mock timeout error (deployment %s has mock_timeout)", a.Deployment.ID)
}
