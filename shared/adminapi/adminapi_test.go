package adminapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/sluice-gw/sluice/shared/adminapi"
)

func TestAdminAPI(t *testing.T) {
	const key = "sk-master"
	tests := []struct {
		name      string
		masterKey string
		method    string
		path      string
		auth      string
		status    int
		code      string // OpenAI error code; "" for a success
	}{
		{"health", key, "GET", "/health", "", 200, ""},
		{"liveliness", key, "GET", "/health/liveliness", "", 200, ""},
		{"health wrong method", key, "POST", "/health", "", 405, "method_not_allowed"},
		{"management route not built yet", key, "POST", "/key/generate", "Bearer " + key, 501, "not_implemented"},
		{"management route without key", key, "POST", "/key/generate", "", 401, "invalid_api_key"},
		{"management route with wrong key", key, "GET", "/key/info", "Bearer sk-wrong", 401, "invalid_api_key"},
		{"no master key configured", "", "POST", "/key/generate", "Bearer ", 401, "invalid_api_key"},
		{"wrong method", key, "GET", "/key/generate", "Bearer " + key, 405, "method_not_allowed"},
		{"unknown route", key, "GET", "/nope", "Bearer " + key, 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := adminapi.New(adminapi.Options{MasterKey: tt.masterKey})
			r := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d (body %s)", w.Code, tt.status, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var body struct {
				Status string `json:"status"`
				Error  *struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    string  `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if tt.code == "" {
				if body.Error != nil || body.Status != "healthy" {
					t.Errorf("body = %s", w.Body)
				}
				return
			}
			if body.Error == nil || body.Error.Code != tt.code || body.Error.Message == "" || body.Error.Type == "" {
				t.Errorf("error body = %s, want code %s", w.Body, tt.code)
			}
		})
	}
}
