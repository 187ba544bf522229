package stack_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// story is the user's story, step by step, against the running functions:
// LiteLLM's admin API for a team and a key, the OpenAI API with that key,
// the spend through the queue, and the reports.
type story struct {
	s   *stack
	fns map[string]*function
	m   *mapping

	master  string
	teamID  string
	key     string   // the virtual key's secret
	callIDs []string // x-litellm-call-id of each gateway request with the key
	poison  string   // body of the poison message
}

func (s *stack) story(t *testing.T, fns map[string]*function, m *mapping) {
	st := &story{s: s, fns: fns, m: m, master: s.masterKey(t)}
	// Each step runs even when an earlier one failed, as far as it can, so
	// that one broken part does not hide the state of the others.
	t.Run("admin health", st.adminHealth)
	t.Run("team new", st.teamNew)
	t.Run("key generate", st.keyGenerate)
	t.Run("gateway chat with the key", st.chat)
	t.Run("gateway stream with the key", st.stream)
	t.Run("spend events queued", st.spendQueued)
	t.Run("spend consumed", st.consume)
	t.Run("poison message in the dead-letter queue", st.deadLetter)
	t.Run("key info reports the spend", st.keyInfo)
	t.Run("spend logs have the requests", st.spendLogs)
	t.Run("model new, served by the gateway", st.storedModel) // last: its call's spend is not counted above
}

// --- the steps

// adminHealth: the admin function starts with the master key read from
// moto's SSM and answers its health check (events/admin-health.json).
func (st *story) adminHealth(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", "admin-health.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := buffered(t, st.fns["admin"].invoke(t, b))
	if r.status != 200 {
		t.Fatalf("health: %d %s", r.status, r.body)
	}
}

func (st *story) teamNew(t *testing.T) {
	r := st.admin(t, "POST", "/team/new", "", map[string]any{"team_alias": "stack-test-team", "models": []string{"gpt-4o-mini"}})
	if r.status != 200 {
		t.Fatalf("/team/new: %d %s", r.status, r.body)
	}
	var out struct {
		TeamID string `json:"team_id"`
	}
	decodeJSON(t, r, &out)
	if out.TeamID == "" {
		t.Fatalf("/team/new answered no team_id: %s", r.body)
	}
	st.teamID = out.TeamID
}

// keyGenerate sends events/admin-key-generate.json's body, in the team.
func (st *story) keyGenerate(t *testing.T) {
	body := eventBody(t, "admin-key-generate.json")
	body["key_alias"] = "stack-test-key"
	if st.teamID != "" {
		body["team_id"] = st.teamID
	} else {
		t.Log("no team (team new failed): generating a key without one")
	}
	r := st.admin(t, "POST", "/key/generate", "", body)
	if r.status != 200 {
		t.Fatalf("/key/generate: %d %s", r.status, r.body)
	}
	var out struct {
		Key    string `json:"key"`
		TeamID string `json:"team_id"`
	}
	decodeJSON(t, r, &out)
	if !strings.HasPrefix(out.Key, "sk-") {
		t.Fatalf("/key/generate answered no sk- key: %s", r.body)
	}
	if st.teamID != "" && out.TeamID != st.teamID {
		t.Errorf("the key is in team %q, want %q", out.TeamID, st.teamID)
	}
	st.key = out.Key
}

func (st *story) needKey(t *testing.T) {
	t.Helper()
	if st.key == "" {
		t.Fatal("no virtual key: /key/generate failed (see above)")
	}
}

// chat sends events/gateway-chat.json with the virtual key.
func (st *story) chat(t *testing.T) {
	st.needKey(t)
	r := streamed(t, st.fns["gateway"].invoke(t, urlEvent(t, "gateway-chat.json", "POST", "/v1/chat/completions", "", st.key, eventBody(t, "gateway-chat.json"))))
	if r.status != 200 {
		t.Fatalf("chat: %d %s", r.status, truncate(r.body))
	}
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	decodeJSON(t, r, &c)
	if c.Object != "chat.completion" || len(c.Choices) == 0 || c.Choices[0].Message.Content == "" || c.Usage.TotalTokens == 0 {
		t.Errorf("not a chat.completion with usage: %s", truncate(r.body))
	}
	if cost, err := strconv.ParseFloat(r.header("x-litellm-response-cost"), 64); err != nil || cost <= 0 {
		t.Errorf("x-litellm-response-cost %q: want a cost > 0", r.header("x-litellm-response-cost"))
	}
	st.noteCall(t, r)
}

// stream sends events/gateway-chat-stream.json with the virtual key.
func (st *story) stream(t *testing.T) {
	st.needKey(t)
	r := streamed(t, st.fns["gateway"].invoke(t, urlEvent(t, "gateway-chat-stream.json", "POST", "/v1/chat/completions", "", st.key, eventBody(t, "gateway-chat-stream.json"))))
	if r.status != 200 || !strings.HasPrefix(r.header("content-type"), "text/event-stream") {
		t.Fatalf("stream: %d %s %s", r.status, r.header("content-type"), truncate(r.body))
	}
	var data []string
	for _, line := range strings.Split(string(r.body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) < 2 || data[len(data)-1] != "[DONE]" {
		t.Errorf("not an SSE stream ending in [DONE]: %s", truncate(r.body))
	}
	st.noteCall(t, r)
}

func (st *story) noteCall(t *testing.T, r *httpResult) {
	t.Helper()
	id := r.header("x-litellm-call-id")
	if id == "" {
		t.Error("no x-litellm-call-id")
		return
	}
	st.callIDs = append(st.callIDs, id)
}
