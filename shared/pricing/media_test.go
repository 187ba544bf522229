package pricing

import "testing"

func TestImageCostNanos(t *testing.T) {
	tab := DefaultMedia()
	for _, tt := range []struct {
		model, size, quality string
		n                    int64
		want                 int64
		ok                   bool
	}{
		{"dall-e-3", "1024x1024", "", 1, 39_999_924, true},    // standard: ~$0.04
		{"dall-e-3", "1024x1792", "hd", 2, 239_982_346, true}, // 6.539e-08 a pixel: ~$0.12 each
		{"dall-e-2", "256x256", "", 3, 47_999_877, true},      // ~$0.016 each
		{"dall-e-2", "", "", 1, 19_922_944, true},             // 1024x1024 by default
		{"dall-e-3", "999x1", "", 1, 0, false},
		{"unknown-model", "1024x1024", "", 1, 0, false},
		// Bedrock, per image by size and quality (premium: hd/high/premium)
		{"amazon.nova-canvas-v1:0", "1024x1024", "", 2, 80_000_000, true},
		{"amazon.nova-canvas-v1:0", "1280x720", "", 1, 40_000_000, true},
		{"amazon.nova-canvas-v1:0", "1024x1024", "hd", 1, 80_000_000, true},
		{"amazon.titan-image-generator-v1", "512x512", "", 1, 8_000_000, true},
		{"amazon.titan-image-generator-v2:0", "1024x1024", "premium", 1, 12_000_000, true},
		{"stability.sd3-large-v1:0", "", "", 1, 80_000_000, true},
		{"stability.stable-image-core-v1:0", "", "", 1, 40_000_000, true},
	} {
		got, ok := tab.ImageCostNanos(tt.model, tt.size, tt.quality, tt.n)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%s %s %s x%d: %d, %v; want %d, %v", tt.model, tt.size, tt.quality, tt.n, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseMediaPerUnit(t *testing.T) {
	tab := DefaultMedia()
	if m, ok := tab.Lookup("tts-1"); !ok || NanosOf(m.PerCharacter, 1000) != 15_000_000 {
		t.Errorf("tts-1: %+v %v, want $0.015 per 1000 characters", m, ok)
	}
	if m, ok := tab.Lookup("whisper-1"); !ok || NanosOf(m.PerSecond, 60) != 6_000_000 {
		t.Errorf("whisper-1: %+v %v, want $0.006 a minute", m, ok)
	}
	if m, ok := tab.Lookup("rerank-v3.5"); !ok || NanosOf(m.PerQuery, 3) != 6_000_000 {
		t.Errorf("rerank-v3.5: %+v %v", m, ok)
	}
	if m, ok := tab.Lookup("omni-moderation-latest"); !ok || !m.Free {
		t.Errorf("omni-moderation-latest: %+v %v, want free", m, ok)
	}
	if !tab.Media("dall-e-3") || !tab.Media("tts-1") || tab.Media("gpt-4o") {
		t.Error("Media: dall-e-3 and tts-1 are media models, gpt-4o is not")
	}
	if m, ok := tab.Lookup("gpt-4o"); ok {
		t.Errorf("a chat model in the media table: %+v", m)
	}
	custom, err := ParseMedia([]byte(`{"my-img":{"output_cost_per_image":0.5},"chat":{"input_cost_per_token":1e-6}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := custom.ImageCostNanos("my-img", "512x512", "", 2); !ok || got != 1_000_000_000 {
		t.Errorf("per-image price: %d %v", got, ok)
	}
	if _, err := ParseMedia([]byte(`{`)); err == nil {
		t.Error("invalid JSON accepted")
	}
}
