package gateway

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-gw/sluice/shared/gateway/gatewaytest"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Images are passed through and priced per image and size from the media
// table (dall-e-3 standard 1024x1792: 4.359e-08 a pixel), for the images
// the provider made.
func TestImagesPricedPerImage(t *testing.T) {
	s, url := recordingUpstream(t, "application/json", `{"created":1,"data":[{"url":"https://x/1.png"},{"url":"https://x/2.png"}]}`)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: img
    litellm_params: {model: openai/dall-e-3, api_base: %s}
`, url), nil)
	resp := f.post(t, "/v1/images/generations", "", `{"model":"img","prompt":"a cat","n":2,"size":"1024x1792"}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(out, "2.png") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if s.path != "/images/generations" || s.model != "dall-e-3" {
		t.Errorf("upstream %s model %q", s.path, s.model)
	}
	c := f.completion(t, resp)
	if c.Operation != wire.OpImages || !c.CostKnown || c.CostNanos != 159_975_997 {
		t.Errorf("cost %d known %v, want 2 x 1024x1792 x 4.359e-08", c.CostNanos, c.CostKnown)
	}
	if resp.Header.Get("X-Litellm-Response-Cost") != "0.159975997" {
		t.Errorf("cost header %q", resp.Header.Get("X-Litellm-Response-Cost"))
	}
	// A model the media table does not price has an unknown cost, never $0.
	_, url2 := recordingUpstream(t, "application/json", `{"created":1,"data":[{"url":"u"}]}`)
	f2 := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: img
    litellm_params: {model: openai/some-image-model, api_base: %s}
`, url2), nil)
	resp = f2.post(t, "/v1/images/generations", "", `{"model":"img","prompt":"a cat"}`)
	gatewaytest.ReadAll(t, resp.Body)
	if c := f2.completion(t, resp); c.CostKnown {
		t.Errorf("unpriced image model: cost known %d", c.CostNanos)
	}
}

// Moderations pass through and cost nothing (free at OpenAI).
func TestModerationsFree(t *testing.T) {
	_, url := recordingUpstream(t, "application/json", `{"id":"modr-1","model":"omni-moderation-latest","results":[{"flagged":false}]}`)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: mod
    litellm_params: {model: openai/omni-moderation-latest, api_base: %s}
`, url), nil)
	resp := f.post(t, "/v1/moderations", "", `{"model":"mod","input":"hello"}`)
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(out, "modr-1") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if c := f.completion(t, resp); c.Operation != wire.OpModerations || !c.CostKnown || c.CostNanos != 0 {
		t.Errorf("moderation cost %d known %v", c.CostNanos, c.CostKnown)
	}
}

