// Package metricstest reads the Prometheus text the metrics registry
// writes, for the tests of the registry and of the gateway's /metrics.
package metricstest

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Sample is one parsed Prometheus sample.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Parse parses the text format strictly enough to catch what a
// Prometheus server would reject: every sample belongs to a family declared
// by HELP and TYPE before it, names and label names are valid, values are
// numbers, no series is repeated, histogram buckets are cumulative and end
// with +Inf equal to _count.
func Parse(t testing.TB, text string) (types map[string]string, samples []Sample) {
	t.Helper()
	types = map[string]string{}
	helped := map[string]bool{}
	seen := map[string]bool{}
	var out []Sample
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("output does not end with a newline")
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("line %d %q: %s", n+1, line, fmt.Sprintf(format, args...))
		}
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			helped[name] = true
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, kind, _ := strings.Cut(rest, " ")
			if !metricName.MatchString(name) || !helped[name] || types[name] != "" {
				fail("bad or repeated TYPE")
			}
			switch kind {
			case "counter", "gauge", "histogram":
			default:
				fail("type %q", kind)
			}
			types[name] = kind
			continue
		}
		s := Sample{Labels: map[string]string{}}
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			fail("no value")
		}
		s.Name = line[:i]
		rest := line[i:]
		if rest[0] == '{' {
			rest = rest[1:]
			for rest[0] != '}' {
				eq := strings.Index(rest, `="`)
				if eq < 0 {
					fail("label without value")
				}
				ln := rest[:eq]
				if !labelName.MatchString(ln) {
					fail("label name %q", ln)
				}
				rest = rest[eq+2:]
				var v strings.Builder
				for {
					if rest == "" {
						fail("unterminated label value")
					}
					c := rest[0]
					rest = rest[1:]
					if c == '"' {
						break
					}
					if c == '\\' {
						switch rest[0] {
						case '\\', '"':
							v.WriteByte(rest[0])
						case 'n':
							v.WriteByte('\n')
						default:
							fail("bad escape")
						}
						rest = rest[1:]
						continue
					}
					if c == '\n' {
						fail("raw newline")
					}
					v.WriteByte(c)
				}
				if _, dup := s.Labels[ln]; dup {
					fail("label %s twice", ln)
				}
				s.Labels[ln] = v.String()
				if rest[0] == ',' {
					rest = rest[1:]
				}
			}
			rest = rest[1:]
		}
		if !strings.HasPrefix(rest, " ") {
			fail("no space before value")
		}
		v, err := strconv.ParseFloat(rest[1:], 64)
		if err != nil {
			fail("value: %v", err)
		}
		s.Value = v
		family := s.Name
		if types[family] == "" {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if f, ok := strings.CutSuffix(s.Name, suf); ok && types[f] == "histogram" {
					family = f
				}
			}
		}
		if types[family] == "" {
			fail("sample of an undeclared family")
		}
		key := line[:len(line)-len(rest)]
		if seen[key] {
			fail("series repeated")
		}
		seen[key] = true
		out = append(out, s)
	}
	// Histograms: cumulative buckets, +Inf == _count.
	type hkey struct{ name, labels string }
	last := map[hkey]float64{}
	inf := map[hkey]float64{}
	for _, s := range out {
		f, ok := strings.CutSuffix(s.Name, "_bucket")
		if !ok || types[f] != "histogram" {
			continue
		}
		le := s.Labels["le"]
		k := hkey{f, labelsWithout(s.Labels, "le")}
		if s.Value < last[k] {
			t.Fatalf("%s: bucket le=%s = %v after %v: not cumulative", f, le, s.Value, last[k])
		}
		last[k] = s.Value
		if le == "+Inf" {
			inf[k] = s.Value
		}
	}
	for _, s := range out {
		if f, ok := strings.CutSuffix(s.Name, "_count"); ok && types[f] == "histogram" {
			if got, ok := inf[hkey{f, labelsWithout(s.Labels, "")}]; !ok || got != s.Value {
				t.Fatalf("%s: _count %v, +Inf bucket %v", f, s.Value, got)
			}
		}
	}
	return types, out
}

func labelsWithout(l map[string]string, drop string) string {
	var parts []string
	for k, v := range l {
		if k != drop {
			parts = append(parts, k+"="+v)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// Sum adds the values of the samples of name whose labels include want,
// and counts them.
func Sum(samples []Sample, name string, want map[string]string) (total float64, n int) {
outer:
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		for k, v := range want {
			if s.Labels[k] != v {
				continue outer
			}
		}
		total += s.Value
		n++
	}
	return total, n
}
