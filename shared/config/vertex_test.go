package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testSA = `{"type":"service_account","project_id":"from-key","private_key_id":"k1","private_key":"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n","client_email":"sa@from-key.iam.gserviceaccount.com","token_uri":"https://oauth2.googleapis.com/token"}`

func TestVertexParams(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "sa.json")
	if err := os.WriteFile(keyFile, []byte(testSA), 0o600); err != nil {
		t.Fatal(err)
	}
	inline := "'" + testSA + "'"
	tests := []struct {
		name, params string
		env          map[string]string
		want         VertexParams // Credentials compared as "set" only
		unusable     string       // a part of the reason; "" for usable
	}{
		{"inline, project from the key", "vertex_credentials: " + inline, nil,
			VertexParams{Project: "from-key", Location: "us-central1"}, ""},
		{"global and explicit project", "vertex_project: p1\n      vertex_location: global\n      vertex_credentials: " + inline, nil,
			VertexParams{Project: "p1", Location: "global"}, ""},
		{"LiteLLM's spellings", "vertex_ai_project: p2\n      vertex_ai_location: europe-west4\n      vertex_ai_credentials: " + inline, nil,
			VertexParams{Project: "p2", Location: "europe-west4"}, ""},
		{"a key file", "vertex_credentials: " + keyFile, nil, VertexParams{Project: "from-key", Location: "us-central1"}, ""},
		{"a YAML mapping", "vertex_credentials: {type: service_account, project_id: m1, client_email: a@b, private_key: k}", nil,
			VertexParams{Project: "m1", Location: "us-central1"}, ""},
		{"environment", "drop_params: true", map[string]string{VertexProjectEnv: "env-p", VertexLocationEnv: "asia-northeast1", VertexCredentialsEnv: testSA},
			VertexParams{Project: "env-p", Location: "asia-northeast1", CredentialsEnv: VertexCredentialsEnv}, ""},
		{"VERTEX_LOCATION and GOOGLE_APPLICATION_CREDENTIALS", "drop_params: true", map[string]string{VertexLocationEnvAlt: "us-east5", GoogleCredentialsEnv: keyFile},
			VertexParams{Project: "from-key", Location: "us-east5"}, ""},
		{"os.environ/ credentials", "vertex_credentials: os.environ/SA", map[string]string{"SA": testSA},
			VertexParams{Project: "from-key", Location: "us-central1", CredentialsEnv: "SA"}, ""},
		{"os.environ/ not a key yet: the calls say so", "vertex_project: p\n      vertex_credentials: os.environ/SA", map[string]string{"SA": "not-a-key"},
			VertexParams{Project: "p", Location: "us-central1", CredentialsEnv: "SA"}, ""},
		{"no credentials", "vertex_project: p", nil, VertexParams{}, "no vertex_credentials"},
		{"an unreadable file", "vertex_credentials: /no/such/file.json", nil, VertexParams{}, "neither a service account's JSON key nor a file"},
		{"user credentials", `vertex_credentials: '{"type":"authorized_user","client_email":"a","private_key":"b"}'`, nil, VertexParams{}, "only service_account"},
		{"no project", `vertex_credentials: '{"client_email":"a","private_key":"b"}'`, nil, VertexParams{}, "vertex_project is required"},
		{"a location that is no host name", "vertex_location: 'evil.example/x?'\n      vertex_credentials: " + inline, nil, VertexParams{}, "may hold only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := "model_list:\n  - model_name: v\n    litellm_params:\n      model: vertex_ai/claude-sonnet-4-5\n      " + tt.params + "\n"
			cfg, err := Load([]byte(yaml), func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			d := cfg.Deployments[0]
			if tt.unusable != "" {
				if d.Implemented || !strings.Contains(d.Unusable, tt.unusable) {
					t.Fatalf("want left out (%s), got implemented %v, %q", tt.unusable, d.Implemented, d.Unusable)
				}
				if strings.Contains(d.Unusable, "PRIVATE") || strings.Contains(cfg.Warnings[0].Message, "PRIVATE") {
					t.Errorf("the reason quotes the key: %q", d.Unusable)
				}
				return
			}
			got := d.Vertex
			if !d.Implemented || got.Project != tt.want.Project || got.Location != tt.want.Location || got.CredentialsEnv != tt.want.CredentialsEnv || got.Creds() == "" {
				t.Errorf("got %+v implemented %v %q, want %+v", got, d.Implemented, d.Unusable, tt.want)
			}
		})
	}
}

// A deployment added through the admin API may not name a file on the
// gateway's disk; two locations of one model are two deployments.
func TestVertexStoredAndIDs(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "sa.json")
	if err := os.WriteFile(keyFile, []byte(testSA), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadStored([]byte("model_list:\n"), nil, []Stored{{ID: "s1", ModelName: "v",
		Params: map[string]any{"model": "vertex_ai/gemini-2.5-pro", "vertex_credentials": keyFile}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Deployments[0]; d.Implemented || !strings.Contains(d.Unusable, "may not name a file") {
		t.Errorf("stored file path: %v %q", d.Implemented, d.Unusable)
	}
	cfg, err = Load([]byte(`model_list:
  - model_name: v
    litellm_params: {model: vertex_ai/gemini-2.5-pro, vertex_location: us-east5, vertex_credentials: `+keyFile+`}
  - model_name: v
    litellm_params: {model: vertex_ai/gemini-2.5-pro, vertex_location: europe-west4, vertex_credentials: `+keyFile+`}
  - model_name: other
    litellm_params: {model: vertex_ai/llama-3.1-405b, vertex_credentials: `+keyFile+`}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := cfg.Deployments[0], cfg.Deployments[1], cfg.Deployments[2]
	if a.ID == b.ID || strings.HasSuffix(b.ID, "-1") {
		t.Errorf("ids %q %q", a.ID, b.ID)
	}
	if c.Implemented || !strings.Contains(c.Unusable, "only Claude") {
		t.Errorf("llama on Vertex: %v %q", c.Implemented, c.Unusable)
	}
}
