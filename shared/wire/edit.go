package wire

import (
	"bytes"
	"errors"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

var (
	errInvalidJSON = errors.New("request body is not valid JSON")
	errNotObject   = errors.New("request body must be a JSON object")
)

// IsInvalidJSON reports whether err is Parse's invalid-JSON error.
func IsInvalidJSON(err error) bool {
	return errors.Is(err, errInvalidJSON) || errors.Is(err, errNotObject)
}

func deleteFields(body []byte, fields []string) []byte {
	for _, f := range fields {
		for gjson.GetBytes(body, f).Exists() { // repeated keys too, one at a time
			out, err := sjson.DeleteBytes(body, f)
			if err != nil || len(out) >= len(body) {
				break // no progress: never loop
			}
			body = out
		}
	}
	return body
}

// insertIncludeUsage asks for usage in a stream whose body has no
// stream_options key (the usual case): the member is inserted after the
// opening brace, with no parse.
func insertIncludeUsage(body []byte) []byte {
	i := bytes.IndexByte(body, '{')
	if i < 0 {
		return body
	}
	const member = `"stream_options":{"include_usage":true}`
	rest := bytes.TrimLeft(body[i+1:], " \t\r\n")
	out := make([]byte, 0, len(body)+len(member)+1)
	out = append(out, body[:i+1]...)
	out = append(out, member...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, body[i+1:]...)
}

// withIncludeUsage is a stream_options value with include_usage true: its
// other members kept (every include_usage dropped, repeated ones too), or
// a new object when the value is not one.
func withIncludeUsage(opts []byte) []byte {
	out := make([]byte, 0, len(opts)+24)
	out = append(out, '{')
	if v := gjson.ParseBytes(opts); v.IsObject() {
		v.ForEach(func(k, f gjson.Result) bool {
			if k.Str != "include_usage" {
				out = append(out, k.Raw...)
				out = append(out, ':')
				out = append(out, f.Raw...)
				out = append(out, ',')
			}
			return true
		})
	}
	return append(out, `"include_usage":true}`...)
}

// SetDefaults sets params the client did not send (deployment defaults from
// litellm_params such as temperature).
func SetDefaults(body []byte, params map[string]any) []byte {
	for k, v := range params {
		if gjson.GetBytes(body, k).Exists() {
			continue
		}
		if out, err := sjson.SetBytes(body, k, v); err == nil {
			body = out
		}
	}
	return body
}
