package anthropic_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/sluice-gw/sluice/shared/providers/anthropic"
)

const benchRequest = `{"model":"claude-sonnet-4-20250514","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about the sea, and tell me the weather in Paris."}],"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"location":{"type":"string"}}}}}],"tool_choice":"auto","temperature":0.7,"stream":true,"stream_options":{"include_usage":true}}`

func BenchmarkTranslateRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := anthropic.TranslateRequest([]byte(benchRequest), 4096); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTranslateResponse(b *testing.B) {
	raw, err := os.ReadFile("testdata/message_tool.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := anthropic.TranslateResponse(raw, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	for _, file := range []string{"stream_text.sse", "stream_tool.sse"} {
		raw, err := os.ReadFile("testdata/" + file)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(file, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				s := anthropic.NewStream(io.NopCloser(bytes.NewReader(raw)), true, 1)
				if _, err := io.Copy(io.Discard, s); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
