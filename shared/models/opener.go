package models

import "sync"

// Opener returns what opens values sealed with the salt key key returns
// (Sealer.Open), asking key once, on first use: a key read at start (from
// SSM) need not have arrived when the opener is made, and a consumer that
// never opens one never reads it. key's error, or ErrNoSaltKey when it
// returns "", is every call's.
func Opener(key func() (string, error)) func(sealed string) (string, error) {
	sealer := sync.OnceValues(func() (*Sealer, error) {
		k, err := key()
		if err != nil {
			return nil, err
		}
		return NewSealer(k)
	})
	return func(sealed string) (string, error) {
		s, err := sealer()
		if err != nil {
			return "", err
		}
		return s.Open(sealed)
	}
}
