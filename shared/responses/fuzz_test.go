package responses

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/sse"
)

// FuzzToChat translates any Responses request body (valid JSON, as the
// gateway's parse lets through) to a chat request. Invariants: no panic;
// an error is a 400 naming its param; an answer is a JSON object with the
// model and messages of chat roles.
func FuzzToChat(f *testing.F) {
	f.Add([]byte(`{"model":"m","input":"hi","instructions":"be brief","max_output_tokens":5}`))
	f.Add([]byte(`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"u"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}],"tools":[{"type":"function","name":"f"}],"tool_choice":"auto"}`))
	f.Add([]byte(`{"input":[{"type":"function_call_output","output":[{"text":1}]}],"text":{"format":{"type":"json_schema"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		out, err := ToChat(body, "model-x", nil, true, true, len(body)%2 == 0)
		if err != nil {
			if e := apierr.From(err); e.Kind != apierr.InvalidRequest || e.Param == "" {
				t.Fatalf("error %v (kind %v, param %q)", err, e.Kind, e.Param)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("not JSON: %s\nfrom %s", out, body)
		}
		r := gjson.ParseBytes(out)
		if r.Get("model").Str != "model-x" || !r.Get("messages").IsArray() {
			t.Fatalf("shape: %s", out)
		}
		for _, m := range r.Get("messages").Array() {
			switch m.Get("role").Str {
			case "system", "user", "assistant", "tool":
			default:
				t.Fatalf("role %s in %s", m.Get("role").Raw, out)
			}
		}
	})
}

// FuzzStream feeds any chat stream (one chunk's data a line) to the
// translator. Invariants: no panic; every event it writes is an SSE event
// named as its JSON's type, numbered from 0 with no gap; the last is the
// response's end, carrying a JSON response object with the output items
// End returns.
func FuzzStream(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}
{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}
{"choices":[{"index":0,"delta":{"content":"Hel"}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{"}}]}}]}
{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]},"finish_reason":"tool_calls"}]}
{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}
[DONE]`))
	f.Add([]byte(`{"error":{"message":"x"}}
{"choices":[{"delta":{"content":"a"},"finish_reason":"length"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		s := NewStream(Meta{ID: "resp_x", Model: "m", Request: []byte(`{}`)})
		var out []byte
		for _, line := range bytes.Split(in, []byte("\n")) {
			out = append(out, s.Event(line)...)
		}
		end, obj, output := s.End()
		out = append(out, end...)
		if !json.Valid(obj) || !json.Valid(output) || gjson.GetBytes(obj, "output").Raw != string(output) {
			t.Fatalf("object %s, output %s", obj, output)
		}
		rd := sse.NewReader(bytes.NewReader(out))
		defer rd.Release()
		seq := int64(0)
		last := ""
		for {
			ev, err := rd.Next()
			if err != nil {
				break
			}
			name, _, _ := bytes.Cut(bytes.TrimPrefix(ev, []byte("event: ")), []byte("\n"))
			if !bytes.HasPrefix(ev, []byte("event: ")) { // an in-band error, passed through
				continue
			}
			data := sse.Data(ev)
			r := gjson.ParseBytes(data)
			if !json.Valid(data) || r.Get("type").Str != string(name) || r.Get("sequence_number").Int() != seq {
				t.Fatalf("event %d: %q", seq, ev)
			}
			seq++
			last = string(name)
		}
		if last != "response.completed" && last != "response.incomplete" {
			t.Fatalf("last event %q", last)
		}
	})
}
