package main

import (
	"errors"
	"net/http"
)

// startLambda serves h through the streaming function URL runtime.
func startLambda(h http.Handler) error {
	return errors.New("lambda runtime: not wired yet")
}
