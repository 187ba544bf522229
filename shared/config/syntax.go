package config

import (
	"errors"
	"fmt"
	"strings"

	goccy "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// syntaxError is a YAML document's syntax error at the line and column
// where it is. go.yaml.in/yaml/v3 reports the line where the enclosing
// block starts (line 1 for an indentation error in model_list), so the
// document is parsed again, on this error path only, by goccy/go-yaml,
// which points at the token. v3's own message is kept when goccy finds no
// error or no position.
func syntaxError(data []byte, v3err error) (out error) {
	defer func() {
		if recover() != nil { // a parser's bug must not stop the start more than v3's error does
			out = fmt.Errorf("parse config: %w", v3err)
		}
	}()
	_, err := parser.ParseBytes(data, 0)
	var ye goccy.Error
	if err == nil || !errors.As(err, &ye) || ye.GetToken() == nil || ye.GetToken().Position == nil {
		return fmt.Errorf("parse config: %w", v3err)
	}
	p := ye.GetToken().Position
	msg := strings.TrimPrefix(v3err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok { // v3's line is the block's, not the error's
		if _, after, ok := strings.Cut(rest, ": "); ok {
			msg = after
		}
	}
	return &Error{Path: "YAML syntax", Line: p.Line, Msg: fmt.Sprintf("column %d: %s (%s)", p.Column, msg, ye.GetMessage())}
}
