package wire

import (
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 as U+FFFD. The translators and the
// metrics lines build JSON with it, without reflection.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// The providers whose answers the gateway translates (Anthropic, Bedrock)
// write the same OpenAI chat completion; these build its parts.

// AppendCompletionHead appends a chat completion's start, up to its
// message's content: {"id":...,"model":...,"choices":[{"index":0,"message":{"role":"assistant","content":
func AppendCompletionHead(b []byte, id string, created int64, model string) []byte {
	b = append(b, `{"id":`...)
	b = AppendString(b, id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = AppendString(b, model)
	return append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
}

// AppendToolCall appends the index-th tool call of a message (a comma
// before all but the first).
func AppendToolCall(calls []byte, index int, id, name, args string) []byte {
	if index > 0 {
		calls = append(calls, ',')
	}
	calls = append(calls, `{"index":`...)
	calls = strconv.AppendInt(calls, int64(index), 10)
	calls = append(calls, `,"id":`...)
	calls = AppendString(calls, id)
	calls = append(calls, `,"type":"function","function":{"name":`...)
	calls = AppendString(calls, name)
	calls = append(calls, `,"arguments":`...)
	calls = AppendString(calls, args)
	return append(calls, "}}"...)
}

// AppendMessageEnd appends the message's content (null when it only calls
// tools), reasoning, tool calls and finish reason, up to the usage:
// ...,"finish_reason":"stop"}],"usage":
func AppendMessageEnd(b, text, reasoning, thinking, calls []byte, nCalls int, finish string) []byte {
	return append(AppendChoiceEnd(b, text, reasoning, thinking, calls, nCalls, finish), `],"usage":`...)
}

// AppendChoiceEnd is AppendMessageEnd up to the choice's end:
// ...,"finish_reason":"stop"}
func AppendChoiceEnd(b, text, reasoning, thinking, calls []byte, nCalls int, finish string) []byte {
	if text == nil && nCalls > 0 {
		b = append(b, "null"...)
	} else {
		b = AppendString(b, string(text))
	}
	if reasoning != nil {
		b = append(b, `,"reasoning_content":`...)
		b = AppendString(b, string(reasoning))
	}
	if len(thinking) > 0 {
		b = append(b, `,"thinking_blocks":[`...)
		b = append(b, thinking...)
		b = append(b, ']')
	}
	if nCalls > 0 {
		b = append(b, `,"tool_calls":[`...)
		b = append(b, calls...)
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":"`...)
	b = append(b, finish...)
	return append(b, `"}`...)
}
