package config

import (
	"errors"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// Error is a config value that cannot be used.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Getenv looks up an environment variable; os.LookupEnv in production, a map
// in tests. Values written as "os.environ/NAME" are resolved through it.
type Getenv func(name string) (string, bool)

// LoadFile reads and loads the config file at path.
func LoadFile(path string, getenv Getenv) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Load(data, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Load parses and validates a LiteLLM proxy config.
func Load(data []byte, getenv Getenv) (*Config, error) {
	return load(data, getenv, nil, false)
}

func load(data []byte, getenv Getenv, stored []Stored, strict bool) (*Config, error) {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	l := &loader{getenv: getenv, cfg: &Config{General: GeneralSettings{RateLimitsFailOpen: true}}, stored: stored, strict: strict}
	if err := l.load(&doc); err != nil {
		return nil, err
	}
	return l.cfg, nil
}

type loader struct {
	getenv Getenv
	cfg    *Config
	// raw settings gathered before merging router_settings over litellm_settings
	litellm, router map[string]setting
	// masterKeys are the master_key settings found (masterkey.go):
	// general_settings', then litellm_settings'; nil where none.
	masterKeys [2]*setting
	// stored are the deployments of the model store (stored.go), loaded
	// after model_list's; strict makes one that fails the load's error.
	stored []Stored
	strict bool
}

type setting struct {
	path string
	node *yaml.Node
}

func (l *loader) warn(path string, n *yaml.Node, format string, args ...any) {
	w := Warning{Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		w.Line = n.Line
	}
	l.cfg.Warnings = append(l.cfg.Warnings, w)
}

func errAt(path string, n *yaml.Node, format string, args ...any) *Error {
	e := &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

func (l *loader) load(doc *yaml.Node) error {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return errors.New("config: empty document")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return errAt("(root)", root, "must be a mapping with model_list and settings")
	}
	l.litellm = map[string]setting{}
	l.router = map[string]setting{}
	var modelList *yaml.Node
	err := pairs("", root, func(key string, v *yaml.Node, path string) error {
		switch key {
		case "model_list":
			modelList = v
		case "router_settings":
			return pairs(path, v, func(k string, vv *yaml.Node, p string) error {
				l.router[k] = setting{p, vv}
				return nil
			})
		case "litellm_settings":
			return pairs(path, v, func(k string, vv *yaml.Node, p string) error {
				if k == "master_key" {
					l.masterKeys[1] = &setting{p, vv}
					return nil
				}
				if ok, err := l.callbackKey(k, p, vv); ok { // callbacks.go
					return err
				}
				l.litellm[k] = setting{p, vv}
				return nil
			})
		case "general_settings":
			return l.general(path, v)
		default:
			l.ignoredOrUnsupported(key, path, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := l.masterKey(); err != nil { // masterkey.go
		return err
	}
	if err := l.models(modelList); err != nil {
		return err
	}
	if err := l.dropParams(); err != nil {
		return err
	}
	if err := l.routerSettings(); err != nil {
		return err
	}
	return l.validate()
}
