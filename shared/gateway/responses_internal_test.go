package gateway

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestWithItemIDs(t *testing.T) {
	in := `[{"type":"message","role":"user","content":"a"},{"id":"msg_keep","type":"message"},{ },7]`
	out := withItemIDs([]byte(in))
	r := gjson.ParseBytes(out)
	if !gjson.ValidBytes(out) || len(r.Array()) != 4 || !strings.HasPrefix(r.Get("0.id").Str, "msg_") || r.Get("0.content").Str != "a" ||
		r.Get("1.id").Str != "msg_keep" || !strings.HasPrefix(r.Get("2.id").Str, "msg_") || r.Get("3").Raw != "7" {
		t.Errorf("withItemIDs = %s", out)
	}
	if same := `[{"id":"a"}]`; string(withItemIDs([]byte(same))) != same {
		t.Error("a list with every id is not kept as it is")
	}
}
