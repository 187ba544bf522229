package lambda_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Speech (audio bytes out) and a transcription (a multipart form in, as a
// function URL delivers it: base64) through the real gateway handler behind
// lambdahttp.Start.
func TestMediaThroughRuntimeAPI(t *testing.T) {
	audio := []byte("ID3\x04\x00\xff\xfe binary audio \x00\x80")
	var gotModel, gotFile string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/audio/speech":
			w.Header().Set("Content-Type", "audio/mpeg")
			w.Write(audio)
		case "/v1/audio/transcriptions":
			if err := r.ParseMultipartForm(1 << 20); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			gotModel = r.FormValue("model")
			if f, _, err := r.FormFile("file"); err == nil {
				b, _ := io.ReadAll(f)
				gotFile = string(b)
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"text":"hello","duration":2}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(up.Close)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`model_list:
  - model_name: tts
    litellm_params: {model: openai/tts-1, api_base: %[1]s/v1, api_key: sk-upstream-test}
  - model_name: stt
    litellm_params: {model: openai/whisper-1, api_base: %[1]s/v1, api_key: sk-upstream-test}
`, up.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	api := newRuntimeAPI(t)
	startChild(t, api, "GATEWAY_CONFIG="+cfg)
	deadline := time.Now().Add(10 * time.Minute).Truncate(time.Millisecond)

	inv := api.invoke(t, urlEvent(t, "POST", "/v1/audio/speech", map[string]string{"model": "tts", "input": "hello", "voice": "alloy"}), deadline)
	r, err := parseStreamed(inv.wait(t).body)
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode != 200 || r.header("Content-Type") != "audio/mpeg" || !bytes.Equal(r.Body, audio) || r.header("X-Litellm-Response-Cost") != "0.000075" {
		t.Errorf("speech: %d %v %q", r.StatusCode, r.Headers, r.Body)
	}

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "a.mp3")
	fw.Write(audio)
	mw.WriteField("model", "stt")
	mw.WriteField("response_format", "verbose_json")
	mw.Close()
	var ev map[string]any
	if err := json.Unmarshal(urlEvent(t, "POST", "/v1/audio/transcriptions", nil), &ev); err != nil {
		t.Fatal(err)
	}
	ev["headers"].(map[string]any)["content-type"] = mw.FormDataContentType()
	ev["body"], ev["isBase64Encoded"] = base64.StdEncoding.EncodeToString(form.Bytes()), true
	raw, _ := json.Marshal(ev)
	inv = api.invoke(t, raw, deadline)
	if r, err = parseStreamed(inv.wait(t).body); err != nil {
		t.Fatal(err)
	}
	if r.StatusCode != 200 || string(r.Body) != `{"text":"hello","duration":2}` || r.header("X-Litellm-Response-Cost") != "0.0002" {
		t.Errorf("transcription: %d %v %s", r.StatusCode, r.Headers, r.Body)
	}
	if gotModel != "whisper-1" || gotFile != string(audio) {
		t.Errorf("upstream form: model %q, file %q", gotModel, gotFile)
	}
}
