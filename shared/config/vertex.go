package config

import (
	"encoding/json"
	"errors"
	"os"
	"strings"

	"github.com/tidwall/gjson"
	"go.yaml.in/yaml/v3"
)

// Vertex AI's settings, as LiteLLM reads them: litellm_params first
// (vertex_project, vertex_location, vertex_credentials, or their vertex_ai_
// spellings), then the environment (LiteLLM's names), read here at load as
// Azure's are.
const (
	VertexProjectEnv     = "VERTEXAI_PROJECT"
	VertexLocationEnv    = "VERTEXAI_LOCATION"
	VertexLocationEnvAlt = "VERTEX_LOCATION"
	VertexCredentialsEnv = "VERTEXAI_CREDENTIALS"
	// GoogleCredentialsEnv names a service account's key file (Google's
	// application default credentials, the file form only).
	GoogleCredentialsEnv = "GOOGLE_APPLICATION_CREDENTIALS"
	// VertexDefaultLocation is LiteLLM's location when none is set.
	VertexDefaultLocation = "us-central1"
)

// vertexParams are the vertex_* litellm_params, by the field each sets.
var vertexParams = map[string]func(*VertexParams) *string{
	"vertex_project":        func(v *VertexParams) *string { return &v.Project },
	"vertex_ai_project":     func(v *VertexParams) *string { return &v.Project },
	"vertex_location":       func(v *VertexParams) *string { return &v.Location },
	"vertex_ai_location":    func(v *VertexParams) *string { return &v.Location },
	"vertex_credentials":    func(v *VertexParams) *string { return &v.Credentials },
	"vertex_ai_credentials": func(v *VertexParams) *string { return &v.Credentials },
}

// vertexParam reads one vertex_* param; ok is false for another key.
// vertex_credentials may be a mapping (the key's JSON written as YAML).
func (l *loader) vertexParam(key, p string, v *yaml.Node, d *Deployment) (ok bool, err error) {
	field, ok := vertexParams[key]
	if !ok {
		return false, nil
	}
	if n := deref(v); n.Kind == yaml.MappingNode && field(&d.Vertex) == &d.Vertex.Credentials {
		val, err := anyValue(p, v)
		if err != nil {
			return true, err
		}
		b, err := json.Marshal(jsonable(val))
		if err != nil {
			return true, errAt(p, v, "is not a service account's JSON key")
		}
		d.Vertex.Credentials = string(b)
		return true, nil
	}
	s, set, err := l.str(p, v)
	if err != nil {
		return true, err
	}
	if !set {
		l.warn(p, v, "environment variable %s is not set", envName(v.Value))
	}
	if field(&d.Vertex) == &d.Vertex.Credentials && strings.HasPrefix(strings.TrimSpace(deref(v).Value), "os.environ/") {
		d.Vertex.CredentialsEnv = envName(deref(v).Value)
	}
	*field(&d.Vertex) = strings.TrimSpace(s)
	return true, nil
}

// jsonable turns the maps YAML decodes into ones encoding/json accepts.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			ks, _ := k.(string)
			m[ks] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
	}
	return v
}

// vertexEnv completes a Vertex AI deployment from the environment and its
// credentials, or leaves it out of routing saying what is missing. A
// reason never quotes the credentials: a value that is not a key may still
// be a secret put in the wrong place.
func (l *loader) vertexEnv(e *entry, d *Deployment) {
	v := &d.Vertex
	if v.Project == "" {
		v.Project, _ = l.getenv(VertexProjectEnv)
	}
	if v.Location == "" {
		v.Location, _ = l.getenv(VertexLocationEnv)
	}
	if v.Location == "" {
		v.Location, _ = l.getenv(VertexLocationEnvAlt)
	}
	v.Project, v.Location = strings.TrimSpace(v.Project), strings.TrimSpace(v.Location)
	if v.Location == "" {
		v.Location = VertexDefaultLocation
	}
	if v.Credentials == "" {
		if c, ok := l.getenv(VertexCredentialsEnv); ok && strings.TrimSpace(c) != "" {
			v.Credentials, v.CredentialsEnv = strings.TrimSpace(c), VertexCredentialsEnv
		} else if f, ok := l.getenv(GoogleCredentialsEnv); ok && strings.TrimSpace(f) != "" {
			v.Credentials = strings.TrimSpace(f)
		}
	}
	if reason := l.vertexCredentials(v); reason != "" {
		l.leaveOut(e.paramsPath, e.params, d, reason)
		return
	}
	if v.Project == "" {
		v.Project = gjson.Get(v.Credentials, "project_id").Str
	}
	switch {
	case v.Project == "" && d.APIBase == "":
		l.leaveOut(e.paramsPath, e.params, d, "vertex_project is required (or "+VertexProjectEnv+", or a project_id in the credentials)")
	case !vertexName(v.Project) || !vertexName(v.Location) || strings.Contains(v.Location, ":"):
		l.leaveOut(e.paramsPath, e.params, d, "vertex_project and vertex_location may hold only letters, digits, '-', '.', '_' and ':'")
	case d.Model != "*" && !strings.HasPrefix(d.Model, "claude-") && !strings.HasPrefix(d.Model, "gemini-"):
		l.leaveOut(e.paramsPath+".model", e.model, d, "only Claude (vertex_ai/claude-*) and Gemini (vertex_ai/gemini-*) models are implemented on Vertex AI")
	}
}

// vertexCredentials makes v.Credentials a service account's JSON key: the
// value itself, or the file it names (only in a config file: a stored
// deployment's params come from the admin API, which must not name files
// on the gateway's disk). It returns why it cannot, or "". A value read
// through os.environ/ (a secret that may be rotated into shape later) that
// is not a key is left for the calls to report (502, naming the setting),
// as LiteLLM loads it and fails its calls.
func (l *loader) vertexCredentials(v *VertexParams) string {
	if v.Credentials == "" {
		return "no vertex_credentials (nor " + VertexCredentialsEnv + " or " + GoogleCredentialsEnv + "): a service account's JSON key is required"
	}
	fromEnv := v.CredentialsEnv != ""
	if !strings.HasPrefix(v.Credentials, "{") {
		if l.inStored && !fromEnv {
			return "vertex_credentials must be a service account's JSON key (a stored deployment may not name a file)"
		}
		var b []byte
		err := errStoredFile
		if !l.inStored {
			b, err = os.ReadFile(v.Credentials)
		}
		switch {
		case err == nil:
			v.Credentials, v.CredentialsEnv = strings.TrimSpace(string(b)), ""
		case fromEnv:
			return ""
		default:
			return "vertex_credentials is neither a service account's JSON key nor a file that can be read"
		}
	}
	if !gjson.Valid(v.Credentials) {
		return "vertex_credentials is not valid JSON"
	}
	r := gjson.GetMany(v.Credentials, "type", "client_email", "private_key")
	if r[0].Exists() && r[0].Str != "service_account" {
		return "vertex_credentials: only service_account keys are supported"
	}
	if r[1].Str == "" || r[2].Str == "" {
		return "vertex_credentials: a service account's key needs client_email and private_key"
	}
	return ""
}

var errStoredFile = errors.New("a stored deployment names no file")

// vertexName reports whether s may go into a Vertex AI host name or path.
func vertexName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}
