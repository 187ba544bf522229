package gemini

import (
	"encoding/json"
	"errors"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/openai"
)

// TranslateEmbeddings turns an OpenAI embeddings body into the body of the
// method it calls: embedContent for one text, batchEmbedContents for a list
// (as LiteLLM sends them); dimensions -> outputDimensionality, and
// LiteLLM's task_type passed as taskType.
func TranslateEmbeddings(body []byte, model string) (method string, out []byte, err error) {
	if !gjson.ValidBytes(body) {
		return "", nil, badRequest("the request body is not valid JSON")
	}
	r := gjson.ParseBytes(body)
	type text struct {
		Text string `json:"text"`
	}
	type embedRequest struct {
		Model   string `json:"model,omitempty"`
		Content struct {
			Parts []text `json:"parts"`
		} `json:"content"`
		OutputDimensionality int64  `json:"outputDimensionality,omitempty"`
		TaskType             string `json:"taskType,omitempty"`
	}
	mk := func(s string) embedRequest {
		e := embedRequest{OutputDimensionality: r.Get("dimensions").Int(), TaskType: r.Get("task_type").String()}
		e.Content.Parts = []text{{Text: s}}
		return e
	}
	in := r.Get("input")
	switch {
	case in.Type == gjson.String:
		out, err = json.Marshal(mk(in.Str))
		return MethodEmbed, out, err
	case in.IsArray() && len(in.Array()) > 0:
		var reqs []embedRequest
		for _, v := range in.Array() {
			if v.Type != gjson.String {
				return "", nil, badRequest("input: Gemini embedding models take text, not tokens")
			}
			e := mk(v.Str)
			e.Model = "models/" + model
			reqs = append(reqs, e)
		}
		out, err = json.Marshal(struct {
			Requests []embedRequest `json:"requests"`
		}{reqs})
		return MethodBatchEmbed, out, err
	}
	return "", nil, badRequest("input: at least one text is required")
}

var errNotEmbeddings = errors.New("gemini: the response holds no embeddings")

// EmbeddingsResponse turns an embedContent or batchEmbedContents response
// into an OpenAI embeddings list (base64 when b64). Gemini reports no token
// count: the gateway estimates the usage.
func EmbeddingsResponse(raw []byte, model string, b64 bool) ([]byte, error) {
	r := gjson.ParseBytes(raw)
	var vectors []gjson.Result
	if e := r.Get("embedding.values"); e.IsArray() {
		vectors = []gjson.Result{e}
	} else {
		r.Get("embeddings").ForEach(func(_, e gjson.Result) bool {
			vectors = append(vectors, e.Get("values"))
			return true
		})
	}
	if len(vectors) == 0 {
		return nil, errNotEmbeddings
	}
	return openai.AppendEmbeddings(nil, vectors, b64, model, -1), nil
}
