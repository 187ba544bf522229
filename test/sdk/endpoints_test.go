package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// mediaUpstream is a fake OpenAI (and Azure OpenAI) server for the
// pass-through operations: text completions (whole or streamed), images,
// moderations, speech (audio bytes) and transcriptions (a multipart form).
type mediaUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
	model string // the last request's model (JSON body or form field)
}

func newMediaUpstream(t *testing.T) *mediaUpstream {
	u := &mediaUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *mediaUpstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	model := ""
	if mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for p, err := mr.NextPart(); err == nil; p, err = mr.NextPart() {
			if p.FormName() == "model" {
				b, _ := io.ReadAll(p)
				model = string(b)
			}
		}
	} else {
		var m struct{ Model string }
		_ = json.Unmarshal(body, &m)
		model = m.Model
	}
	u.mu.Lock()
	u.paths = append(u.paths, r.URL.Path)
	u.model = model
	u.mu.Unlock()
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/completions") && !strings.HasSuffix(path, "/chat/completions"):
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, s := range []string{"Hello", " world"} {
				fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":%q,\"choices\":[{\"text\":%q,\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}\n\n", model, s)
			}
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2,\"total_tokens\":4}}\n\ndata: [DONE]\n\n", model)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"cmpl-1","object":"text_completion","created":1,"model":%q,"choices":[{"text":"Hello world","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}`, model)
	case strings.HasSuffix(path, "/chat/completions"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi from azure"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}`, model)
	case strings.HasSuffix(path, "/embeddings"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","model":%q,"data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`, model)
	case strings.HasSuffix(path, "/images/generations"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"created":1,"data":[{"url":"https://example.com/cat.png","revised_prompt":"a cat"}]}`)
	case strings.HasSuffix(path, "/moderations"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"modr-1","model":%q,"results":[{"flagged":false,"categories":{},"category_scores":{}}]}`, model)
	case strings.HasSuffix(path, "/audio/speech"):
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Write([]byte("ID3\x04fake-mp3-bytes"))
	case strings.HasSuffix(path, "/audio/transcriptions"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"task":"transcribe","language":"english","duration":4.5,"text":"hello from the file"}`)
	default:
		http.NotFound(w, r)
	}
}

func (u *mediaUpstream) last() (string, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.paths[len(u.paths)-1], u.model
}

func mediaConfig(up string) string {
	return fmt.Sprintf(`model_list:
  - model_name: instruct
    litellm_params: {model: openai/gpt-3.5-turbo-instruct, api_base: %[1]s/v1, api_key: sk-upstream, input_cost_per_token: 0.0000015, output_cost_per_token: 0.000002}
  - model_name: dalle
    litellm_params: {model: openai/dall-e-3, api_base: %[1]s/v1, api_key: sk-upstream}
  - model_name: mod
    litellm_params: {model: openai/omni-moderation-latest, api_base: %[1]s/v1, api_key: sk-upstream}
  - model_name: tts
    litellm_params: {model: openai/tts-1, api_base: %[1]s/v1, api_key: sk-upstream}
  - model_name: whisper
    litellm_params: {model: openai/whisper-1, api_base: %[1]s/v1, api_key: sk-upstream}
  - model_name: az-chat
    litellm_params: {model: azure/prod-chat, api_base: %[1]s, api_key: az-upstream, api_version: "2024-10-21", input_cost_per_token: 0.000001, output_cost_per_token: 0.000002}
  - model_name: az-embed
    litellm_params: {model: azure/prod-embed, api_base: %[1]s, api_key: az-upstream, input_cost_per_token: 0.0000001, output_cost_per_token: 0}
  - model_name: az-instruct
    litellm_params: {model: azure/prod-instruct, api_base: %[1]s, api_key: az-upstream, input_cost_per_token: 0.0000015, output_cost_per_token: 0.000002}
general_settings: {master_key: sk-master}
`, up)
}

