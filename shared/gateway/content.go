package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/spend"
)

// Content logging (docs/callbacks.md): when a logging callback is
// configured and litellm_settings.turn_off_message_logging is off, a
// request's metadata and messages (or input, prompt) and a non-streamed
// answer's body are copied into its Completion, each bounded by
// spend.MaxContentLen (spend.Clip), for the spend event the sinks read.
// Otherwise nothing is read or copied: the request path is unchanged.

// contentFields are the request fields logged as its messages, the first
// present.
var contentFields = [...]string{"messages", "input", "prompt"}

// captureRequest copies the request's metadata and messages into c.
func captureRequest(c *Completion, body []byte) {
	for _, f := range contentFields {
		if r := gjson.GetBytes(body, f); r.Exists() {
			c.Messages = clipCopy(r.Raw)
			break
		}
	}
	if r := gjson.GetBytes(body, "metadata"); r.IsObject() {
		c.Metadata = clipCopy(r.Raw)
	}
}

// clipCopy returns raw as an event's content value, copied (the request's
// buffer is reused once the request ends).
func clipCopy(raw string) json.RawMessage { return spend.Clip([]byte(raw)) }

// clipCopyBytes is clipCopy of an answer's body.
func clipCopyBytes(b []byte) json.RawMessage { return spend.Clip(bytes.Clone(b)) }
