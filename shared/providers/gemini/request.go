package gemini

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/providers/openai"
	"github.com/sluice-gw/sluice/shared/wire"
)

// Options tune a translation.
type Options struct {
	// Model is the Gemini model called ("gemini-2.5-flash"): the thinking
	// budgets of reasoning_effort and Gemini 3's thought signatures
	// depend on it.
	Model string
	// DropParams drops the OpenAI params Gemini has no counterpart for;
	// without it (nor the body's own drop_params) they are a 400.
	DropParams bool
}

// The request's JSON shapes (the names LiteLLM sends: the API takes both
// snake_case and camelCase).
type (
	request struct {
		Contents          []content       `json:"contents"`
		SystemInstruction *content        `json:"system_instruction,omitempty"`
		Tools             []tool          `json:"tools,omitempty"`
		ToolConfig        *toolConfig     `json:"toolConfig,omitempty"`
		SafetySettings    json.RawMessage `json:"safetySettings,omitempty"`
		CachedContent     string          `json:"cachedContent,omitempty"`
		GenerationConfig  *genConfig      `json:"generationConfig,omitempty"`
	}
	content struct {
		Role  string `json:"role,omitempty"`
		Parts []part `json:"parts"`
	}
	part struct {
		Text             string            `json:"text,omitempty"`
		InlineData       *blob             `json:"inline_data,omitempty"`
		FileData         *fileData         `json:"file_data,omitempty"`
		FunctionCall     *functionCall     `json:"functionCall,omitempty"`
		FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
		ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	}
	blob struct {
		MimeType string `json:"mime_type"`
		Data     string `json:"data"`
	}
	fileData struct {
		MimeType string `json:"mime_type,omitempty"`
		FileURI  string `json:"file_uri"`
	}
	functionCall struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	functionResponse struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	}
	tool struct {
		FunctionDeclarations []functionDeclaration `json:"function_declarations,omitempty"`
		GoogleSearch         json.RawMessage       `json:"googleSearch,omitempty"`
	}
	functionDeclaration struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	toolConfig struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowed_function_names,omitempty"`
		} `json:"functionCallingConfig"`
	}
	genConfig struct {
		Temperature      json.RawMessage `json:"temperature,omitempty"`
		TopP             json.RawMessage `json:"top_p,omitempty"`
		TopK             json.RawMessage `json:"top_k,omitempty"`
		MaxOutputTokens  int64           `json:"max_output_tokens,omitempty"`
		CandidateCount   int64           `json:"candidate_count,omitempty"`
		StopSequences    []string        `json:"stop_sequences,omitempty"`
		Seed             json.RawMessage `json:"seed,omitempty"`
		PresencePenalty  json.RawMessage `json:"presence_penalty,omitempty"`
		FrequencyPenalty json.RawMessage `json:"frequency_penalty,omitempty"`
		ResponseMimeType string          `json:"response_mime_type,omitempty"`
		ResponseSchema   json.RawMessage `json:"response_schema,omitempty"`
		ResponseLogprobs bool            `json:"responseLogprobs,omitempty"`
		Logprobs         json.RawMessage `json:"logprobs,omitempty"`
		ThinkingConfig   *thinkingConfig `json:"thinkingConfig,omitempty"`
	}
	thinkingConfig struct {
		ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
		ThinkingLevel   string `json:"thinkingLevel,omitempty"`
		IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	}
)

func badRequest(format string, args ...any) *apierr.Error {
	return apierr.New(apierr.InvalidRequest, format, args...)
}

// ThoughtSeparator joins a tool call's id and the thought signature Gemini
// gave its function call (LiteLLM's THOUGHT_SIGNATURE_SEPARATOR): a client
// sends the id back with the call, and the signature goes back to Gemini,
// which wants it to continue a tool loop with thinking on (Gemini 3).
const ThoughtSeparator = "__thought__"

// dummySignature stands for a function call's signature that the client
// lost (a call from another provider): Gemini 3 refuses a call without one,
// and takes this value instead (Google's documented escape).
const dummySignature = "skip_thought_signature_validator"

