package gemini

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/wire"
)

// schemaKey reports a JSON Schema keyword Gemini's Schema object takes
// (LiteLLM's filter_schema_fields); any other keyword (additionalProperties,
// $schema, strict, const, ...) is dropped, as LiteLLM drops it. (A switch,
// not a map: nothing to build at start.)
func schemaKey(k string) bool {
	switch k {
	case "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
		"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
		"pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum":
		return true
	}
	return false
}

// maxRefs bounds the $ref expansions of one schema (a recursive definition
// would expand forever: Gemini's Schema has no references).
const maxRefs = 64

// CleanSchema turns an OpenAI JSON schema (a response_format's, or a
// tool's parameters) into Gemini's Schema, as LiteLLM's _build_vertex_schema
// does: $ref to $defs / definitions inlined, anyOf's and type lists' null
// turned into nullable, keywords Gemini refuses dropped, and, with
// ordering, each object's property order kept as propertyOrdering.
func CleanSchema(s gjson.Result, ordering bool) (json.RawMessage, error) {
	c := cleaner{defs: s.Get("$defs"), ordering: ordering}
	if !c.defs.Exists() {
		c.defs = s.Get("definitions")
	}
	out, err := c.clean(nil, s, 0)
	return out, err
}

type cleaner struct {
	defs     gjson.Result
	ordering bool
	refs     int
}

func (c *cleaner) clean(out []byte, s gjson.Result, depth int) ([]byte, error) {
	if depth > wire.MaxDepth {
		return nil, badRequest("schema: nests deeper than %d levels", wire.MaxDepth)
	}
	if !s.IsObject() {
		return append(out, s.Raw...), nil
	}
	if ref := s.Get(`\$ref`); ref.Type == gjson.String {
		c.refs++
		name := ref.Str[strings.LastIndexByte(ref.Str, '/')+1:]
		def := c.defs.Get(gjson.Escape(name))
		if c.refs > maxRefs || !def.IsObject() {
			return nil, badRequest("schema: $ref %q cannot be resolved (Gemini takes no references; recursive schemas are not supported)", ref.Str)
		}
		return c.clean(out, def, depth+1)
	}
	var err error
	out = append(out, '{')
	first := true
	key := func(k string) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = wire.AppendString(out, k)
		out = append(out, ':')
	}
	nullable := false
	if t := s.Get("type"); t.IsArray() { // ["string","null"]
		var types []string
		t.ForEach(func(_, v gjson.Result) bool {
			if v.Str == "null" {
				nullable = true
			} else {
				types = append(types, v.Str)
			}
			return true
		})
		if len(types) > 0 {
			key("type")
			out = wire.AppendString(out, types[0])
		}
	}
	s.ForEach(func(k, v gjson.Result) bool {
		switch {
		case !schemaKey(k.Str):
		case k.Str == "type" && v.IsArray():
		case k.Str == "format" && v.Str != "enum" && v.Str != "date-time":
		case k.Str == "properties" && v.IsObject():
			key(k.Str)
			out = append(out, '{')
			var names []string
			v.ForEach(func(pk, pv gjson.Result) bool {
				if len(names) > 0 {
					out = append(out, ',')
				}
				names = append(names, pk.Str)
				out = wire.AppendString(out, pk.Str)
				out = append(out, ':')
				out, err = c.clean(out, pv, depth+1)
				return err == nil
			})
			out = append(out, '}')
			if c.ordering && len(names) > 1 && !s.Get("propertyOrdering").Exists() {
				key("propertyOrdering")
				b, _ := json.Marshal(names)
				out = append(out, b...)
			}
		case k.Str == "items":
			key(k.Str)
			out, err = c.clean(out, v, depth+1)
		case k.Str == "anyOf" && v.IsArray():
			var items []gjson.Result
			v.ForEach(func(_, it gjson.Result) bool {
				if it.Get("type").Str == "null" {
					nullable = true
				} else {
					items = append(items, it)
				}
				return true
			})
			if len(items) == 1 { // {"anyOf":[X,{"type":"null"}]}: a nullable X
				var inner []byte
				if inner, err = c.clean(nil, items[0], depth+1); err != nil {
					return false
				}
				gjson.ParseBytes(inner).ForEach(func(ik, iv gjson.Result) bool {
					if ik.Str == "nullable" {
						nullable = nullable || iv.Bool()
					} else if !s.Get(gjson.Escape(ik.Str)).Exists() {
						key(ik.Str)
						out = append(out, iv.Raw...)
					}
					return true
				})
				return true
			}
			key(k.Str)
			out = append(out, '[')
			for i, it := range items {
				if i > 0 {
					out = append(out, ',')
				}
				if out, err = c.clean(out, it, depth+1); err != nil {
					return false
				}
			}
			out = append(out, ']')
		case k.Str == "nullable":
			nullable = nullable || v.Bool()
		default:
			key(k.Str)
			out = append(out, v.Raw...)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if nullable {
		key("nullable")
		out = append(out, "true"...)
	}
	return append(out, '}'), nil
}