// Speech answers audio bytes, passed through with their content type, and
// is priced per input character.
func TestSpeechPricedPerCharacter(t *testing.T) {
	audio := "ID3\x00\x01binary-mp3"
	_, url := recordingUpstream(t, "audio/mpeg", audio)
	f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: tts
    litellm_params: {model: azure/my-tts, api_base: %s, api_key: k}
    model_info: {base_model: tts-1}
`, url), nil)
	resp := f.post(t, "/v1/audio/speech", "", `{"model":"tts","input":"héllo","voice":"alloy"}`)
	out := gatewaytest.ReadAll(t, resp.Body)
	if resp.StatusCode != 200 || out != audio || resp.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("%d %q %s", resp.StatusCode, out, resp.Header.Get("Content-Type"))
	}
	if c := f.completion(t, resp); !c.CostKnown || c.CostNanos != 75_000 { // 5 characters at 1.5e-05
		t.Errorf("speech cost %d known %v", c.CostNanos, c.CostKnown)
	}
}

// multipartBody is a transcription form: a file and the fields given.
func multipartBody(t *testing.T, file []byte, fields ...string) (string, []byte) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", "a.mp3")
	fw.Write(file)
	for i := 0; i+1 < len(fields); i += 2 {
		mw.WriteField(fields[i], fields[i+1])
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

// Transcriptions: the model is read from the form and rewritten, the file
// passes through, and the cost is per second: the verbose_json duration
// when the provider reports it, else estimated from the file's size.
func TestTranscriptions(t *testing.T) {
	for _, tt := range []struct {
		name, answer, contentType string
		want                      int64
		estimated                 bool
	}{
		{"verbose_json", `{"text":"hi","duration":12.5}`, "application/json", 1_250_000, false},
		{"usage seconds", `{"text":"hi","usage":{"type":"duration","seconds":3}}`, "application/json", 300_000, false},
		{"text", "hi there", "text/plain; charset=utf-8", 200_000, true}, // 32000 bytes at 16 KB/s
	} {
		t.Run(tt.name, func(t *testing.T) {
			var gotModel, gotFile string
			up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
				if err := r.ParseMultipartForm(1 << 20); err != nil {
					t.Errorf("upstream form: %v", err)
				}
				gotModel = r.FormValue("model")
				if fh := r.MultipartForm.File["file"]; len(fh) == 1 {
					gotFile = fh[0].Filename
				}
				w.Header().Set("Content-Type", tt.contentType)
				fmt.Fprint(w, tt.answer)
			})
			f := newCostFixture(t, fmt.Sprintf(`model_list:
  - model_name: stt
    litellm_params: {model: openai/whisper-1, api_base: %s}
`, up.URL), nil)
			ct, body := multipartBody(t, bytes.Repeat([]byte{1}, 32000), "model", "stt", "response_format", "json")
			resp := f.send(t, http.MethodPost, "/v1/audio/transcriptions", bytes.NewReader(body), "Content-Type", ct)
			defer resp.Body.Close()
			if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 || out != tt.answer {
				t.Fatalf("%d %s", resp.StatusCode, out)
			}
			if gotModel != "whisper-1" || gotFile != "a.mp3" {
				t.Errorf("upstream form: model %q file %q", gotModel, gotFile)
			}
			c := f.completion(t, resp)
			if !c.CostKnown || c.CostNanos != tt.want || c.UsageEstimated != tt.estimated {
				t.Errorf("cost %d known %v estimated %v; want %d, %v", c.CostNanos, c.CostKnown, c.UsageEstimated, tt.want, tt.estimated)
			}
		})
	}
}

// A transcription that is not a multipart form, or has no file, is a 400.
func TestTranscriptionsBadForm(t *testing.T) {
	f := newFixture(t, `model_list:
  - model_name: stt
    litellm_params: {model: openai/whisper-1, api_base: http://127.0.0.1:1}
`, nil)
	resp := f.post(t, "/v1/audio/transcriptions", "", `{"model":"stt"}`)
	if msg := wantError(t, resp, 400); !strings.Contains(msg, "multipart/form-data") {
		t.Errorf("message %q", msg)
	}
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("model", "stt")
	mw.Close()
	resp = f.send(t, http.MethodPost, "/v1/audio/transcriptions", &b, "Content-Type", mw.FormDataContentType())
	if msg := wantError(t, resp, 400); !strings.Contains(msg, "'file'") {
		t.Errorf("message %q", msg)
	}
}

// A client's boundary that Go's multipart writer refuses (RFC 2046 allows
// it) still reaches the upstream as a well-formed form: a new boundary, and
// the Content-Type that names it.
func TestTranscriptionsOddBoundary(t *testing.T) {
	var gotModel string
	up := gatewaytest.Upstream(t, func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("upstream form: %v", err)
		}
		gotModel = r.FormValue("model")
		fmt.Fprint(w, `{"text":"hi"}`)
	})
	f := newFixture(t, fmt.Sprintf(`model_list:
  - model_name: stt
    litellm_params: {model: openai/whisper-1, api_base: %s}
`, up.URL), nil)
	const boundary = "odd boundary ending in space "
	body := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.mp3\"\r\n\r\nAUDIO\r\n--" + boundary +
		"\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nstt\r\n--" + boundary + "--\r\n"
	resp := f.send(t, http.MethodPost, "/v1/audio/transcriptions", strings.NewReader(body), "Content-Type", `multipart/form-data; boundary="`+boundary+`"`)
	defer resp.Body.Close()
	if out := gatewaytest.ReadAll(t, resp.Body); resp.StatusCode != 200 || gotModel != "whisper-1" {
		t.Errorf("%d %s, upstream model %q", resp.StatusCode, out, gotModel)
	}
}