// The OpenAI SDK's completions, images, moderations and audio calls through
// the gateway (local mode) to a fake OpenAI.
func TestEndpointsSDK(t *testing.T) {
	up := newMediaUpstream(t)
	s := startServerT(t, mediaConfig(up.URL))
	client := newClient(s, option.WithAPIKey("sk-master"))

	t.Run("completions", func(t *testing.T) {
		var raw *http.Response
		c, err := client.Completions.New(testContext(t), openai.CompletionNewParams{
			Model: "instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hello")}, MaxTokens: openai.Int(5),
		}, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Text != "Hello world" || c.Usage.TotalTokens != 4 {
			t.Fatalf("completion %s", c.RawJSON())
		}
		if path, model := up.last(); path != "/v1/completions" || model != "gpt-3.5-turbo-instruct" {
			t.Errorf("upstream %s model %q", path, model)
		}
		if got := raw.Header.Get("X-Litellm-Response-Cost"); got != "0.000007" { // 2 x 1.5e-06 + 2 x 2e-06
			t.Errorf("cost %q", got)
		}
	})
	t.Run("completions stream", func(t *testing.T) {
		st := client.Completions.NewStreaming(testContext(t), openai.CompletionNewParams{
			Model: "instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Say hello")},
		})
		var text strings.Builder
		for st.Next() {
			for _, ch := range st.Current().Choices {
				text.WriteString(ch.Text)
			}
		}
		if err := st.Err(); err != nil || text.String() != "Hello world" {
			t.Fatalf("stream %q: %v", text.String(), err)
		}
	})
	t.Run("images", func(t *testing.T) {
		var raw *http.Response
		img, err := client.Images.Generate(testContext(t), openai.ImageGenerateParams{Prompt: "a cat", Model: "dalle", Size: "1024x1024"}, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if len(img.Data) != 1 || img.Data[0].URL != "https://example.com/cat.png" {
			t.Fatalf("images %s", img.RawJSON())
		}
		if got := raw.Header.Get("X-Litellm-Response-Cost"); got != "0.039999924" { // dall-e-3 standard 1024x1024
			t.Errorf("cost %q", got)
		}
	})
	t.Run("moderations", func(t *testing.T) {
		m, err := client.Moderations.New(testContext(t), openai.ModerationNewParams{Model: "mod", Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("hello")}})
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != "modr-1" || m.Model != "omni-moderation-latest" || len(m.Results) != 1 {
			t.Fatalf("moderation %s", m.RawJSON())
		}
	})
	t.Run("speech", func(t *testing.T) {
		resp, err := client.Audio.Speech.New(testContext(t), openai.AudioSpeechNewParams{Model: "tts", Input: "hello there", Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "ID3\x04fake-mp3-bytes" || resp.Header.Get("Content-Type") != "audio/mpeg" {
			t.Fatalf("speech %q %s", b, resp.Header.Get("Content-Type"))
		}
		if got := resp.Header.Get("X-Litellm-Response-Cost"); got != "0.000165" { // 11 characters at 1.5e-05
			t.Errorf("cost %q", got)
		}
	})
	t.Run("transcriptions", func(t *testing.T) {
		var raw *http.Response
		tr, err := client.Audio.Transcriptions.New(testContext(t), openai.AudioTranscriptionNewParams{
			Model: "whisper", File: openai.File(bytes.NewReader(bytes.Repeat([]byte{7}, 4096)), "a.mp3", "audio/mpeg"),
			ResponseFormat: openai.AudioResponseFormatVerboseJSON,
		}, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Text != "hello from the file" {
			t.Fatalf("transcription %s", tr.RawJSON())
		}
		if path, model := up.last(); path != "/v1/audio/transcriptions" || model != "whisper-1" {
			t.Errorf("upstream %s model %q", path, model)
		}
		if got := raw.Header.Get("X-Litellm-Response-Cost"); got != "0.00045" { // 4.5 s at $0.0001
			t.Errorf("cost %q", got)
		}
	})
}

// The Azure OpenAI client (openai-go's azure package) against the gateway:
// its deployment paths, api-version query and api-key header.
func TestAzureSDK(t *testing.T) {
	up := newMediaUpstream(t)
	s := startServerT(t, mediaConfig(up.URL))
	client := openai.NewClient(
		azure.WithEndpoint(s.base, "2024-06-01"),
		azure.WithAPIKey("sk-master"),
		azure.WithUnsafeAllowHTTP(), // a loopback gateway in a test
		option.WithMaxRetries(0),
	)
	c, err := client.Chat.Completions.New(testContext(t), chatParams("az-chat"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Choices[0].Message.Content != "hi from azure" {
		t.Fatalf("chat %s", c.RawJSON())
	}
	if path, model := up.last(); path != "/openai/deployments/prod-chat/chat/completions" || model != "prod-chat" {
		t.Errorf("upstream %s model %q", path, model)
	}
	e, err := client.Embeddings.New(testContext(t), openai.EmbeddingNewParams{Model: "az-embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if err != nil || len(e.Data) != 1 {
		t.Fatalf("embeddings %v %v", e, err)
	}
	tc, err := client.Completions.New(testContext(t), openai.CompletionNewParams{Model: "az-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}})
	if err != nil || tc.Choices[0].Text != "Hello world" {
		t.Fatalf("completions %v %v", tc, err)
	}
	bad := openai.NewClient(azure.WithEndpoint(s.base, "2024-06-01"), azure.WithAPIKey("sk-wrong"), azure.WithUnsafeAllowHTTP(), option.WithMaxRetries(0))
	_, err = bad.Chat.Completions.New(testContext(t), chatParams("az-chat"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("a wrong api-key: %v", err)
	}
}

// The info and health routes, raw HTTP as LiteLLM's scripts call them.
func TestInfoRoutesHTTP(t *testing.T) {
	up := newMediaUpstream(t)
	s := startServerT(t, mediaConfig(up.URL))
	get := func(path, key string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	if st, v := get("/model_group/info", "sk-master"); st != 200 || len(v["data"].([]any)) != 8 {
		t.Errorf("/model_group/info: %d %v", st, v)
	}
	if st, v := get("/v1/model/info", "sk-master"); st != 200 || len(v["data"].([]any)) != 8 || strings.Contains(fmt.Sprint(v), "sk-upstream") {
		t.Errorf("/v1/model/info: %d %v", st, v)
	}
	if st, v := get("/routes", "sk-master"); st != 200 || len(v["routes"].([]any)) < 20 {
		t.Errorf("/routes: %d %v", st, v)
	}
	st, v := get("/health", "sk-master")
	// The media models are listed unchecked; the chat, completion and
	// embedding deployments and the moderation model are called.
	if st != 200 || v["healthy_count"] != 5.0 || v["unhealthy_count"] != 3.0 || strings.Contains(fmt.Sprint(v), "sk-upstream") {
		t.Errorf("/health: %d %v", st, v)
	}
	if st, _ := get("/health", ""); st != 401 {
		t.Errorf("/health without a key: %d", st)
	}
	if st, v := get("/health/readiness", ""); st != 200 || v["status"] != "healthy" {
		t.Errorf("/health/readiness: %d %v", st, v)
	}
	if st, v := get("/health/readiness/details", "sk-master"); st != 200 || v["db"] == nil || v["litellm_version"] == nil {
		t.Errorf("/health/readiness/details: %d %v", st, v)
	}
}
