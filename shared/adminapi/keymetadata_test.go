package adminapi_test

import (
	"encoding/json"
	"testing"
)

// TestKeyUpdateMetadata: /key/update's metadata replaces the key's
// metadata, not merged into it, and a key's tags are its metadata's tags
// when tags is not given, as LiteLLM keeps them (prepare_metadata_fields):
// a metadata without tags clears them, tags given beside it win.
func TestKeyUpdateMetadata(t *testing.T) {
	const m = "sk-master-test"
	onStores(t, func(t *testing.T, c client) {
		key := c.must(m, "POST", "/key/generate", `{"metadata":{"a":1,"b":2,"tags":["x"]}}`)["key"].(string)
		info := func() (md, tags string) {
			t.Helper()
			i := c.must(m, "GET", "/key/info?key="+key, "")["info"].(map[string]any)
			bm, _ := json.Marshal(i["metadata"])
			bt, _ := json.Marshal(i["tags"])
			return string(bm), string(bt)
		}
		if _, tags := info(); tags != `["x"]` {
			t.Errorf("generated with metadata.tags: tags %s", tags)
		}
		for _, tc := range []struct{ body, md, tags string }{
			{`{"metadata":{"c":3,"tags":["y","z"]}}`, `{"c":3,"tags":["y","z"]}`, `["y","z"]`},
			{`{"blocked":false}`, `{"c":3,"tags":["y","z"]}`, `["y","z"]`}, // no metadata: both kept
			{`{"metadata":{"d":4}}`, `{"d":4}`, `[]`},
			{`{"metadata":{"e":5},"tags":["t"]}`, `{"e":5}`, `["t"]`},
		} {
			c.must(m, "POST", "/key/update", `{"key":"`+key+`",`+tc.body[1:])
			if md, tags := info(); md != tc.md || tags != tc.tags {
				t.Errorf("after %s: metadata %s tags %s, want %s %s", tc.body, md, tags, tc.md, tc.tags)
			}
		}
		c.errParam(m, "POST", "/key/update", `{"key":"`+key+`","metadata":{"tags":"x"}}`, 400, "metadata")
	})
}
