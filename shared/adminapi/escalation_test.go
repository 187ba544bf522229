package adminapi_test

import (
	"net/http"
	"testing"
)

// A team admin may add a proxy admin to its team, but may not create,
// reassign or regenerate a key of that member: the key would act with the
// member's proxy_admin role (the admin routes take the role from the key's
// user), so the team admin would hold a proxy admin's key.
func TestNoKeyAboveCallersRole(t *testing.T) {
	fx := newFixture(t)
	for _, u := range []string{"proxy_admin", "proxy_admin_viewer"} {
		if w := fx.do("team_admin", "POST", "/team/member_add", `{"team_id":"t1","member":{"user_id":"`+u+`","role":"user"}}`); w.Code != http.StatusOK {
			t.Fatalf("member_add %s: %d %s", u, w.Code, w.Body)
		}
	}
	// A key of the team for the team admin itself, and one the master made
	// for the proxy admin in the team.
	if w := fx.do("team_admin", "POST", "/key/generate", `{"team_id":"t1","key":"sk-team-admin-own"}`); w.Code != http.StatusOK {
		t.Fatalf("generate own: %d %s", w.Code, w.Body)
	}
	if w := fx.do("master", "POST", "/key/generate", `{"team_id":"t1","user_id":"proxy_admin","key":"sk-boss-team-key"}`); w.Code != http.StatusOK {
		t.Fatalf("master generate: %d %s", w.Code, w.Body)
	}

	for _, tt := range []struct {
		name, role, path, body string
	}{
		{"generate for a proxy_admin member", "team_admin", "/key/generate", `{"team_id":"t1","user_id":"proxy_admin"}`},
		{"generate for a proxy_admin_viewer member", "team_admin", "/key/generate", `{"team_id":"t1","user_id":"proxy_admin_viewer"}`},
		{"update reassigns to a proxy_admin member", "team_admin", "/key/update", `{"key":"sk-team-admin-own","user_id":"proxy_admin"}`},
		{"update a proxy_admin member's key", "team_admin", "/key/update", `{"key":"sk-boss-team-key","metadata":{"a":1}}`},
		{"regenerate a proxy_admin member's key", "team_admin", "/key/regenerate", `{"key":"sk-boss-team-key"}`},
		{"regenerate by path a proxy_admin member's key", "team_admin", "/key/sk-boss-team-key/regenerate", ``},
		{"regenerate reassigns to a proxy_admin member", "team_admin", "/key/regenerate", `{"key":"sk-team-admin-own","user_id":"proxy_admin"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if w := fx.do(tt.role, "POST", tt.path, tt.body); w.Code != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", w.Code, w.Body)
			}
		})
	}
	if u := fx.keyInfo(t, "sk-team-admin-own").UserID; u != "team_admin" {
		t.Errorf("the team admin's key now belongs to %q", u)
	}
	if w := fx.do("master", "GET", "/key/info?key=sk-boss-team-key", ""); w.Code != http.StatusOK {
		t.Errorf("the proxy admin's key changed secret: %d %s", w.Code, w.Body)
	}

	// What a team admin may do stays allowed: keys of the team's members
	// whose role is not above its own, and its own.
	for _, tt := range []struct{ path, body string }{
		{"/key/generate", `{"team_id":"t1","user_id":"internal_user"}`},
		{"/key/update", `{"key":"sk-own-internal-key","metadata":{"a":1}}`},
		{"/key/regenerate", `{"key":"sk-team-admin-own"}`},
		{"/key/sk-own-internal-key/regenerate", ``},
	} {
		if w := fx.do("team_admin", "POST", tt.path, tt.body); w.Code != http.StatusOK {
			t.Errorf("%s %s: status %d, want 200: %s", tt.path, tt.body, w.Code, w.Body)
		}
	}
	// The master may do all of it.
	if w := fx.do("master", "POST", "/key/update", `{"key":"sk-boss-team-key","metadata":{"a":1}}`); w.Code != http.StatusOK {
		t.Errorf("master update: %d %s", w.Code, w.Body)
	}
}

// An internal_user_viewer that is a team admin may not hand out a key of an
// internal_user member (internal_user may write keys; the viewer may not).
func TestViewerTeamAdminNoKeyAboveOwnRole(t *testing.T) {
	fx := newFixture(t)
	if w := fx.do("master", "POST", "/team/member_add", `{"team_id":"t2","member":{"user_id":"internal_user_viewer","role":"admin"}}`); w.Code != http.StatusOK {
		t.Fatalf("member_add: %d %s", w.Code, w.Body)
	}
	if w := fx.do("master", "POST", "/team/member_add", `{"team_id":"t2","member":{"user_id":"internal_user","role":"user"}}`); w.Code != http.StatusOK {
		t.Fatalf("member_add: %d %s", w.Code, w.Body)
	}
	if w := fx.do("internal_user_viewer", "POST", "/key/generate", `{"team_id":"t2","user_id":"internal_user"}`); w.Code != http.StatusForbidden {
		t.Errorf("status %d, want 403: %s", w.Code, w.Body)
	}
	if w := fx.do("internal_user_viewer", "POST", "/key/generate", `{"team_id":"t2"}`); w.Code != http.StatusOK {
		t.Errorf("its own team key: status %d, want 200: %s", w.Code, w.Body)
	}
}
