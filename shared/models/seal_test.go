package models

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// litellmVector is "sk-upstream-0123456789" sealed with salt key
// "sk-litellm-salt-test" and nonce 00 01 .. 17 by LiteLLM's encrypt_value
// (SecretBox(sha256(salt)).encrypt, then base64.urlsafe_b64encode). PyNaCl
// is not installable here, so testdata/litellm_vector.py computes it from
// the XSalsa20-Poly1305 spec in plain Python: an implementation independent
// of golang.org/x/crypto's.
const litellmVector = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXwqdLYUTEDybWXiRjFMQvZjFwxF2U8UdI145FQNe2jWXubR2VQWw="

func TestSealLiteLLMVector(t *testing.T) {
	s, err := NewSealer("sk-litellm-salt-test")
	if err != nil {
		t.Fatal(err)
	}
	var nonce [nonceLen]byte
	for i := range nonce {
		nonce[i] = byte(i)
	}
	if got := s.sealWith(nonce, "sk-upstream-0123456789"); got != litellmVector {
		t.Fatalf("sealed %s, LiteLLM's scheme gives %s", got, litellmVector)
	}
	plain, err := s.Open(litellmVector)
	if err != nil || plain != "sk-upstream-0123456789" {
		t.Fatalf("Open(vector) = %q, %v", plain, err)
	}
}

func TestSealRoundTripAndWrongKey(t *testing.T) {
	a, _ := NewSealer("salt-a")
	b, _ := NewSealer("salt-b")
	x, err := a.Seal("secret-value")
	if err != nil {
		t.Fatal(err)
	}
	y, _ := a.Seal("secret-value")
	if x == y || strings.Contains(x, "secret-value") {
		t.Fatalf("two seals %q %q: want distinct nonces and no clear text", x, y)
	}
	if got, err := a.Open(x); err != nil || got != "secret-value" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	for _, bad := range []string{x[:len(x)-4] + "AAAA", "", "not base64!", "c2hvcnQ="} {
		if _, err := a.Open(bad); !errors.Is(err, ErrOpen) {
			t.Errorf("Open(%q) err %v, want ErrOpen", bad, err)
		}
	}
	if _, err := b.Open(x); !errors.Is(err, ErrOpen) {
		t.Fatalf("another salt key opened it: %v", err)
	}
	if _, err := NewSealer(""); !errors.Is(err, ErrNoSaltKey) {
		t.Fatalf("empty salt key: %v", err)
	}
}

func TestSealParams(t *testing.T) {
	s, _ := NewSealer("k")
	in := map[string]any{"model": "openai/gpt-4o", "api_key": "sk-live", "aws_secret_access_key": "aws-s",
		"max_tokens": 5.0, "api_base": "https://x", "vertex_credentials": "os.environ/VX"}
	sealed, err := s.SealParams(in)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range sealed {
		if str, ok := v.(string); ok && Secret(k) && str == in[k] {
			t.Errorf("%s left in clear", k)
		}
		if !Secret(k) && v != in[k] {
			t.Errorf("%s changed: %v", k, v)
		}
	}
	opened, err := s.OpenParams(sealed)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range in {
		if opened[k] != v {
			t.Errorf("%s: %v after open, want %v", k, opened[k], v)
		}
	}
	other, _ := NewSealer("other")
	if _, err := other.OpenParams(sealed); err == nil || strings.Contains(err.Error(), "sk-live") {
		t.Fatalf("wrong key: %v", err)
	}
}

// A secret that is not a string (a service account's JSON object) is
// sealed too, as its JSON text: no field of it is stored in clear.
func TestSealParamsObject(t *testing.T) {
	s, _ := NewSealer("k")
	creds := map[string]any{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIsecret\n"}
	sealed, err := s.SealParams(map[string]any{"vertex_credentials": creds})
	if err != nil {
		t.Fatal(err)
	}
	str, ok := sealed["vertex_credentials"].(string)
	if !ok || strings.Contains(str, "MIIsecret") || strings.Contains(str, "service_account") {
		t.Fatalf("vertex_credentials stored as %#v", sealed["vertex_credentials"])
	}
	opened, err := s.OpenParams(sealed)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(opened["vertex_credentials"].(string)), &back); err != nil || back["private_key"] != creds["private_key"] {
		t.Fatalf("opened %v (%v), want the object's JSON", opened["vertex_credentials"], err)
	}
}
