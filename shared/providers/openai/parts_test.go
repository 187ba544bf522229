package openai

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
)

func TestParseToolChoice(t *testing.T) {
	tests := []struct {
		raw     string
		want    ToolChoice
		wantErr string
	}{
		{`{}`, ToolChoice{}, ""},
		{`{"tool_choice":"auto"}`, ToolChoice{Mode: "auto"}, ""},
		{`{"tool_choice":"required"}`, ToolChoice{Mode: "required"}, ""},
		{`{"tool_choice":"none"}`, ToolChoice{Mode: "none"}, ""},
		{`{"tool_choice":{"type":"function","function":{"name":"f"}}}`, ToolChoice{Mode: "function", Name: "f"}, ""},
		{`{"tool_choice":7}`, ToolChoice{}, ""},
		{`{"tool_choice":"any"}`, ToolChoice{}, `tool_choice "any" is not supported`},
		{`{"tool_choice":{"type":"function"}}`, ToolChoice{}, "tool_choice: function.name is required"},
	}
	for _, tt := range tests {
		got, err := ParseToolChoice(gjson.Get(tt.raw, "tool_choice"))
		if got != tt.want || (err == nil) != (tt.wantErr == "") {
			t.Errorf("%s: %+v, %v; want %+v, %q", tt.raw, got, err, tt.want, tt.wantErr)
			continue
		}
		if err != nil && (apierr.KindOf(err) != apierr.InvalidRequest || apierr.From(err).Message != tt.wantErr) {
			t.Errorf("%s: error %v, want an invalid request %q", tt.raw, err, tt.wantErr)
		}
	}
}

func TestImageURL(t *testing.T) {
	for _, raw := range []string{`{"image_url":{"url":"https://x/a.png"}}`, `{"image_url":"https://x/a.png"}`} {
		if url, err := ImageURL(gjson.Parse(raw), true); err != nil || url != "https://x/a.png" {
			t.Errorf("%s: %q, %v", raw, url, err)
		}
	}
	if _, err := ImageURL(gjson.Parse(`{"image_url":"https://x/a.png"}`), false); apierr.KindOf(err) != apierr.InvalidRequest {
		t.Errorf("an image where none is allowed: %v, want an invalid request", err)
	}
}