// TranslateRequest turns an OpenAI chat completions body into a
// generateContent body.
func TranslateRequest(body []byte, o Options) ([]byte, error) {
	if err := wire.CheckDepth(body); err != nil { // before gjson recurses
		return nil, badRequest("%s", err)
	}
	if !gjson.ValidBytes(body) {
		return nil, badRequest("the request body is not valid JSON")
	}
	r := gjson.ParseBytes(body)
	if err := checkParams(r, o); err != nil {
		return nil, err
	}
	var req request
	if err := messages(&req, r.Get("messages"), strings.Contains(o.Model, "gemini-3")); err != nil {
		return nil, err
	}
	if len(req.Contents) == 0 && req.SystemInstruction != nil {
		// Only a system prompt: Gemini wants contents, so it is the
		// user's turn (as LiteLLM sends it).
		req.Contents = []content{{Role: "user", Parts: req.SystemInstruction.Parts}}
		req.SystemInstruction = nil
	}
	if len(req.Contents) == 0 {
		return nil, badRequest("messages: at least one message with content is required")
	}
	gc, err := generationConfig(r, o.Model)
	if err != nil {
		return nil, err
	}
	req.GenerationConfig = gc
	if err := tools(&req, r); err != nil {
		return nil, err
	}
	for _, k := range [...]string{"safety_settings", "safetySettings"} {
		if v := r.Get(k); v.IsArray() {
			req.SafetySettings = json.RawMessage(v.Raw)
		}
	}
	if v := r.Get("cached_content"); v.Type == gjson.String {
		req.CachedContent = v.Str
	}
	return json.Marshal(&req)
}

// checkParams refuses the OpenAI params Gemini has no counterpart for (as
// LiteLLM's UnsupportedParamsError), unless drop_params is set.
func checkParams(r gjson.Result, o Options) error {
	if o.DropParams || r.Get("drop_params").Bool() {
		return nil
	}
	var names []string
	for _, k := range [...]string{"logit_bias", "prediction", "audio"} {
		if v := r.Get(k); v.Exists() && v.Type != gjson.Null {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	e := badRequest("gemini does not support parameters: [%s], for model=%s. To drop these, set \"drop_params\": true in the request, or litellm_settings: drop_params: true in the config",
		strings.Join(names, ", "), o.Model)
	e.Param = names[0]
	return e
}

// messages translates the OpenAI messages into req's system instruction and
// contents: consecutive messages of one Gemini role are merged (tool results
// are user content, and Gemini wants a turn's function responses together).
func messages(req *request, msgs gjson.Result, gemini3 bool) error {
	names := map[string]string{} // tool call id -> function name, for the results
	var err error
	add := func(role string, parts []part) {
		if len(parts) == 0 {
			return
		}
		if n := len(req.Contents); n > 0 && req.Contents[n-1].Role == role {
			req.Contents[n-1].Parts = append(req.Contents[n-1].Parts, parts...)
			return
		}
		req.Contents = append(req.Contents, content{Role: role, Parts: parts})
	}
	msgs.ForEach(func(_, m gjson.Result) bool {
		var parts []part
		switch role := m.Get("role").String(); role {
		case "system", "developer":
			if parts, err = contentParts(m.Get("content"), false); err == nil && len(parts) > 0 {
				if req.SystemInstruction == nil {
					req.SystemInstruction = &content{}
				}
				req.SystemInstruction.Parts = append(req.SystemInstruction.Parts, parts...)
			}
		case "user":
			if parts, err = contentParts(m.Get("content"), true); err == nil {
				add("user", parts)
			}
		case "assistant":
			if parts, err = contentParts(m.Get("content"), false); err != nil {
				return false
			}
			m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
				id := tc.Get("id").String()
				name := tc.Get("function.name").String()
				names[id] = name
				args := strings.TrimSpace(tc.Get("function.arguments").String())
				if args != "" && wire.CheckDepth([]byte(args)) != nil {
					err = badRequest("messages: tool call arguments nest deeper than %d levels", wire.MaxDepth)
					return false
				}
				if args == "" || !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
					args = "{}"
				}
				p := part{FunctionCall: &functionCall{Name: name, Args: json.RawMessage(args)}}
				if _, sig, ok := strings.Cut(id, ThoughtSeparator); ok && sig != "" {
					p.ThoughtSignature = sig
				} else if gemini3 {
					p.ThoughtSignature = dummySignature
				}
				parts = append(parts, p)
				return true
			})
			if err == nil {
				add("model", parts)
			}
		case "tool", "function":
			id := m.Get("tool_call_id").String()
			name := names[id]
			if name == "" {
				name = m.Get("name").String()
			}
			text, terr := toolResultText(m.Get("content"))
			if terr != nil {
				err = terr
				return false
			}
			resp, _ := json.Marshal(map[string]string{"content": text})
			add("user", []part{{FunctionResponse: &functionResponse{Name: name, Response: resp}}})
		default:
			err = badRequest("messages: role %q is not supported by Gemini deployments", role)
		}
		return err == nil
	})
	return err
}

