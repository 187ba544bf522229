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
		for i := 0; i < 8 && gjson.GetBytes(body, f).Exists(); i++ { // repeated keys too
			out, err := sjson.DeleteBytes(body, f)
			if err != nil {
				break
			}
			body = out
		}
	}
	return body
}

// setIncludeUsage asks for usage in a stream. Without a stream_options key
// (the usual case) the member is inserted after the opening brace, with no
// parse; otherwise sjson edits the existing object.
func setIncludeUsage(body []byte, hasStreamOptions bool) []byte {
	if !hasStreamOptions {
		if i := bytes.IndexByte(body, '{'); i >= 0 {
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
	}
	out, err := sjson.SetBytes(body, "stream_options.include_usage", true)
	if err != nil {
		return body
	}
	return out
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
