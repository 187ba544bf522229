package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// FuzzParse feeds any body to Parse and WithModel, the gateway's reading and
// rewriting of a client's request. Invariants:
//   - Parse never panics; an error is ErrTooDeep, the invalid-JSON error
//     or a *FieldError naming model, stream or a repeated top-level key;
//   - a body encoding/json accepts as an object is never refused as invalid;
//   - model and stream read as encoding/json reads them;
//   - WithModel of a valid body is valid JSON whose model reads back as the
//     new name, without the gateway's own fields, with every other member
//     unchanged, and with stream_options.include_usage when it was injected;
//   - WithModel never modifies the original body.
//
// The seed corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}],"tags":["a"],"metadata":{"tags":["b"]},"fallbacks":["x",{"model":"y"}],"num_retries":3,"mock_response":"ok"}`,
		`{"stream":true,"model":"m","stream_options":{"include_usage":false}}`,
		`{"model":"a","model":"b","stream":true,"stream":false}`,
		`{"model":"a\"b\\c\u00e9\ud83d\ude00/\/","max_tokens":1e400}`,
		`[1,2]`,
		`{"model":null}`,
	} {
		f.Add([]byte(s), "gpt-4o-2024-08-06", true)
	}
	f.Fuzz(func(t *testing.T, body []byte, model string, inject bool) {
		orig := bytes.Clone(body)
		r, err := Parse(body)
		var top map[string]json.RawMessage
		stdValid := json.Unmarshal(body, &top) == nil && top != nil
		if err != nil {
			var fe *FieldError
			switch {
			case errors.Is(err, ErrTooDeep): // a bound on nesting, not a judgement of validity
				if CheckDepth(body) == nil {
					t.Fatalf("ErrTooDeep for a body within MaxDepth")
				}
			case IsInvalidJSON(err):
				if stdValid {
					t.Fatalf("Parse refused a JSON object as invalid: %v", err)
				}
			case errors.As(err, &fe):
				if fe.Param != "model" && fe.Param != "stream" && !strings.HasPrefix(fe.Msg, "duplicate key ") {
					t.Fatalf("field error names %q", fe.Param)
				}
			default:
				t.Fatalf("Parse error of no known kind: %v", err)
			}
			return
		}
		if !stdValid {
			return // gjson accepted what encoding/json did not: nothing more to compare
		}
		// model and stream as encoding/json reads them.
		var wantModel *string
		if raw := bytes.TrimSpace(top["model"]); len(raw) > 0 && raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				wantModel = &s
			}
		}
		switch {
		case wantModel == nil && r.Model != "":
			t.Fatalf("Model = %q, encoding/json reads %s", r.Model, top["model"])
		case wantModel != nil && utf8.ValidString(r.Model) && r.Model != *wantModel: // invalid UTF-8 reads as U+FFFD in encoding/json
			t.Fatalf("Model = %q, encoding/json reads %q", r.Model, *wantModel)
		}
		if raw, ok := top["stream"]; ok {
			if got, want := r.Stream, string(bytes.TrimSpace(raw)) == "true"; got != want {
				t.Fatalf("Stream = %v, encoding/json reads %s", got, raw)
			}
		}

		out := r.WithModel(model, inject)
		if !bytes.Equal(body, orig) {
			t.Fatal("WithModel modified the original body")
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil || got == nil {
			t.Fatalf("WithModel of a valid body is not a JSON object: %v\n in: %s\nout: %s", err, body, out)
		}
		if wantModel != nil && utf8.ValidString(model) {
			var m string
			if err := json.Unmarshal(got["model"], &m); err != nil || m != model {
				t.Fatalf("model reads back as %s, want %q\n in: %s\nout: %s", got["model"], model, body, out)
			}
		}
		for _, k := range gatewayFields {
			if _, ok := got[k]; ok {
				t.Fatalf("gateway field %q forwarded\n in: %s\nout: %s", k, body, out)
			}
		}
		for k, v := range top {
			if k == "model" || k == "stream_options" || slices.Contains(gatewayFields, k) {
				continue
			}
			if !sameJSON(v, got[k]) {
				t.Fatalf("member %q changed: %s -> %s\n in: %s\nout: %s", k, v, got[k], body, out)
			}
		}
		if inject && r.Stream {
			var so map[string]json.RawMessage
			if json.Unmarshal(got["stream_options"], &so) != nil || string(so["include_usage"]) != "true" {
				t.Fatalf("include_usage not injected\n in: %s\nout: %s", body, out)
			}
		} else if !sameJSON(top["stream_options"], got["stream_options"]) && !(inject && r.Stream) {
			t.Fatalf("stream_options changed without injection\n in: %s\nout: %s", body, out)
		}
	})
}