// toolResultText is a tool message's content as one text.
func toolResultText(c gjson.Result) (string, error) {
	if !c.IsArray() {
		return c.String(), nil
	}
	var b strings.Builder
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").String() == "text" {
			b.WriteString(p.Get("text").String())
		}
		return true
	})
	return b.String(), nil
}

// contentParts translates a message's content (a string, or a list of
// parts) into Gemini parts; images and files only where allowed (user
// messages).
func contentParts(c gjson.Result, media bool) ([]part, error) {
	if c.Type == gjson.String {
		if c.Str == "" {
			return nil, nil
		}
		return []part{{Text: c.Str}}, nil
	}
	if !c.IsArray() {
		return nil, nil
	}
	var parts []part
	var err error
	c.ForEach(func(_, p gjson.Result) bool {
		switch p.Get("type").String() {
		case "text":
			if t := p.Get("text").String(); t != "" {
				parts = append(parts, part{Text: t})
			}
		case "image_url":
			var u string
			if u, err = openai.ImageURL(p, media); err != nil {
				return false
			}
			var np part
			if np, err = mediaPart(u, p.Get("image_url.format").String()); err == nil {
				parts = append(parts, np)
			}
		case "file":
			if !media {
				err = badRequest("files are allowed in user messages only")
				return false
			}
			f := p.Get("file")
			u := f.Get("file_data").String()
			if u == "" {
				u = f.Get("file_id").String()
			}
			var np part
			if np, err = mediaPart(u, f.Get("format").String()); err == nil {
				parts = append(parts, np)
			}
		default:
			err = badRequest("messages: content part type %q is not supported by Gemini deployments", p.Get("type").String())
		}
		return err == nil
	})
	return parts, err
}

// mediaPart is an image or file: a data URL as inline_data (base64), any
// other URL (gs://, a Files API URI, https) as file_data, which Gemini reads
// itself; the gateway never fetches a URL. format (LiteLLM's image_url.format)
// names the MIME type, else the URL's extension does.
func mediaPart(u, format string) (part, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || media == "" {
			return part{}, badRequest("image_url: a data URL must be data:<type>;base64,<data>")
		}
		return part{InlineData: &blob{MimeType: media, Data: data}}, nil
	}
	if u == "" || strings.ContainsAny(u, " \n") || !strings.Contains(u, ":") {
		return part{}, badRequest("image_url: expected a data URL, a gs:// URI or an http(s) URL")
	}
	if format == "" {
		format = mimeOf(u)
	}
	return part{FileData: &fileData{MimeType: format, FileURI: u}}, nil
}

// mimeOf guesses a file URL's MIME type from its extension (as LiteLLM
// does for file_data); "" when unknown (a Files API URI needs none).
func mimeOf(u string) string {
	if strings.Contains(u, "youtube.com/") || strings.Contains(u, "youtu.be/") {
		return "video/mp4"
	}
	path, _, _ := strings.Cut(u, "?")
	ext := strings.ToLower(path[strings.LastIndexByte(path, '.')+1:])
	switch ext {
	case "jpg", "jpeg":
		return "image/jpeg"
	case "png", "gif", "webp", "heic", "heif":
		return "image/" + ext
	case "pdf":
		return "application/pdf"
	case "mp4", "mpeg", "mov", "webm":
		return "video/" + ext
	case "mp3", "wav", "aac", "ogg", "flac":
		return "audio/" + ext
	case "txt":
		return "text/plain"
	}
	return ""
}
