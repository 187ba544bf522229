package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The master key a config names: general_settings.master_key, else
// litellm_settings.master_key, where LiteLLM's Claude Code quickstart puts
// it. A key in the environment (MasterKeyOverrides) replaces either: it is
// set over the config's at build (app.Build). LiteLLM reads
// general_settings.master_key over LITELLM_MASTER_KEY, and never reads
// litellm_settings.master_key at all: there only the variable protects
// the proxy (docs/configuration.md).

// masterKey resolves the key named in l.masterKeys, the first found. A key named but
// resolving to nothing (a variable unset or empty, an empty value) stops
// the start, naming its path and variable: the config means to protect
// the gateway, which would run open. Only with no key named anywhere does
// the gateway start open (LiteLLM's behaviour, warned about at start).
func (l *loader) masterKey() error {
	var named *setting
	for _, s := range l.masterKeys {
		switch {
		case s == nil:
		case named != nil:
			l.warn(s.path, s.node, "overridden by %s", named.path)
		default:
			named = s
		}
	}
	if named == nil {
		return nil
	}
	key, set, err := l.str(named.path, named.node)
	switch {
	case err != nil:
		return err
	case key != "":
		if !strings.HasPrefix(key, "sk-") {
			l.warn(named.path, named.node, "LiteLLM expects the master key to start with \"sk-\"; accepted as is")
		}
		l.cfg.General.MasterKey = key
		return nil
	case l.masterKeyOverridden():
		return nil // the key the gateway gets from its environment (or SSM) replaces this one
	}
	return errAt(named.path, named.node, "%s; refusing to start an open gateway (set it, or LITELLM_MASTER_KEY; remove %s to run without a key)",
		missing(named.node, set), named.path)
}

// missing says why a master key node resolved to nothing.
func missing(n *yaml.Node, set bool) string {
	v := deref(n).Value
	switch {
	case !strings.HasPrefix(strings.TrimSpace(v), "os.environ/"):
		return "the master key is empty"
	case !set:
		return "environment variable " + envName(v) + " is not set"
	}
	return "environment variable " + envName(v) + " is empty"
}

// MasterKeyOverrides name the environment variables whose key replaces the
// config's master key: the key itself, or the SSM parameter it is read from
// (GATEWAY_MASTER_KEY_PARAMETER, as the template deploys it). With one set,
// a master_key naming an unset variable (os.environ/LITELLM_MASTER_KEY in a
// config brought from LiteLLM) is not fatal: the gateway does not run open,
// and a parameter that cannot be read stops it at start.
var MasterKeyOverrides = []string{"GATEWAY_MASTER_KEY", "LITELLM_MASTER_KEY", "GATEWAY_MASTER_KEY_PARAMETER"}

func (l *loader) masterKeyOverridden() bool {
	for _, name := range MasterKeyOverrides {
		if v, ok := l.getenv(name); ok && v != "" {
			return true
		}
	}
	return false
}

// MasterKeyOf returns the master key a config names (general_settings'
// master_key, else litellm_settings', a variable resolved with getenv)
// without loading the rest: the spend consumer opens with it what the
// gateway sealed with it. "" when the config names none, or when it does
// not resolve (Load refuses that config).
func MasterKeyOf(data []byte, getenv Getenv) string {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return ""
	}
	l := &loader{getenv: getenv, cfg: &Config{}}
	sections := []string{"general_settings", "litellm_settings"} // the order of l.masterKeys
	_ = pairs("", doc.Content[0], func(key string, v *yaml.Node, path string) error {
		if i := slices.Index(sections, key); i >= 0 && v.Kind == yaml.MappingNode {
			return pairs(path, v, func(k string, vv *yaml.Node, p string) error {
				if k == "master_key" {
					l.masterKeys[i] = &setting{p, vv}
				}
				return nil
			})
		}
		return nil
	})
	if l.masterKey() != nil {
		return ""
	}
	return l.cfg.General.MasterKey
}
