package messages

import (
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// HostBody is a Messages body as a cloud that hosts Claude takes it
// (Bedrock's InvokeModel, Vertex AI's rawPredict): system turns moved to
// the top-level system (SystemToTop), the fields drop names removed (the
// model, named by the URL; the stream, chosen by the operation), the
// host's anthropic_version set.
func HostBody(body []byte, version string, drop ...string) ([]byte, error) {
	body, err := SystemToTop(body)
	if err != nil {
		return nil, err
	}
	for _, k := range drop {
		if gjson.GetBytes(body, k).Exists() {
			if body, err = sjson.DeleteBytes(body, k); err != nil {
				return nil, apierr.New(apierr.InvalidRequest, "invalid request body: %v", err)
			}
		}
	}
	if body, err = sjson.SetBytes(body, "anthropic_version", version); err != nil {
		return nil, apierr.New(apierr.InvalidRequest, "invalid request body: %v", err)
	}
	return body, nil
}

// SystemToTop moves the system messages of a Messages body's conversation
// (Claude Code sends its reminders mid-conversation, as Anthropic's API
// takes them from Claude Opus 4.8 on) to the top-level system, after what
// it holds, in their order, as the chat translation to Anthropic does
// (LiteLLM's): for Claude on Bedrock and Vertex AI, which take only user
// and assistant turns. The turns around a moved message are joined when
// they have the same role. A body without such messages is returned as it
// is.
func SystemToTop(body []byte) ([]byte, error) {
	msgs := gjson.GetBytes(body, "messages")
	if !msgs.Get(`#(role=="system")`).Exists() {
		return body, nil
	}
	system := appendBlocks(nil, gjson.GetBytes(body, "system"), true)
	type turn struct {
		role   string
		raw    string   // the message as sent, while no other joined it
		blocks []string // its content blocks, once joined
	}
	var turns []turn
	msgs.ForEach(func(_, m gjson.Result) bool {
		role, content := m.Get("role").Str, m.Get("content")
		switch n := len(turns); {
		case role == "system":
			system = appendBlocks(system, content, true)
		case n > 0 && turns[n-1].role == role:
			if turns[n-1].blocks == nil {
				turns[n-1].blocks = appendBlocks(nil, gjson.Get(turns[n-1].raw, "content"), false)
			}
			turns[n-1].blocks = appendBlocks(turns[n-1].blocks, content, false)
		default:
			turns = append(turns, turn{role: role, raw: m.Raw})
		}
		return true
	})
	out := make([]string, len(turns))
	for i, t := range turns {
		out[i] = t.raw
		if t.blocks != nil {
			role, _ := sjson.Set(`{}`, "role", t.role)
			out[i], _ = sjson.SetRaw(role, "content", rawArray(t.blocks))
		}
	}
	body, err := sjson.SetRawBytes(body, "system", []byte(rawArray(system)))
	if err == nil {
		body, err = sjson.SetRawBytes(body, "messages", []byte(rawArray(out)))
	}
	if err != nil {
		return nil, apierr.New(apierr.InvalidRequest, "invalid request body: %v", err)
	}
	return body, nil
}

// appendBlocks appends content's blocks to dst: a string as a text block
// (none when empty), an array's blocks as they are (with textOnly, its
// text blocks only: the top-level system takes nothing else).
func appendBlocks(dst []string, content gjson.Result, textOnly bool) []string {
	if !content.IsArray() {
		if content.String() == "" {
			return dst
		}
		b, _ := sjson.Set(`{"type":"text"}`, "text", content.String())
		return append(dst, b)
	}
	content.ForEach(func(_, b gjson.Result) bool {
		if !textOnly || b.Get("type").Str == "text" {
			dst = append(dst, b.Raw)
		}
		return true
	})
	return dst
}

// rawArray is the JSON array of items, each already JSON.
func rawArray(items []string) string {
	return "[" + strings.Join(items, ",") + "]"
}
