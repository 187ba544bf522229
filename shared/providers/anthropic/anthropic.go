// Package anthropic speaks Anthropic's Messages API (POST /v1/messages) for
// deployments named anthropic/<model>. The gateway speaks OpenAI's chat
// format on both sides: the request is translated to a Messages request, and
// the answer (JSON or Anthropic's event stream) back to an OpenAI chat
// completion or OpenAI SSE chunks, presented as a plain *http.Response so the
// gateway reads it as it reads any OpenAI upstream.
package anthropic

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/chunks"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Version is the anthropic-version header sent with every request.
const Version = "2023-06-01"

// DefaultBase is Anthropic's API base URL.
const DefaultBase = "https://api.anthropic.com"

// DefaultMaxTokens is max_tokens when the client sends none (Anthropic
// requires it) and the deployment's output limit is unknown.
const DefaultMaxTokens = 4096

// Provider sends calls to Anthropic deployments.
type Provider struct {
	client *http.Client
	post   Poster
}

// Poster sends a Messages API body to d (stream: the answer is an event
// stream): Anthropic's API, or a host that serves Claude under its own URL
// and authentication (Vertex AI). A non-2xx answer comes back as it is.
type Poster func(ctx context.Context, d *config.Deployment, body []byte, stream bool) (*http.Response, error)

// New returns a Provider sending to Anthropic's API through client.
func New(client *http.Client) *Provider {
	p := &Provider{client: client}
	p.post = p.send
	return p
}

// Via returns a Provider that translates chat calls as New's does and
// sends their Messages bodies through post.
func Via(post Poster) *Provider { return &Provider{post: post} }

// StreamUsage reports that a stream may always be asked for its usage: the
// translation counts it from message_start and message_delta.
func (*Provider) StreamUsage(*config.Deployment) bool { return true }

// Do sends call to d and returns Anthropic's answer as an OpenAI-shaped
// response: a chat completion, or OpenAI SSE chunks. A non-2xx response is
// returned as it came, for the caller to classify; so is an error event that
// arrives before anything else in a stream (as the status it stands for).
func (p *Provider) Do(ctx context.Context, d *config.Deployment, call wire.Call) (*http.Response, error) {
	body, jsonMode, err := translateCall(d, call)
	if err != nil {
		return nil, err
	}
	resp, err := p.post(ctx, d, body, call.Stream)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	if !call.Stream {
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		out, err := translateResponse(raw, time.Now().Unix(), jsonMode)
		if err != nil {
			return nil, err
		}
		return chunks.Replace(resp, "application/json", out), nil
	}
	includeUsage := gjson.GetBytes(call.Body, "stream_options.include_usage").Bool()
	st := newDecoder(resp.Body, includeUsage, time.Now().Unix())
	st.jsonMode = jsonMode
	if status, body, ok := st.leadingError(); ok {
		st.Close()
		return chunks.Replace(resp, "application/json", body, status), nil
	}
	return chunks.Streamed(resp, &st.Stream), nil
}
