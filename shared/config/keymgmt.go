package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AWSSecretManager is the one key_management_system implemented: every
// os.environ/NAME the environment does not set is read from AWS Secrets
// Manager (shared/secrets).
const AWSSecretManager = "aws_secret_manager"

// KeyManagement is general_settings.key_management_system and the
// key_management_settings that apply to it. The zero value: no secret
// manager, os.environ/NAME reads the environment alone.
type KeyManagement struct {
	System string // "" or AWSSecretManager
	// PrimarySecretName is one secret holding a JSON object of NAME: value
	// pairs (LiteLLM's primary_secret_name).
	PrimarySecretName string
	// HostedKeys are names that are secrets of their own: NAME is read
	// from the secret called NAME (LiteLLM's hosted_keys).
	HostedKeys []string
}

// On says whether a secret manager is configured.
func (k KeyManagement) On() bool { return k.System == AWSSecretManager }

// Secrets are the secret ids to read: the primary secret first, then the
// hosted keys, each once.
func (k KeyManagement) Secrets() []string {
	var ids []string
	if k.PrimarySecretName != "" {
		ids = append(ids, k.PrimarySecretName)
	}
	for _, h := range k.HostedKeys {
		if h != "" && h != k.PrimarySecretName && !slices.Contains(ids, h) {
			ids = append(ids, h)
		}
	}
	return ids
}

// keyManagementWhy: LiteLLM's key_management_settings that do not apply
// here, with the reason.
var keyManagementWhy = map[string]string{
	"store_virtual_keys":             "virtual keys are stored hashed in DynamoDB, never in a secret manager",
	"prefix_for_stored_virtual_keys": "virtual keys are stored hashed in DynamoDB, never in a secret manager",
	"description":                    "the gateway writes no secret (it only reads them)",
	"tags":                           "the gateway writes no secret (it only reads them)",
}

// KeyManagementOf reads general_settings' key management of a config
// without loading the rest, so that the secrets can be read while the
// config loads (Load reports the same settings' warnings and errors).
func KeyManagementOf(data []byte, getenv Getenv) (KeyManagement, error) {
	cfg, err := generalOf(data, getenv, func(l *loader, k, p string, v *yaml.Node) error {
		switch k {
		case "key_management_system", "key_management_settings":
			return l.keyManagement(k, p, v)
		}
		return nil
	})
	return cfg.General.KeyManagement, err
}

// generalOf reads a config's general_settings alone, each key through
// read, into a Config of nothing else: the settings that must be known
// before (or without) the whole config loads.
func generalOf(data []byte, getenv Getenv, read func(l *loader, key, path string, v *yaml.Node) error) (*Config, error) {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	l := &loader{getenv: getenv, cfg: &Config{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return l.cfg, fmt.Errorf("parse config: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return l.cfg, nil // Load says what is wrong
	}
	errStop := errors.New("stop")
	err := pairs("", doc.Content[0], func(key string, v *yaml.Node, path string) error {
		if key != "general_settings" {
			return nil
		}
		err := pairs(path, v, func(k string, vv *yaml.Node, p string) error { return read(l, k, p, vv) })
		if err == nil {
			err = errStop
		}
		return err
	})
	if err != nil && !errors.Is(err, errStop) {
		return &Config{}, err
	}
	return l.cfg, nil
}

// keyManagement reads general_settings.key_management_system or
// key_management_settings into l.cfg.General.KeyManagement.
func (l *loader) keyManagement(key, path string, v *yaml.Node) error {
	km := &l.cfg.General.KeyManagement
	if key == "key_management_system" {
		s, err := l.scalar(path, v)
		if err != nil {
			return err
		}
		switch s = strings.ToLower(strings.TrimSpace(s)); s {
		case "":
		case AWSSecretManager:
			km.System = s
		default:
			l.warn(path, v, "%q is not supported (only %s); os.environ/ values come from the environment alone", s, AWSSecretManager)
		}
		return nil
	}
	return pairs(path, v, func(k string, vv *yaml.Node, p string) error {
		var err error
		switch k {
		case "primary_secret_name":
			km.PrimarySecretName, err = l.scalar(p, vv)
		case "hosted_keys":
			km.HostedKeys, err = l.strList(p, vv)
		case "access_mode":
			var s string
			if s, err = l.scalar(p, vv); err == nil && s != "" && s != "read_only" {
				l.warn(p, vv, "ignored: the gateway only reads secrets (read_only), it writes none")
			}
		default:
			if why, ok := keyManagementWhy[k]; ok {
				l.warn(p, vv, "ignored: %s", why)
			} else {
				l.warn(p, vv, "not supported; ignored")
			}
		}
		return err
	})
}

// keyManagementDone checks the key management once general_settings is
// read: a secret manager with no secret to read is a mistake.
func (l *loader) keyManagementDone(path string, n *yaml.Node) {
	km := l.cfg.General.KeyManagement
	if km.On() && len(km.Secrets()) == 0 {
		l.warn(path, n, "key_management_system %s with neither primary_secret_name nor hosted_keys: no secret is read", AWSSecretManager)
	}
}
