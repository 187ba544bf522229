package bedrock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
	"github.com/sluice-gw/sluice/shared/providers/chunks/chunkstest"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
	"github.com/sluice-gw/sluice/shared/wire"
)

// An images request is translated to each family's InvokeModel body, and
// Bedrock's images come back in OpenAI's shape, as b64_json.
func TestImageGeneration(t *testing.T) {
	srv, p, d := setup(t)
	for _, tc := range []struct {
		model, body string
		n           int
		sent        map[string]string // path in the InvokeModel body: its JSON
	}{
		{"amazon.nova-canvas-v1:0", `{"model":"i","prompt":"a cat","n":2,"size":"1280x720","quality":"hd","response_format":"b64_json"}`, 2,
			map[string]string{"taskType": `"TEXT_IMAGE"`, "textToImageParams": `{"text":"a cat"}`,
				"imageGenerationConfig": `{"height":720,"numberOfImages":2,"quality":"premium","width":1280}`}},
		{"amazon.titan-image-generator-v1", `{"model":"i","prompt":"a dog","quality":"standard"}`, 1,
			map[string]string{"textToImageParams.text": `"a dog"`, "imageGenerationConfig": `{"numberOfImages":1,"quality":"standard"}`}},
		{"us.amazon.titan-image-generator-v2:0", `{"model":"i","prompt":"x","n":3}`, 3,
			map[string]string{"imageGenerationConfig.numberOfImages": "3"}},
		{"stability.sd3-large-v1:0", `{"model":"i","prompt":"a fox","size":"1024x1024","n":1}`, 1,
			map[string]string{"@this": `{"prompt":"a fox"}`}},
		{"stability.stable-image-core-v1:0", `{"model":"i","prompt":"a owl"}`, 1,
			map[string]string{"@this": `{"prompt":"a owl"}`}},
	} {
		d.Model = tc.model
		before := len(srv.Calls())
		b := chunkstest.Body(t)(p.Do(context.Background(), d, wire.Call{Op: wire.OpImages, Body: []byte(tc.body)}))
		data := gjson.GetBytes(b, "data").Array()
		if gjson.GetBytes(b, "created").Int() == 0 || len(data) != tc.n {
			t.Fatalf("%s: %s", tc.model, b)
		}
		for i, img := range data {
			if img.Get("b64_json").Str != bedrocktest.FakeImages(tc.n)[i] || img.Get("url").Exists() {
				t.Fatalf("%s: image %d: %s", tc.model, i, img.Raw)
			}
		}
		calls := srv.Calls()
		if len(calls) != before+1 || calls[before].ModelID != tc.model {
			t.Fatalf("%s: calls %+v", tc.model, calls[before:])
		}
		for path, want := range tc.sent {
			if got := gjson.Get(calls[before].Body, path).Raw; got != want {
				t.Errorf("%s: sent %s = %s, want %s (body %s)", tc.model, path, got, want, calls[before].Body)
			}
		}
	}
}

// What Bedrock cannot serve is a 400 before any call; Bedrock's throttling
// is a 429 (rate limited), as on the chat routes.
func TestImageGenerationErrors(t *testing.T) {
	srv, p, d := setup(t)
	for _, tc := range []struct{ model, body string }{
		{"amazon.nova-canvas-v1:0", `{"model":"i","prompt":"a cat","response_format":"url"}`},
		{"amazon.nova-canvas-v1:0", `{"model":"i"}`},
		{"amazon.nova-canvas-v1:0", `{"model":"i","prompt":"a cat","size":"big"}`},
		{"amazon.nova-canvas-v1:0", `{"model":"i","prompt":"a cat","n":0}`},
		{"stability.sd3-large-v1:0", `{"model":"i","prompt":"a cat","n":2}`},
		{"stability.stable-diffusion-xl-v1", `{"model":"i","prompt":"a cat"}`},
		{"anthropic.claude-3-haiku-20240307-v1:0", `{"model":"i","prompt":"a cat"}`},
	} {
		d.Model = tc.model
		_, err := p.Do(context.Background(), d, wire.Call{Op: wire.OpImages, Body: []byte(tc.body)})
		var e *apierr.Error
		if !errors.As(err, &e) || e.HTTPStatus() != 400 {
			t.Errorf("%s %s: %v, want a 400", tc.model, tc.body, err)
		}
	}
	if n := len(srv.Calls()); n != 0 {
		t.Fatalf("%d calls reached Bedrock", n)
	}
	d.Model = "amazon.titan-image-generator-v2:0"
	srv.SetFault(bedrocktest.Throttle)
	resp, err := p.Do(context.Background(), d, wire.Call{Op: wire.OpImages, Body: []byte(`{"model":"i","prompt":"a cat"}`)})
	providerstest.UpstreamError(t, resp, err, apierr.UpstreamRateLimited, 429, d.AWS.SecretAccessKey)
}
