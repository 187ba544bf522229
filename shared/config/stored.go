package config

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Stored is a deployment added through the admin API
// (general_settings.store_model_in_db), its credentials opened: LiteLLM's
// model_name, litellm_params and model_info, as JSON decodes them.
type Stored struct {
	ID        string
	ModelName string
	Params    map[string]any
	Info      map[string]any
}

// StoredPath is the path that names a stored deployment in warnings.
func StoredPath(id string) string { return storedPrefix + id + "]" }

const storedPrefix = "model_list[id="

// IsStoredPath reports whether a warning's path is a stored deployment's.
func IsStoredPath(path string) bool { return strings.HasPrefix(path, storedPrefix) }

// LoadStored loads data as Load does, with the stored deployments after
// model_list's. Each is loaded by the code path of a config deployment
// (the same errors and warnings, drop_params, access groups, regions,
// limits, prices), marked Deployment.Stored, and keeps its id. One a
// config deployment's id shadows is left out (the config wins), and so is
// one that no longer loads (a changed config): both with a warning.
func LoadStored(data []byte, getenv Getenv, stored []Stored) (*Config, error) {
	return load(data, getenv, stored, false)
}

// CheckStored reports whether s loads beside data's deployments as
// LoadStored would load it: its error (the path relative to the
// deployment: "litellm_params.rpm"), else the warnings about it.
func CheckStored(data []byte, getenv Getenv, s Stored) ([]Warning, error) {
	cfg, err := load(data, getenv, []Stored{s}, true)
	if err != nil {
		return nil, err
	}
	prefix := StoredPath(s.ID)
	var out []Warning
	for _, w := range cfg.Warnings {
		if rest, ok := cutPath(w.Path, prefix); ok {
			w.Path = rest
			out = append(out, w)
		}
	}
	return out, nil
}

func cutPath(path, prefix string) (string, bool) {
	if path == prefix {
		return "(deployment)", true
	}
	if len(path) > len(prefix) && path[:len(prefix)] == prefix && path[len(prefix)] == '.' {
		return path[len(prefix)+1:], true
	}
	return "", false
}

// storedModels appends the stored deployments after the config's; ids
// holds the config's ids. strict: a stored deployment that does not load
// is the load's error (the admin API's check), with its path relative to
// the deployment.
func (l *loader) storedModels(ids map[string]string) error {
	for _, s := range l.stored {
		path := StoredPath(s.ID)
		if prev, dup := ids[s.ID]; dup {
			if l.strict {
				return &Error{Path: "model_info.id", Msg: fmt.Sprintf("%q is the id of a config deployment (%s); the config's is served", s.ID, prev)}
			}
			l.warn(path, nil, "left out: a config deployment (%s) has the same id, and the config wins", prev)
			continue
		}
		n, err := storedNode(s)
		var d *Deployment
		if err == nil {
			l.inStored = true
			d, err = l.deployment(path, n)
			l.inStored = false
		}
		if err != nil {
			if l.strict {
				var e *Error
				if errors.As(err, &e) {
					if rest, ok := cutPath(e.Path, path); ok {
						e.Path = rest
					}
					return e
				}
				return err
			}
			l.warn(path, nil, "left out: %v", err)
			continue
		}
		d.ID, d.Stored = s.ID, true
		ids[s.ID] = path
		l.cfg.Deployments = append(l.cfg.Deployments, d)
	}
	return nil
}

// storedNode is s as the YAML node a config file would hold, without
// lines (a stored deployment has none).
func storedNode(s Stored) (*yaml.Node, error) {
	info := make(map[string]any, len(s.Info)+1)
	for k, v := range s.Info {
		info[k] = v
	}
	info["id"] = s.ID
	text, err := yaml.Marshal(map[string]any{"model_name": s.ModelName, "litellm_params": s.Params, "model_info": info})
	if err != nil {
		return nil, &Error{Path: "litellm_params", Msg: err.Error()}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil || len(doc.Content) == 0 {
		return nil, &Error{Path: "litellm_params", Msg: fmt.Sprintf("cannot be read: %v", err)}
	}
	noLines(doc.Content[0])
	return doc.Content[0], nil
}

func noLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		noLines(c)
	}
}
