package responses

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Tools as a chat provider sees them. A Responses request may declare,
// beside function tools, custom (freeform) tools and namespaces of tools
// (Codex sends both), and hosted tools only OpenAI runs. As LiteLLM's
// bridge does, namespaces are flattened (their tools named
// "<namespace>__<name>" for the model, and given back their namespace in
// the output), a custom tool becomes a function taking one string,
// "content", and hosted tools (web_search, file_search, code_interpreter,
// image_generation, computer use, mcp, local_shell, ...) are left out: a
// chat model cannot run them, and an agent that always declares them
// (Codex declares web_search) still works without.

// tool is one tool the chat model sees, and what it stands for.
type tool struct {
	namespace, name string // the client's names ("" namespace: none)
	custom          bool
}

// namespaced is the name the model sees for name in namespace.
func namespaced(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "__" + name
}

// toolsOf lists the request's tools the chat model sees, by the name it
// sees them under.
func toolsOf(tools gjson.Result) map[string]tool {
	var out map[string]tool
	add := func(ns string, t gjson.Result) {
		typ, name := t.Get("type").Str, t.Get("name").Str
		if (typ != "function" && typ != "custom") || name == "" {
			return
		}
		if out == nil {
			out = map[string]tool{}
		}
		out[namespaced(ns, name)] = tool{namespace: ns, name: name, custom: typ == "custom"}
	}
	tools.ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str == "namespace" {
			ns := t.Get("name").Str
			t.Get("tools").ForEach(func(_, inner gjson.Result) bool { add(ns, inner); return true })
			return true
		}
		add("", t)
		return true
	})
	return out
}

// chatTools converts the request's function and custom tools, namespaces
// flattened; other tools are left out.
func chatTools(tools gjson.Result) []any {
	var out []any
	var conv func(ns string, t gjson.Result)
	conv = func(ns string, t gjson.Result) {
		switch t.Get("type").Str {
		case "namespace":
			if ns == "" { // one level, as the API has it
				t.Get("tools").ForEach(func(_, inner gjson.Result) bool { conv(t.Get("name").Str, inner); return true })
			}
		case "function":
			fn := map[string]any{"name": namespaced(ns, t.Get("name").Str)}
			if d := t.Get("description"); d.Type == gjson.String {
				fn["description"] = d.Str
			}
			if p := t.Get("parameters"); p.IsObject() {
				fn["parameters"] = json.RawMessage(p.Raw)
			} else {
				fn["parameters"] = map[string]any{"type": "object", "properties": map[string]any{}}
			}
			if s := t.Get("strict"); s.Type == gjson.True {
				fn["strict"] = true
			}
			out = append(out, map[string]any{"type": "function", "function": fn})
		case "custom":
			name := namespaced(ns, t.Get("name").Str)
			desc := t.Get("description").Str
			if def := t.Get("format.definition").Str; def != "" {
				desc += "\n\nFormat (" + t.Get("format.syntax").Str + "):\n" + def
			}
			out = append(out, map[string]any{"type": "function", "function": map[string]any{
				"name": name, "description": desc,
				"parameters": map[string]any{"type": "object", "required": []string{"content"},
					"properties": map[string]any{"content": map[string]any{"type": "string", "description": "The " + name + " input, in its format"}}},
			}})
		}
	}
	tools.ForEach(func(_, t gjson.Result) bool { conv("", t); return true })
	return out
}

// customInput is a custom tool call's input: the "content" the model
// gave, or its arguments as they are when they are not such an object.
func customInput(args string) string {
	if c := gjson.Get(args, "content"); c.Type == gjson.String && gjson.Valid(args) {
		return c.Str
	}
	return args
}

// hostedCall reports whether an input item type is the call (or output)
// of a tool only OpenAI runs: a chat model has no place for it.
func hostedCall(typ string) bool {
	switch typ {
	case "web_search_call", "file_search_call", "computer_call", "computer_call_output", "image_generation_call",
		"code_interpreter_call", "local_shell_call", "local_shell_call_output", "mcp_call", "mcp_list_tools",
		"mcp_approval_request", "mcp_approval_response":
		return true
	}
	return false
}

// toolOf is the tool a chat tool call names; a name the request did not
// declare stands for a function of that name.
func toolOf(tools map[string]tool, chatName string) tool {
	if t, ok := tools[chatName]; ok {
		return t
	}
	return tool{name: chatName}
}

// idPrefix is the output item id prefix of a call of t.
func (t tool) idPrefix() string {
	if t.custom {
		return "ctc"
	}
	return "fc"
}

// toolCallItem is the output item of a call of t: a function call (with
// its namespace), or a custom tool call with its input.
func toolCallItem(t tool, id, status, callID, args string) map[string]any {
	if t.custom {
		input := ""
		if status == "completed" {
			input = customInput(args)
		}
		it := map[string]any{"id": id, "type": "custom_tool_call", "status": status, "call_id": callID, "name": t.name, "input": input}
		if t.namespace != "" {
			it["namespace"] = t.namespace
		}
		return it
	}
	it := functionCallItem(id, status, callID, t.name, args)
	if t.namespace != "" {
		it["namespace"] = t.namespace
	}
	return it
}