// sameJSON reports whether two JSON texts (nil: absent) decode to equal values.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, erra := decodeNumbers(a)
	vb, errb := decodeNumbers(b)
	return erra == nil && errb == nil && reflect.DeepEqual(va, vb)
}

// decodeNumbers decodes JSON keeping numbers as written (1e400 included).
func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// FuzzUsage feeds any response body or stream event to UsageOf, TextBytes
// and TextMeter. Invariants: no panic; for a JSON object whose only "usage"
// member is its top-level one (the shape of every OpenAI body and chunk),
// UsageOf reads what encoding/json finds there; TextBytes counts at most the
// bytes it is given.
//
// The seed corpus is in testdata/fuzz/FuzzUsage.
func FuzzUsage(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","choices":[{"message":{"content":"usage"}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":3}}}`,
		`{"choices":[{"delta":{"content":"hi"}}],"usage":null}`,
		`{"usage":{"prompt_tokens":7,"cache_read_input_tokens":2,"cache_creation_input_tokens":1}}`,
		`{"usage":{"prompt_tokens":1e3,"completion_tokens":"12","total_tokens":-1}}`,
		`{"usage" : { "prompt_tokens" : 1 , "prompt_cache_hit_tokens" : 4 } , "x":"usage"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, ok := UsageOf(data)
		if n := TextBytes(data); n < 0 || n > len(data) {
			t.Fatalf("TextBytes = %d of %d bytes", n, len(data))
		}
		var m TextMeter
		m.Add(data)
		m.Add(data)
		if m.Bytes() < 0 {
			t.Fatalf("TextMeter counted %d", m.Bytes())
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil || top == nil || nestedUsage(data) {
			return
		}
		want, wantOK := referenceUsage(top["usage"])
		if ok != wantOK || (ok && u != want) {
			t.Fatalf("UsageOf = %+v, %v; encoding/json finds %+v, %v\n%s", u, ok, want, wantOK, data)
		}
	})
}

// nestedUsage reports whether a "usage" member appears below the top level
// of a valid JSON document.
func nestedUsage(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct{ object, wantKey bool }
	var stack []level
	valueDone := func() { // a value ended: in an object, a key comes next
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, level{object: v == '{', wantKey: v == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		case string:
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				if v == "usage" && n > 1 {
					return true
				}
				stack[n-1].wantKey = false
				continue
			}
		}
		valueDone()
	}
}

// referenceUsage reads a usage object found by encoding/json, with gjson's
// number conversions (the same as UsageOf's).
func referenceUsage(raw json.RawMessage) (Usage, bool) {
	var m map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &m) != nil || m == nil {
		return Usage{}, false
	}
	num := func(r json.RawMessage) int64 { return gjson.ParseBytes(r).Int() }
	var u Usage
	p, hasPrompt := m["prompt_tokens"]
	u.PromptTokens = num(p)
	u.CompletionTokens = num(m["completion_tokens"])
	u.TotalTokens = num(m["total_tokens"])
	u.CacheCreationTokens = num(m["cache_creation_input_tokens"])
	var details map[string]json.RawMessage
	var detailsCached int64
	if json.Unmarshal(m["prompt_tokens_details"], &details) == nil && details != nil {
		detailsCached = num(details["cached_tokens"])
	}
	// Which of the three names wins, and the missing total, are settle's
	// (TestUsageOf pins them); the oracle checks the reading.
	u.settle(detailsCached, num(m["cache_read_input_tokens"]), num(m["prompt_cache_hit_tokens"]))
	return u, hasPrompt || u.TotalTokens > 0
}
