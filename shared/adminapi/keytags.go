package adminapi

import (
	"encoding/json"
	"slices"
)

// keyTags reads a key's tags for /key/generate and /key/update: tags
// (null clears them); without it, as LiteLLM keeps a key's tags in its
// metadata (prepare_metadata_fields), a metadata given sets the tags to
// its tags, none when it has none, since a metadata given replaces the
// old one, tags and all. set reports whether the tags change.
func keyTags(p *params) (tags []string, set bool) {
	if p.has("tags") {
		tags, _ = p.strs("tags")
		return tags, true
	}
	md, ok := p.raw("metadata")
	if !ok {
		return nil, p.has("metadata")
	}
	var m struct {
		Tags json.RawMessage `json:"tags"`
	}
	if json.Unmarshal(md, &m) != nil || len(m.Tags) == 0 || string(m.Tags) == "null" {
		return nil, true // not an object: object's 400
	}
	if json.Unmarshal(m.Tags, &tags) != nil || slices.Contains(tags, "") {
		p.fail(badParam("metadata", "tags: want a list of non-empty strings"))
		return nil, false
	}
	return tags, true
}
