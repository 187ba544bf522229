package openai

import (
	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/apierr"
)

// The parts of an OpenAI chat request that the translating vendors
// (Anthropic, Bedrock) read the same way.

// ToolChoice is a request's tool_choice: Mode is "" (not set, or of no
// known shape), "auto", "required", "none", or "function" with Name.
type ToolChoice struct {
	Mode, Name string
}

// ParseToolChoice reads tool_choice. An unknown mode, or a function
// without its name, is an invalid request.
func ParseToolChoice(tc gjson.Result) (ToolChoice, error) {
	switch {
	case tc.Type == gjson.String:
		switch tc.Str {
		case "auto", "required", "none":
			return ToolChoice{Mode: tc.Str}, nil
		}
		return ToolChoice{}, apierr.New(apierr.InvalidRequest, "tool_choice %q is not supported", tc.Str)
	case tc.IsObject():
		name := tc.Get("function.name").String()
		if name == "" {
			return ToolChoice{}, apierr.New(apierr.InvalidRequest, "tool_choice: function.name is required")
		}
		return ToolChoice{Mode: "function", Name: name}, nil
	}
	return ToolChoice{}, nil
}

// ImageURL returns the URL of an image_url content part ({"url": ...} or
// the URL itself). allowed says whether the message may carry images:
// user messages only.
func ImageURL(part gjson.Result, allowed bool) (string, error) {
	if !allowed {
		return "", apierr.New(apierr.InvalidRequest, "images are allowed in user messages only")
	}
	url := part.Get("image_url.url").String()
	if url == "" {
		url = part.Get("image_url").String()
	}
	return url, nil
}
