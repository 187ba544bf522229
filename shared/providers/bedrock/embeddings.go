package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/providers/openai"
)

// embed answers /v1/embeddings through InvokeModel: Titan text embeddings
// (one call per input) and Cohere embed (one call for all inputs).
func embed(ctx context.Context, cl *bedrockruntime.Client, d *config.Deployment, modelID string, body []byte) (*http.Response, error) {
	r := gjson.ParseBytes(body)
	var inputs []string
	in := r.Get("input")
	switch {
	case in.Type == gjson.String:
		inputs = []string{in.Str}
	case in.IsArray():
		for _, v := range in.Array() {
			if v.Type != gjson.String {
				return nil, badRequest("input: Bedrock embedding models take text, not tokens")
			}
			inputs = append(inputs, v.Str)
		}
	}
	if len(inputs) == 0 {
		return nil, badRequest("input: at least one text is required")
	}
	invoke := func(payload any) (gjson.Result, error) {
		b, _ := json.Marshal(payload)
		out, err := cl.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{
			ModelId: aws.String(modelID), Body: b,
			ContentType: aws.String("application/json"), Accept: aws.String("application/json"),
		})
		if err != nil {
			return gjson.Result{}, Classify(d, err)
		}
		if !gjson.ValidBytes(out.Body) {
			return gjson.Result{}, apierr.New(apierr.UpstreamServer, "deployment %s returned an invalid embeddings body", d.ID)
		}
		return gjson.ParseBytes(out.Body), nil
	}
	vectors := make([]gjson.Result, 0, len(inputs))
	tokens := int64(-1)
	lower := strings.ToLower(modelID)
	switch {
	case strings.Contains(lower, "titan-embed"):
		tokens = 0
		for _, s := range inputs {
			p := map[string]any{"inputText": s}
			if n := r.Get("dimensions").Int(); n > 0 {
				p["dimensions"] = n
			}
			if strings.Contains(lower, "-v2") {
				p["normalize"] = true
			}
			res, err := invoke(p)
			if err != nil {
				return nil, err
			}
			vectors = append(vectors, res.Get("embedding"))
			tokens += res.Get("inputTextTokenCount").Int()
		}
	case strings.Contains(lower, "cohere.embed"):
		typ := r.Get("input_type").String()
		if typ == "" {
			typ = "search_document"
		}
		res, err := invoke(map[string]any{"texts": inputs, "input_type": typ})
		if err != nil {
			return nil, err
		}
		e := res.Get("embeddings")
		if e.IsObject() { // embedding_types asked: {"float": [...]}
			e = e.Get("float")
		}
		vectors = e.Array()
	default:
		return nil, badRequest("deployment %s: embeddings through Bedrock support Titan text embeddings and Cohere embed models", d.ID)
	}
	if len(vectors) != len(inputs) {
		return nil, apierr.New(apierr.UpstreamServer, "deployment %s returned %d embeddings for %d inputs", d.ID, len(vectors), len(inputs))
	}
	out := openai.AppendEmbeddings(make([]byte, 0, 64+len(vectors)*1024*10), vectors, r.Get("encoding_format").String() == "base64", modelID, tokens)
	resp := response("application/json", io.NopCloser(bytes.NewReader(out)))
	resp.ContentLength = int64(len(out))
	return resp, nil
}
