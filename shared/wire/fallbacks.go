package wire

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// fallbacks reads a request's own "fallbacks", in LiteLLM's three forms:
// model names (["b", "c"]); objects naming a model and the request fields
// its call replaces ([{"model": "b", "messages": [...]}]: LiteLLM updates
// the call's arguments with the object); and the configured form, a
// mapping from a model group to its fallbacks ([{"a": ["b"]}]), of which
// the entry for the requested model (or "*") applies.
func (r *Request) fallbacks(v gjson.Result) {
	r.FallbacksSet = true
	var groups []gjson.Result // the configured form's entries
	v.ForEach(func(_, f gjson.Result) bool {
		switch m := f.Get("model"); {
		case f.Type == gjson.String:
			r.Fallbacks = append(r.Fallbacks, f.Str)
		case f.IsObject() && m.Type == gjson.String:
			if r.FallbackOverrides == nil {
				r.FallbackOverrides = make([]string, len(r.Fallbacks), len(r.Fallbacks)+1)
			}
			r.Fallbacks = append(r.Fallbacks, m.Str)
			r.FallbackOverrides = append(r.FallbackOverrides, f.Raw)
			return true
		case f.IsObject():
			groups = append(groups, f)
			return true
		default:
			return true
		}
		if r.FallbackOverrides != nil {
			r.FallbackOverrides = append(r.FallbackOverrides, "")
		}
		return true
	})
	r.groupFallbacks = groups
}

// resolveGroupFallbacks applies the configured form of the request's
// fallbacks once the model is known: the entry for the model, else "*".
func (r *Request) resolveGroupFallbacks() {
	if r.groupFallbacks == nil {
		return
	}
	var exact, generic gjson.Result
	for _, g := range r.groupFallbacks {
		g.ForEach(func(k, list gjson.Result) bool {
			switch {
			case !list.IsArray():
			case k.Str == r.Model && !exact.Exists():
				exact = list
			case k.Str == "*" && !generic.Exists():
				generic = list
			}
			return true
		})
	}
	if exact.Exists() {
		generic = exact
	}
	generic.ForEach(func(_, f gjson.Result) bool {
		if f.Type == gjson.String {
			r.Fallbacks = append(r.Fallbacks, f.Str)
			if r.FallbackOverrides != nil {
				r.FallbackOverrides = append(r.FallbackOverrides, "")
			}
		}
		return true
	})
	r.groupFallbacks = nil
}

// FallbackRequest is the request the i-th of its own fallbacks calls: the
// request itself, or, for a fallback given as an object, the request with
// the object's fields in place of its own (the model is the fallback's,
// written by WithModel as for any attempt).
func (r *Request) FallbackRequest(i int) (*Request, error) {
	if i < 0 || i >= len(r.FallbackOverrides) || r.FallbackOverrides[i] == "" {
		return r, nil
	}
	body := append([]byte(nil), r.Body...)
	var err error
	gjson.Parse(r.FallbackOverrides[i]).ForEach(func(k, v gjson.Result) bool {
		if k.Str == "model" {
			return true
		}
		body, err = sjson.SetRawBytes(body, escapePath(k.Str), []byte(v.Raw))
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	fr, err := parse(body, r.responses)
	if err != nil {
		return nil, err
	}
	fr.Model, fr.renamed = r.Fallbacks[i], true
	return fr, nil
}

// escapePath escapes sjson's path syntax in a field name (a key holding
// '.', '*', '?' or '|' is one field, not a path).
func escapePath(k string) string {
	out := make([]byte, 0, len(k))
	for i := 0; i < len(k); i++ {
		switch k[i] {
		case '.', '*', '?', '|', '#', '@', '\\', ':', '!', '=', '<', '>', '%':
			out = append(out, '\\')
		}
		out = append(out, k[i])
	}
	return string(out)
}
