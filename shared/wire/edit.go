package wire

import (
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

func setIncludeUsage(body []byte) []byte {
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
