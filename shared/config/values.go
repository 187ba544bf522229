package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

func envName(v string) string { return strings.TrimPrefix(strings.TrimSpace(v), "os.environ/") }

// str reads a scalar as a string, resolving os.environ/NAME. set is false when
// the value names an environment variable that is not set.
func (l *loader) str(path string, n *yaml.Node) (s string, set bool, err error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		return "", false, errAt(path, n, "must be a single value")
	}
	if n.Tag == "!!null" {
		return "", true, nil
	}
	v := n.Value
	if strings.HasPrefix(strings.TrimSpace(v), "os.environ/") {
		name := envName(v)
		if name == "" {
			return "", false, errAt(path, n, "os.environ/ needs a variable name")
		}
		val, ok := l.getenv(name)
		return val, ok, nil
	}
	return v, true, nil
}

// shown is a bad value as an error shows it: quoted, or, when it came from
// the environment, the variable's name (the value may be a secret put in
// the wrong place).
func shown(n *yaml.Node, s string) string {
	if n = deref(n); strings.HasPrefix(strings.TrimSpace(n.Value), "os.environ/") {
		return "the value of " + envName(n.Value)
	}
	return strconv.Quote(s)
}

func (l *loader) scalar(path string, n *yaml.Node) (string, error) {
	s, set, err := l.str(path, n)
	if err != nil {
		return "", err
	}
	if !set {
		return "", errAt(path, n, "environment variable %s is not set", envName(n.Value))
	}
	return s, nil
}

// intv reads a non-negative whole number ("" is 0; 5.0 and 1e3 are whole).
func (l *loader) intv(path string, n *yaml.Node) (int64, error) {
	return number(l, path, n, "a whole number", parseWhole)
}

func parseWhole(s string) (int64, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

// count reads a non-negative whole number that fits an int (retries,
// orders, token windows).
func (l *loader) count(path string, n *yaml.Node) (int, error) {
	i, err := l.intv(path, n)
	if err == nil && i > math.MaxInt32 {
		return 0, errAt(path, n, "must be at most %d, got %d", math.MaxInt32, i)
	}
	return int(i), err
}

// floatv reads a non-negative finite number ("" is 0).
func (l *loader) floatv(path string, n *yaml.Node) (float64, error) {
	return number(l, path, n, "a number", parseFinite)
}

func parseFinite(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// number reads a non-negative number with parse; what names the kind a
// value parse refuses must be.
func number[T int64 | float64](l *loader, path string, n *yaml.Node, what string, parse func(string) (T, bool)) (T, error) {
	s, err := l.scalar(path, n)
	if err != nil || s == "" {
		return 0, err
	}
	v, ok := parse(s)
	if !ok {
		return 0, errAt(path, n, "must be %s, got %s", what, shown(n, s))
	}
	if v < 0 {
		return 0, errAt(path, n, "must not be negative, got %v", v)
	}
	return v, nil
}

func (l *loader) boolv(path string, n *yaml.Node) (bool, error) {
	s, err := l.scalar(path, n)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0", "":
		return false, nil
	}
	return false, errAt(path, n, "must be true or false, got %s", shown(n, s))
}

// seconds reads a number of seconds (LiteLLM's unit for timeouts).
func (l *loader) seconds(path string, n *yaml.Node) (time.Duration, error) {
	f, err := l.floatv(path, n)
	if err != nil {
		return 0, err
	}
	if f*float64(time.Second) >= math.MaxInt64 { // would wrap to a negative duration
		return 0, errAt(path, n, "must be at most %d seconds, got %v", math.MaxInt64/int64(time.Second), f)
	}
	return time.Duration(f * float64(time.Second)), nil
}

func (l *loader) strList(path string, n *yaml.Node) ([]string, error) {
	out, _, err := l.strListAt(path, n)
	return out, err
}

// strListAt is strList with where each value is written.
func (l *loader) strListAt(path string, n *yaml.Node) ([]string, []pos, error) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return nil, nil, nil
		}
		s, err := l.scalar(path, n)
		if err != nil {
			return nil, nil, err
		}
		return []string{s}, []pos{{path, n.Line}}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, nil, errAt(path, n, "must be a list")
	}
	out := make([]string, 0, len(n.Content))
	at := make([]pos, 0, len(n.Content))
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		s, err := l.scalar(p, c)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, s)
		at = append(at, pos{p, deref(c).Line})
	}
	return out, at, nil
}
