package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/aws/aws-lambda-go/events"

	"github.com/sluice-gw/sluice/shared/lambdahttp"
)

// lambdaTransport sends each request through the Lambda function URL
// adapter (lambdahttp.Wrap) as a function URL event, and reads back its
// streaming response: what the deployed function does with a request,
// without the runtime.
type lambdaTransport struct{ h http.Handler }

func (l lambdaTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		body = b
	}
	ev := &events.LambdaFunctionURLRequest{RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery, Body: string(body), Headers: map[string]string{}}
	for k, v := range r.Header {
		ev.Headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	ev.RequestContext.DomainName = "abc123.lambda-url.us-east-1.on.aws"
	ev.RequestContext.HTTP.Method = r.Method
	ev.RequestContext.HTTP.Path = r.URL.Path
	ev.RequestContext.HTTP.SourceIP = "203.0.113.7"
	resp, err := lambdahttp.Wrap(l.h)(r.Context(), ev)
	if err != nil {
		return nil, err
	}
	out := &http.Response{StatusCode: resp.StatusCode, Header: http.Header{}, Body: io.NopCloser(resp.Body), Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	for k, v := range resp.Headers {
		out.Header.Set(k, v)
	}
	return out, nil
}

// The official SDK through the Lambda function URL path: plain, streamed,
// count_tokens and an error, as the deployed function serves them.
func TestMessagesSDKThroughLambda(t *testing.T) {
	f := newMessagesFixture(t, "")
	c := anthropic.NewClient(option.WithBaseURL("https://abc123.lambda-url.us-east-1.on.aws"), option.WithAPIKey("sk-user"),
		option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Transport: lambdaTransport{f.h}}))
	ctx := context.Background()
	m, err := c.Messages.New(ctx, userText(claudeModel, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if textOf(m) != "Hello from Claude." {
		t.Errorf("message: %s", m.RawJSON())
	}
	wantSpend(t, f.completion(t), false)
	sm, types := stream(t, c, userText(claudeModel, "hi"))
	if textOf(sm) != "Hello from Claude." || types[len(types)-1] != "message_stop" {
		t.Errorf("streamed: %+v (%v)", sm, types)
	}
	wantSpend(t, f.completion(t), true)
	if n, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: claudeModel,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count me"))}}); err != nil || n.InputTokens != 42 {
		t.Errorf("count_tokens: %v %v", n, err)
	}
	if _, err := c.Messages.New(ctx, userText("secret", "hi")); err == nil || !strings.Contains(err.Error(), "permission_error") {
		t.Errorf("a model the key may not use: %v", err)
	}
}
