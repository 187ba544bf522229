package gemini_test

import (
	"testing"

	"github.com/sluice-gw/sluice/shared/providers/gemini"
	"github.com/sluice-gw/sluice/shared/providers/providerstest"
)

func BenchmarkTranslateRequest(b *testing.B) {
	providerstest.BenchTranslateRequest(b, "gemini-2.5-flash", func(body []byte) ([]byte, error) {
		return gemini.TranslateRequest(body, gemini.Options{Model: "gemini-2.5-flash"})
	})
}

func BenchmarkTranslateResponse(b *testing.B) {
	raw := []byte(answer)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := gemini.TranslateResponse(raw, gemini.Options{Model: "gemini-2.5-flash"}, 1); err != nil {
			b.Fatal(err)
		}
	}
}
