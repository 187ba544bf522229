package anthropic

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/providers/openai"
	"github.com/sluice-gw/sluice/shared/wire"
)

// thinkingBlocks appends an assistant message's thinking_blocks (LiteLLM's
// field, as our answers carry them) as thinking and redacted_thinking blocks.
func thinkingBlocks(out []byte, tbs gjson.Result) ([]byte, error) {
	if !tbs.Exists() || tbs.Type == gjson.Null {
		return out, nil
	}
	if !tbs.IsArray() {
		return nil, badRequest("messages: thinking_blocks must be a list")
	}
	var err error
	tbs.ForEach(func(_, tb gjson.Result) bool {
		if len(out) > 0 {
			out = append(out, ',')
		}
		switch typ := tb.Get("type").String(); typ {
		case "thinking":
			sig := tb.Get("signature")
			if sig.Type != gjson.String || sig.Str == "" {
				err = badRequest("messages: a thinking block in thinking_blocks needs its signature")
				return false
			}
			out = appendThinkingBlock(out, tb.Get("thinking").String(), sig.Str)
		case "redacted_thinking":
			data := tb.Get("data")
			if data.Type != gjson.String || data.Str == "" {
				err = badRequest("messages: a redacted_thinking block in thinking_blocks needs its data")
				return false
			}
			out = appendRedactedBlock(out, data.Str)
		default:
			err = badRequest("messages: thinking_blocks type %q is not supported (thinking, redacted_thinking)", typ)
			return false
		}
		return true
	})
	return out, err
}

// contentBlocks appends the Anthropic content blocks of an OpenAI message
// content (a string or an array of parts). Images are allowed in user
// content only.
func contentBlocks(out []byte, content gjson.Result, images bool) ([]byte, error) {
	if content.Type == gjson.String {
		if content.Str == "" {
			return out, nil
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":"text","text":`...)
		out = wire.AppendString(out, content.Str)
		return append(out, '}'), nil
	}
	if !content.IsArray() {
		return out, nil // null content (an assistant turn with tool calls only)
	}
	var err error
	content.ForEach(func(_, p gjson.Result) bool {
		start := len(out)
		if start > 0 {
			out = append(out, ',')
		}
		switch typ := p.Get("type").String(); typ {
		case "text":
			t := p.Get("text").String()
			if t == "" {
				out = out[:start]
				return true
			}
			out = append(out, `{"type":"text","text":`...)
			out = wire.AppendString(out, t)
		case "image_url":
			var url string
			if url, err = openai.ImageURL(p, images); err != nil {
				return false
			}
			if out, err = appendImage(out, url); err != nil {
				return false
			}
		default:
			err = badRequest("content part type %q is not supported by Anthropic deployments", typ)
			return false
		}
		if cc := p.Get("cache_control"); cc.IsObject() {
			out = append(out, `,"cache_control":`...)
			out = append(out, cc.Raw...)
		}
		out = append(out, '}')
		return true
	})
	return out, err
}

// appendImage writes an image block (without its closing brace) from a data
// URL (base64 source) or an http(s) URL (url source, fetched by Anthropic).
func appendImage(out []byte, url string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || !strings.HasPrefix(media, "image/") {
			return nil, badRequest("image_url: a data URL must be data:image/<type>;base64,<data>")
		}
		out = append(out, `{"type":"image","source":{"type":"base64","media_type":`...)
		out = wire.AppendString(out, media)
		out = append(out, `,"data":`...)
		out = wire.AppendString(out, data)
		return append(out, '}'), nil
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		out = append(out, `{"type":"image","source":{"type":"url","url":`...)
		out = wire.AppendString(out, url)
		return append(out, '}'), nil
	}
	return nil, badRequest("image_url: expected a data URL or an http(s) URL")
}
