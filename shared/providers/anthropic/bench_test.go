package anthropic_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/sluice-gw/sluice/shared/providers/anthropic"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
)

func BenchmarkTranslateRequest(b *testing.B) {
	providerstest.BenchTranslateRequest(b, "claude-sonnet-4-20250514", func(body []byte) ([]byte, error) { return anthropic.TranslateRequest(body, 4096) })
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
