package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestIsInvalidJSONForeign(t *testing.T) {
	if IsInvalidJSON(errors.New("request body is not valid JSON")) {
		t.Error("IsInvalidJSON is true for a foreign error with the same text")
	}
	if IsInvalidJSON(nil) {
		t.Error("IsInvalidJSON(nil) = true")
	}
}

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		params map[string]any
		want   string
	}{
		{"nil params", `{"model":"m"}`, nil, `{"model":"m"}`},
		{
			"adds what is missing",
			`{"model":"m"}`, map[string]any{"temperature": 0.7, "max_tokens": 100},
			`{"model":"m","temperature":0.7,"max_tokens":100}`,
		},
		{
			"client values win",
			`{"model":"m","temperature":0.2,"max_tokens":5}`, map[string]any{"temperature": 0.7, "max_tokens": 100, "top_p": 0.9},
			`{"model":"m","temperature":0.2,"max_tokens":5,"top_p":0.9}`,
		},
		{
			"explicit null from the client wins",
			`{"model":"m","temperature":null}`, map[string]any{"temperature": 0.7},
			`{"model":"m","temperature":null}`,
		},
		{
			"structured values",
			`{"model":"m"}`, map[string]any{"response_format": map[string]any{"type": "json_object"}, "stop": []any{"a", "b"}, "seed": 7},
			`{"model":"m","response_format":{"type":"json_object"},"stop":["a","b"],"seed":7}`,
		},
		{
			"nested client key of the same name does not count",
			`{"model":"m","messages":[{"role":"user","content":"x","temperature":1}]}`, map[string]any{"temperature": 0.3},
			`{"model":"m","messages":[{"role":"user","content":"x","temperature":1}],"temperature":0.3}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Spare capacity: a buggy in-place append would write into it.
			body := make([]byte, len(tt.body), len(tt.body)+256)
			copy(body, tt.body)
			orig := bytes.Clone(body[:cap(body)])
			out := SetDefaults(body, tt.params)
			if !bytes.Equal(body[:cap(body)], orig) {
				t.Fatal("SetDefaults modified its input")
			}
			if !json.Valid(out) {
				t.Fatalf("invalid JSON: %s", out)
			}
			if got, want := semantic(t, out), semantic(t, []byte(tt.want)); !reflect.DeepEqual(got, want) {
				t.Errorf("SetDefaults = %s, want %s", out, tt.want)
			}
		})
	}
}

func TestNullMock(t *testing.T) {
	r, err := Parse([]byte(`{"model":"gpt","stream":true,"tags":["a"],"mock_response":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Stream || r.HasMock {
		t.Fatalf("Stream=%v HasMock=%v; a null mock is no mock", r.Stream, r.HasMock)
	}
	if out := string(r.WithModel("gpt", false)); strings.Contains(out, "tags") || strings.Contains(out, "mock_response") {
		t.Fatalf("a gateway field was forwarded: %s", out)
	}
}

func TestInjectUsageShapes(t *testing.T) {
	for _, in := range []string{
		`{"model":"m","stream":true}`,
		` { "stream" : true , "model":"m"}`,
		`{"stream":true,"model":"m","stream_options":{"foo":1}}`,
		`{"stream":true,"model":"m","stream_options":{"include_usage":false}}`,
	} {
		r, err := Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		out := r.WithModel("m2", true)
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s -> invalid JSON %s", in, out)
		}
		so, _ := got["stream_options"].(map[string]any)
		if so["include_usage"] != true || got["model"] != "m2" {
			t.Errorf("%s -> %s", in, out)
		}
		if strings.Contains(in, "foo") && so["foo"] != float64(1) {
			t.Errorf("existing stream_options lost: %s", out)
		}
	}
}
