package config

import (
	"strings"

	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/pricing"
)

// DefaultModerationModel is the model a moderation request without one is
// routed as (OpenAI's default, which LiteLLM documents).
const DefaultModerationModel = "omni-moderation-latest"

// moderationDefault builds Config.ModerationDefault: LiteLLM answers a
// moderation request whose model is not in its model list (or that names
// none) by calling OpenAI's /moderations itself, with OPENAI_API_KEY; so
// does the gateway, through this deployment (OPENAI_API_BASE, when set,
// replaces OpenAI's base, as LiteLLM reads it). It is in no model group:
// only moderation requests reach it.
func (l *loader) moderationDefault() {
	key, ok := l.getenv("OPENAI_API_KEY")
	if !ok || key == "" {
		return
	}
	spec, _ := catalog.Lookup("openai")
	if base, ok := l.getenv("OPENAI_API_BASE"); ok && (strings.HasPrefix(base, "http://") || strings.HasPrefix(base, "https://")) {
		spec.DefaultBase = strings.TrimRight(base, "/")
	}
	l.cfg.ModerationDefault = &Deployment{
		ID: "litellm-moderation-default", ModelName: "*", Provider: "openai", Model: "*",
		Protocol: spec.Protocol, Implemented: true, APIBase: spec.DefaultBase,
		APIKey: key, APIKeyEnv: "OPENAI_API_KEY", Price: &pricing.Price{},
	}
}
