package mock

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// textCompletion answers a legacy text completion (object
// "text_completion"), whole or as a stream of text chunks.
func textCompletion(model, reply string, call wire.Call) []byte {
	id := "cmpl-mock-" + strconv.FormatUint(seq.Add(1), 10)
	created := time.Now().Unix()
	prompt := int64(call.PromptTokens)
	completion := int64(len(strings.Fields(reply)))
	choice := func(text string, finish any) []any {
		return []any{map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}}
	}
	if !call.Stream {
		body, _ := json.Marshal(map[string]any{
			"id": id, "object": "text_completion", "created": created, "model": model,
			"choices": choice(reply, "stop"), "usage": usage(prompt, completion),
		})
		return body
	}
	var b bytes.Buffer
	event := func(v map[string]any) {
		j, _ := json.Marshal(v)
		b.WriteString("data: ")
		b.Write(j)
		b.WriteString("\n\n")
	}
	words := strings.SplitAfter(reply, " ")
	for i, w := range words {
		var finish any
		if i == len(words)-1 {
			finish = "stop"
		}
		event(map[string]any{"id": id, "object": "text_completion", "created": created, "model": model, "choices": choice(w, finish)})
	}
	if gjson.GetBytes(call.Body, "stream_options.include_usage").Bool() {
		event(map[string]any{"id": id, "object": "text_completion", "created": created, "model": model, "choices": []any{}, "usage": usage(prompt, completion)})
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}
