package catalog

import (
	"slices"
	"strings"
)

// ErrorWords are a vendor's words for the failures an HTTP status does not
// tell apart. Each vendor package declares its own; providers.Classify
// matches them all, whatever the deployment's vendor: an OpenAI-compatible
// server, or a proxy in front of another vendor, passes another vendor's
// words through.
type ErrorWords struct {
	ContextWindow Signal // the prompt is over the model's context window
	ContentPolicy Signal // a content filter refused the request
	Overloaded    Signal // the vendor is overloaded: retry elsewhere
	// ModelMissing: a 404 saying the model (or Azure deployment) the
	// deployment names does not exist, its own fault; any other 404 is a
	// route (or a wildcard deployment's model) the request chose.
	ModelMissing Signal
}

// Signal is one failure's marks in an upstream error.
type Signal struct {
	Statuses []int    // the response status
	Codes    []string // error.code, whole
	Types    []string // error.type, whole
	Phrases  []string // lowercase, anywhere in the message, code and type
}

// Match reports whether an error with this status, code and type, whose
// message, code and type lowercased and joined are lower, bears the signal.
func (s Signal) Match(status int, code, typ, lower string) bool {
	if slices.Contains(s.Statuses, status) || slices.Contains(s.Codes, code) || slices.Contains(s.Types, typ) {
		return true
	}
	for _, p := range s.Phrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// Merge returns the words of every vendor in ws together.
func Merge(ws ...ErrorWords) ErrorWords {
	var out ErrorWords
	for _, w := range ws {
		out.ContextWindow = out.ContextWindow.merge(w.ContextWindow)
		out.ContentPolicy = out.ContentPolicy.merge(w.ContentPolicy)
		out.Overloaded = out.Overloaded.merge(w.Overloaded)
		out.ModelMissing = out.ModelMissing.merge(w.ModelMissing)
	}
	return out
}

func (s Signal) merge(o Signal) Signal {
	return Signal{
		Statuses: append(s.Statuses, o.Statuses...),
		Codes:    append(s.Codes, o.Codes...),
		Types:    append(s.Types, o.Types...),
		Phrases:  append(s.Phrases, o.Phrases...),
	}
}
