package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
)

// Image model families served on /v1/images/generations, as LiteLLM's
// litellm/llms/bedrock/image/ transformations tell them apart.
const (
	notImage  = iota
	titanLike // Titan Image Generator and Nova Canvas: TEXT_IMAGE task
	stability // Stability's SD3 / Stable Image models: prompt only
)

func imageFamily(modelID string) int {
	m := strings.ToLower(modelID)
	switch {
	case strings.Contains(m, "amazon.titan-image-generator"), strings.Contains(m, "amazon.nova-canvas"):
		return titanLike
	case strings.Contains(m, "stability.") && (strings.Contains(m, "sd3") || strings.Contains(m, "stable-image")):
		return stability
	}
	return notImage
}

// ImageModel reports whether modelID (a Bedrock model id, inference
// profile or ARN) is an image model the gateway serves on
// /v1/images/generations: Titan Image Generator, Nova Canvas, and
// Stability's SD3 and Stable Image models. Stable Diffusion XL (the older
// text_prompts/artifacts protocol) is not.
func ImageModel(modelID string) bool { return imageFamily(modelID) != notImage }

// images answers /v1/images/generations through InvokeModel. Bedrock
// returns images inline, never at a URL: the answer is always b64_json,
// and a request for response_format "url" is refused (LiteLLM accepts no
// response_format for Bedrock either).
func images(ctx context.Context, cl *bedrockruntime.Client, d *config.Deployment, modelID string, body []byte) (*http.Response, error) {
	r := gjson.ParseBytes(body)
	prompt := r.Get("prompt")
	if prompt.Type != gjson.String || prompt.Str == "" {
		e := apierr.New(apierr.InvalidRequest, "missing required parameter: 'prompt'")
		e.Param = "prompt"
		return nil, e
	}
	if f := r.Get("response_format"); f.Exists() && f.Type != gjson.Null && f.Str != "b64_json" {
		e := apierr.New(apierr.InvalidRequest, "response_format %s: Bedrock image models return images inline, only \"b64_json\" is supported", f.Raw)
		e.Param = "response_format"
		return nil, e
	}
	n := int64(1)
	if v := r.Get("n"); v.Exists() && v.Type != gjson.Null {
		if v.Type != gjson.Number || v.Num != float64(int64(v.Num)) || v.Int() < 1 {
			return nil, badRequest("n: must be a positive integer, got %s", v.Raw)
		}
		n = v.Int()
	}
	var payload map[string]any
	switch imageFamily(modelID) {
	case titanLike:
		cfg := map[string]any{"numberOfImages": n}
		if s := r.Get("size").String(); s != "" && s != "auto" {
			w, h, ok := parseSize(s)
			if !ok {
				e := apierr.New(apierr.InvalidRequest, "size %q: expected WIDTHxHEIGHT, e.g. \"1024x1024\"", s)
				e.Param = "size"
				return nil, e
			}
			cfg["width"], cfg["height"] = w, h
		}
		switch r.Get("quality").String() { // LiteLLM's mapping; others are left to the model's default
		case "hd", "premium", "high":
			cfg["quality"] = "premium"
		case "standard", "medium", "low":
			cfg["quality"] = "standard"
		}
		payload = map[string]any{
			"taskType":              "TEXT_IMAGE",
			"textToImageParams":     map[string]any{"text": prompt.Str},
			"imageGenerationConfig": cfg,
		}
	case stability:
		// LiteLLM maps no OpenAI parameter for these models (size and
		// quality are not sent); they make one image a call.
		if n > 1 {
			e := apierr.New(apierr.InvalidRequest, "n: deployment %s (%s) makes one image per request", d.ID, modelID)
			e.Param = "n"
			return nil, e
		}
		payload = map[string]any{"prompt": prompt.Str}
	default:
		return nil, badRequest("deployment %s: model %s is not a supported Bedrock image model (Titan Image Generator, Nova Canvas, Stability SD3 and Stable Image)", d.ID, modelID)
	}
	in, _ := json.Marshal(payload)
	out, err := cl.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{
		ModelId: aws.String(modelID), Body: in,
		ContentType: aws.String("application/json"), Accept: aws.String("application/json"),
	})
	if err != nil {
		return nil, Classify(d, err)
	}
	res := gjson.ParseBytes(out.Body)
	imgs := res.Get("images")
	if !gjson.ValidBytes(out.Body) || !imgs.IsArray() {
		return nil, apierr.New(apierr.UpstreamServer, "deployment %s returned an invalid image body", d.ID)
	}
	// Stability reports content-filtered images in finish_reasons; Titan
	// and Nova refuse with a ValidationException instead.
	if reasons := res.Get("finish_reasons"); reasons.IsArray() {
		for _, f := range reasons.Array() {
			if f.Type == gjson.String && f.Str != "" {
				return nil, badRequest("deployment %s: image not generated: %s", d.ID, f.Str)
			}
		}
	}
	b := make([]byte, 0, 64+len(out.Body))
	b = append(b, `{"created":`...)
	b = strconv.AppendInt(b, time.Now().Unix(), 10)
	b = append(b, `,"data":[`...)
	for i, img := range imgs.Array() {
		if img.Type != gjson.String {
			return nil, apierr.New(apierr.UpstreamServer, "deployment %s returned an invalid image body", d.ID)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"b64_json":`...)
		b = append(b, img.Raw...) // a JSON string already, base64 needs no re-escaping
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	resp := response("application/json", io.NopCloser(bytes.NewReader(b)))
	resp.ContentLength = int64(len(b))
	return resp, nil
}

// parseSize reads OpenAI's "WIDTHxHEIGHT".
func parseSize(s string) (w, h int, ok bool) {
	ws, hs, found := strings.Cut(s, "x")
	w, errW := strconv.Atoi(ws)
	h, errH := strconv.Atoi(hs)
	return w, h, found && errW == nil && errH == nil && w > 0 && h > 0
}
