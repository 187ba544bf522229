package models

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/nacl/secretbox"
)

// Sealer seals and opens a stored deployment's credentials with LiteLLM's
// scheme (litellm/proxy/common_utils/encrypt_decrypt_utils.py, its default
// algorithm): a NaCl secretbox (XSalsa20-Poly1305) keyed by the SHA-256 of
// the salt key (LITELLM_SALT_KEY, else the master key), a random 24-byte
// nonce, and the nonce followed by the box in URL-safe base64 with
// padding. A value LiteLLM sealed opens here and the other way round, so
// a LiteLLM database's rows can be carried over as they are.
type Sealer struct {
	key [32]byte
}

// ErrNoSaltKey: a sealer needs a key.
var ErrNoSaltKey = errors.New("no salt key: set LITELLM_SALT_KEY (or a master key)")

// ErrOpen is a sealed value that does not open with this key (another
// salt key, or not a sealed value at all). It never carries the value.
var ErrOpen = errors.New("sealed value does not open with this salt key")

// NewSealer returns the sealer of saltKey.
func NewSealer(saltKey string) (*Sealer, error) {
	if saltKey == "" {
		return nil, ErrNoSaltKey
	}
	return &Sealer{key: sha256.Sum256([]byte(saltKey))}, nil
}

const nonceLen = 24

// Seal returns plain sealed with a fresh random nonce.
func (s *Sealer) Seal(plain string) (string, error) {
	var nonce [nonceLen]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	return s.sealWith(nonce, plain), nil
}

func (s *Sealer) sealWith(nonce [nonceLen]byte, plain string) string {
	box := secretbox.Seal(nonce[:], []byte(plain), &nonce, &s.key)
	return base64.URLEncoding.EncodeToString(box)
}

// Open returns the plain text of a sealed value.
func (s *Sealer) Open(sealed string) (string, error) {
	raw, err := base64.URLEncoding.DecodeString(strings.TrimSpace(sealed))
	if err != nil || len(raw) < nonceLen+secretbox.Overhead {
		return "", ErrOpen
	}
	var nonce [nonceLen]byte
	copy(nonce[:], raw[:nonceLen])
	plain, ok := secretbox.Open(nil, raw[nonceLen:], &nonce, &s.key)
	if !ok {
		return "", ErrOpen
	}
	return string(plain), nil
}

// Secret reports whether a litellm_params name holds a credential: such a
// value is sealed in the store and never shown (api_key, the aws_* keys,
// vertex_credentials, ...). Token counts (max_tokens, ...) are not.
func Secret(name string) bool {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "_tokens") {
		return false
	}
	for _, s := range []string{"key", "secret", "token", "password", "credential", "auth"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// SealParams returns a copy of params with every secret sealed. A secret
// that is not a string (vertex_credentials given as the service account's
// JSON object) is sealed as its JSON text, which every reader of such a
// param takes as well: nothing secret is stored in clear whatever its shape.
func (s *Sealer) SealParams(params map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(params))
	for k, v := range params {
		if v != nil && Secret(k) {
			if _, isString := v.(string); !isString {
				text, err := json.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("litellm_params.%s: %w", k, err)
				}
				v = string(text)
			}
		}
		if str, ok := v.(string); ok && Secret(k) && str != "" {
			sealed, err := s.Seal(str)
			if err != nil {
				return nil, err
			}
			v = sealed
		}
		out[k] = v
	}
	return out, nil
}

// OpenParams returns a copy of stored params with every secret opened. An
// error names the param, never its value.
func (s *Sealer) OpenParams(params map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(params))
	for k, v := range params {
		if str, ok := v.(string); ok && Secret(k) && str != "" {
			plain, err := s.Open(str)
			if err != nil {
				return nil, fmt.Errorf("litellm_params.%s: %w", k, err)
			}
			v = plain
		}
		out[k] = v
	}
	return out, nil
}
