package wire

import "github.com/tidwall/gjson"

// What the gateway reads of OpenAI's Responses API (POST /v1/responses).

// ParseResponses reads a Responses API request body: Parse's fields, with
// max_output_tokens as MaxTokens, and metadata forwarded (it is a
// Responses field, stored with the response); the gateway's own fields
// are LiteLLM's litellm_metadata (its tags) and those of chat requests.
func ParseResponses(body []byte) (*Request, error) { return parse(body, true) }

// responsesGatewayFields are the fields of a Responses request the
// gateway consumes: metadata is the API's own.
var responsesGatewayFields = append([]string{"litellm_metadata"}, routeOnly...)

// ResponsesUsage reads a Responses API usage object (a response's
// "usage"): input_tokens count every input token, cached ones included
// (input_tokens_details.cached_tokens), as OpenAI's prompt_tokens do; the
// gateway's own input_tokens_details.cache_creation_tokens (a translated
// provider's prompt cache writes) are CacheCreationTokens.
// ok is false when v is not such an object.
func ResponsesUsage(v gjson.Result) (u Usage, ok bool) {
	if !v.IsObject() {
		return u, false
	}
	has := false
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			u.PromptTokens, has = f.Int(), true
		case "output_tokens":
			u.CompletionTokens, has = f.Int(), true
		case "total_tokens":
			u.TotalTokens = f.Int()
		case "input_tokens_details":
			d := f.Map()
			u.CachedTokens, u.CacheCreationTokens = d["cached_tokens"].Int(), d["cache_creation_tokens"].Int()
		}
		return true
	})
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u, has
}

// ResponsesEventUsage reads the usage of a Responses stream event: only
// the events that end a response (response.completed, .incomplete,
// .failed) carry it.
func ResponsesEventUsage(data []byte) (Usage, bool) {
	t := gjson.GetBytes(data, "type").Str
	switch t {
	case "response.completed", "response.incomplete", "response.failed":
		return ResponsesUsage(gjson.GetBytes(data, "response.usage"))
	}
	return Usage{}, false
}
