package config

import "testing"

func TestDisplayURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.openai.com/v1":          "https://api.openai.com/v1",
		"http://svc:s3cret@10.0.0.1:8000/v1": "http://[redacted]@10.0.0.1:8000/v1",
		"http://token@host":                  "http://[redacted]@host",
		"http://u:p@ss@host/v1?x=1":          "http://[redacted]@host/v1?x=1",
		"https://host/v1/users/a@b.c":        "https://host/v1/users/a@b.c",
		"https://host?email=a@b.c":           "https://host?email=a@b.c",
		"":                                   "",
		"host@nowhere":                       "host@nowhere",
	} {
		if got := DisplayURL(in); got != want {
			t.Errorf("DisplayURL(%q) = %q, want %q", in, got, want)
		}
	}
}
