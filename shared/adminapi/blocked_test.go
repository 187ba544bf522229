package adminapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// keyInfo is a key's /key/info as the master reads it (the fields tests look at).
type keyInfo struct {
	Blocked bool   `json:"blocked"`
	UserID  string `json:"user_id"`
}

func (fx *fixture) keyInfo(t *testing.T, ref string) keyInfo {
	t.Helper()
	w := fx.do("master", "GET", "/key/info?key="+ref, "")
	if w.Code != http.StatusOK {
		t.Fatalf("key/info %s: %d %s", ref, w.Code, w.Body)
	}
	var out struct {
		Info keyInfo `json:"info"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Info
}

// Changing blocked through /key/update or /key/regenerate needs what
// /key/block and /key/unblock need (a proxy admin or an admin of the key's
// team): an internal user may not undo the block an admin put on its key,
// nor move the blocked key into a team it administers (whose admin may
// unblock it).
func TestBlockedNeedsBlockPermission(t *testing.T) {
	const key = "sk-own-internal-key" // internal_user's, in team t1 where it is a plain member
	for _, tt := range []struct{ name, path, body string }{
		{"update unblocks", "/key/update", `{"key":"` + key + `","blocked":false}`},
		{"regenerate unblocks", "/key/regenerate", `{"key":"` + key + `","new_key":"sk-new-internal-key","blocked":false}`},
		{"update moves to its own team", "/key/update", `{"key":"` + key + `","team_id":"t2"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			if w := fx.do("master", "POST", "/team/member_add", `{"team_id":"t2","member":{"user_id":"internal_user","role":"admin"}}`); w.Code != http.StatusOK {
				t.Fatalf("member_add: %d %s", w.Code, w.Body)
			}
			if w := fx.do("master", "POST", "/key/block", `{"key":"`+key+`"}`); w.Code != http.StatusOK {
				t.Fatalf("block: %d %s", w.Code, w.Body)
			}
			if w := fx.do("internal_user", "POST", tt.path, tt.body); w.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", w.Code, w.Body)
			}
			if !fx.keyInfo(t, key).Blocked {
				t.Fatal("the key is no longer blocked")
			}
			if w := fx.do("internal_user", "POST", "/key/unblock", `{"key":"`+key+`"}`); w.Code != http.StatusForbidden {
				t.Fatalf("unblock: status %d, want 403: %s", w.Code, w.Body)
			}
		})
	}

	// An internal user may not block its own key through update either
	// (as /key/block refuses it), and may send blocked unchanged.
	fx := newFixture(t)
	if w := fx.do("internal_user", "POST", "/key/update", `{"key":"`+key+`","blocked":true}`); w.Code != http.StatusForbidden {
		t.Errorf("internal user blocks through update: status %d, want 403: %s", w.Code, w.Body)
	}
	if w := fx.do("internal_user", "POST", "/key/update", `{"key":"`+key+`","blocked":false,"metadata":{"a":1}}`); w.Code != http.StatusOK {
		t.Errorf("blocked unchanged: status %d, want 200: %s", w.Code, w.Body)
	}
	// The team's admin and the master may block and unblock through update
	// and regenerate.
	for _, tt := range []struct {
		role, path, body string
		want             bool
	}{
		{"team_admin", "/key/update", `{"key":"` + key + `","blocked":true}`, true},
		{"team_admin", "/key/update", `{"key":"` + key + `","blocked":false}`, false},
		{"master", "/key/update", `{"key":"` + key + `","blocked":true}`, true},
		{"team_admin", "/key/regenerate", `{"key":"` + key + `","new_key":"sk-regenerated-1","blocked":false}`, false},
		{"master", "/key/regenerate", `{"key":"sk-regenerated-1","new_key":"sk-regenerated-2","blocked":true}`, true},
	} {
		if w := fx.do(tt.role, "POST", tt.path, tt.body); w.Code != http.StatusOK {
			t.Fatalf("%s %s %s: status %d: %s", tt.role, tt.path, tt.body, w.Code, w.Body)
		}
	}
	if !fx.keyInfo(t, "sk-regenerated-2").Blocked {
		t.Error("the master's block through regenerate did not hold")
	}
}
