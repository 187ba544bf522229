package secrets

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sluice-gw/sluice/shared/app"
	"github.com/sluice-gw/sluice/shared/providers/bedrock/bedrocktest"
	"github.com/sluice-gw/sluice/shared/providers/vertex/vertextest"
	"github.com/sluice-gw/sluice/test/ddblocal"
	"github.com/sluice-gw/sluice/test/sqslocal"
)

func TestMain(m *testing.M) { os.Exit(sqslocal.With(func() int { return ddblocal.Main(m) })) }

// canaries are the secrets of one run: random, so that no other text can
// hold a window of one by chance.
type canaries struct {
	master, openai, azure, anthropic, awsSecret, awsToken, gemini, urlPassword, bad string
	stored, storedEnv                                                               string // a stored model's key, inline and through os.environ/
	vertexCreds                                                                     string // a Vertex AI service account's JSON key (set by startUpstreams' account)
	callback                                                                        string // a team callback's credential (callback_vars), stored sealed
}

func randString(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		x, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			panic(err)
		}
		b[i] = alphabet[x.Int64()]
	}
	return string(b)
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func newCanaries() canaries {
	return canaries{
		master:      "sk-master-" + randString(alnum, 32),
		openai:      "sk-proj-" + randString(alnum, 48),
		azure:       randString("0123456789abcdef", 32), // Azure keys are 32 hex digits, no prefix
		anthropic:   "sk-ant-api03-" + randString(alnum, 40),
		awsSecret:   randString(alnum, 20) + "/" + randString(alnum, 9) + "+" + randString(alnum, 9),
		awsToken:    "IQoJb3JpZ2luX2Vj" + randString(alnum, 30) + "/" + randString(alnum, 20) + "+" + randString(alnum, 10) + "==",
		gemini:      "AIza" + randString(alnum, 35),
		urlPassword: "pw" + randString(alnum, 30),
		bad:         "sk-bad-" + randString(alnum, 32),
		stored:      "sk-stored-" + randString(alnum, 40),
		storedEnv:   "sk-stored-env-" + randString(alnum, 40),
		callback:    "sk-lf-" + randString(alnum, 40),
	}
}

func (c canaries) register(r *Recorder) {
	r.Secret("master key", c.master, "")
	r.Secret("OpenAI key", c.openai, "")
	r.Secret("Azure key", c.azure, "")
	r.Secret("Anthropic key", c.anthropic, "")
	r.Secret("AWS secret access key", c.awsSecret, "")
	r.Secret("AWS session token", c.awsToken, "")
	r.Secret("Gemini key", c.gemini, "")
	r.Secret("password in an api_base URL", c.urlPassword, "")
	r.Secret("a wrong key a client sent", c.bad, "")
	r.Secret("a stored model's key", c.stored, "")
	r.Secret("a stored model's key through os.environ/", c.storedEnv, "")
	r.Secret("a team callback's secret (callback_vars)", c.callback, "")
}

// env is what os.environ/NAME in the config resolves to.
func (c canaries) env() map[string]string {
	return map[string]string{
		"SECRETS_MASTER": c.master, "SECRETS_OPENAI_KEY": c.openai,
		"SECRETS_ANTHROPIC_KEY": c.anthropic, "SECRETS_AWS_SECRET": c.awsSecret,
		"SECRETS_STORED_ENV": c.storedEnv, "SECRETS_VERTEX_CREDENTIALS": c.vertexCreds,
	}
}

var bedrockFaults = []bedrocktest.Fault{bedrocktest.Throttle, bedrocktest.AccessDenied, bedrocktest.BreakAfterContent, bedrocktest.ThrottleFirstFrame}

// upstreams are the fakes every gateway of the test calls.
type upstreams struct {
	hostile string            // OpenAI, Azure and Anthropic, /m/<mode>
	bedrock map[string]string // mode -> hostile Bedrock runtime
	faults  map[bedrocktest.Fault]string
	// vertex is the service account of the vertex_ai/ deployments (its
	// token endpoint verifies and issues); vertexEcho's endpoint refuses
	// every assertion, quoting it and the private key.
	vertex, vertexEcho *vertextest.Account
}

func startUpstreams(t *testing.T) *upstreams {
	u := &upstreams{hostile: hostile(t).URL, bedrock: map[string]string{}, faults: map[bedrocktest.Fault]string{},
		vertex: vertextest.NewAccount(t), vertexEcho: vertextest.NewAccount(t)}
	u.vertexEcho.EchoFailure(400)
	for _, m := range modes {
		u.bedrock[m] = hostileBedrock(t, m).URL
	}
	for _, f := range bedrockFaults {
		s := bedrocktest.New("fake")
		s.SetFault(f)
		t.Cleanup(s.Close)
		u.faults[f] = s.URL
	}
	return u
}

func faultName(f bedrocktest.Fault) string {
	return strings.ReplaceAll(strings.Fields(string(f))[0], ":", "") + fmt.Sprint(len(f))
}

// config is the LiteLLM config: every provider in every mode, keys inline
// and through os.environ/, an unimplemented provider with a key, and the
// master key through os.environ/.
func (u *upstreams) config(c canaries) string {
	var b strings.Builder
	b.WriteString("model_list:\n")
	for _, m := range modes {
		fmt.Fprintf(&b, "  - model_name: openai-%s\n    litellm_params: {model: openai/gpt-4o-mini, api_base: %q, api_key: os.environ/SECRETS_OPENAI_KEY}\n", m, u.hostile+"/m/"+m+"/v1")
		fmt.Fprintf(&b, "  - model_name: azure-%s\n    litellm_params: {model: azure/gpt4o-deployment, api_base: %q, api_key: %q, api_version: \"2024-10-21\"}\n", m, u.hostile+"/m/"+m, c.azure)
		fmt.Fprintf(&b, "  - model_name: anthropic-%s\n    litellm_params: {model: anthropic/claude-3-5-haiku-20241022, api_base: %q, api_key: os.environ/SECRETS_ANTHROPIC_KEY}\n", m, u.hostile+"/m/"+m)
		fmt.Fprintf(&b, "  - model_name: bedrock-%s\n    litellm_params: {model: bedrock/converse/anthropic.claude-3-haiku-20240307-v1:0, api_base: %q, aws_region_name: us-east-1, aws_access_key_id: AKIAIOSFODNN7EXAMPLE, aws_secret_access_key: os.environ/SECRETS_AWS_SECRET, aws_session_token: %q}\n", m, u.bedrock[m], c.awsToken)
		vertexBase := u.hostile + "/m/" + m + "/v1/projects/p1/locations/us-east5/publishers/"
		fmt.Fprintf(&b, "  - model_name: vertex-%s\n    litellm_params: {model: vertex_ai/claude-3-5-haiku@20241022, api_base: %q, vertex_credentials: os.environ/SECRETS_VERTEX_CREDENTIALS}\n", m, vertexBase+"anthropic/models/claude-3-5-haiku@20241022")
		fmt.Fprintf(&b, "  - model_name: vertexgemini-%s\n    litellm_params: {model: vertex_ai/gemini-2.5-flash, api_base: %q, vertex_credentials: os.environ/SECRETS_VERTEX_CREDENTIALS}\n", m, vertexBase+"google/models/gemini-2.5-flash")
		fmt.Fprintf(&b, "  - model_name: gemini-%s\n    litellm_params: {model: gemini/gemini-2.5-flash, api_base: %q, api_key: %q}\n", m, u.hostile+"/m/"+m+"/v1beta", c.gemini)
	}
	for _, f := range bedrockFaults {
		fmt.Fprintf(&b, "  - model_name: bedrock-%s\n    litellm_params: {model: bedrock/converse/anthropic.claude-3-haiku-20240307-v1:0, api_base: %q, aws_region_name: us-east-1, aws_access_key_id: AKIAIOSFODNN7EXAMPLE, aws_secret_access_key: os.environ/SECRETS_AWS_SECRET, aws_session_token: %q}\n", faultName(f), u.faults[f], c.awsToken)
	}
	for _, m := range []string{"ok", "e401", "text500"} {
		fmt.Fprintf(&b, "  - model_name: embed-%s\n    litellm_params: {model: openai/text-embedding-3-small, api_base: %q, api_key: os.environ/SECRETS_OPENAI_KEY}\n", m, u.hostile+"/m/"+m+"/v1")
	}
	// Credentials in the URL (an OpenAI-compatible server behind basic auth).
	fmt.Fprintf(&b, "  - model_name: userinfo-ok\n    litellm_params: {model: hosted_vllm/llama, api_base: %q, api_key: none}\n", strings.Replace(u.hostile, "http://", "http://svc:"+c.urlPassword+"@", 1)+"/m/ok/v1")
	fmt.Fprintf(&b, "  - model_name: unimplemented\n    litellm_params: {model: cohere/command-r, api_key: %q}\n", c.gemini)
	// A token endpoint that refuses the key, quoting the signed assertion.
	fmt.Fprintf(&b, "  - model_name: vertex-tokenfail\n    litellm_params: {model: vertex_ai/claude-sonnet-4-5, vertex_project: p1, vertex_location: global, vertex_credentials: %s}\n", jsonString(u.vertexEcho.JSON))
	b.WriteString("router_settings: {num_retries: 1}\ngeneral_settings:\n  master_key: os.environ/SECRETS_MASTER\n  store_model_in_db: true\n")
	return b.String()
}

// response is what a client received.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) bytes() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", r.status)
	_ = r.header.Write(&b)
	b.WriteString("\n")
	b.Write(r.body)
	return b.Bytes()
}

// cbTeam is the team drive gives a logging callback with a credential.
const cbTeam = "t-cb"

// drive runs the scenario matrix against tg, recording every response,
// and checks that the scenarios did what they are meant to (else the
// search would prove nothing).
func drive(t *testing.T, rec *Recorder, tg target, c canaries, u *upstreams) {
	t.Helper()
	x := func(name, method, path, key, body string) response {
		r := tg.do(method, path, key, body)
		rec.Record(tg.name+": "+name, r.bytes())
		return r
	}
	want := func(r response, status int, what string) {
		t.Helper()
		if r.status != status {
			t.Errorf("%s: %s: status %d, want %d: %.300s", tg.name, what, r.status, status, r.body)
		}
	}
	newKey := func(name, body string) string {
		r := x(name, "POST", "/key/generate", c.master, body)
		want(r, 200, name)
		k := gjson.GetBytes(r.body, "key").String()
		if !strings.HasPrefix(k, "sk-") {
			t.Fatalf("%s: %s: no key in %s", tg.name, name, r.body)
		}
		rec.Secret("virtual key ("+tg.name+" "+name+")", k, tg.name+": "+name)
		return k
	}

	// The admin API.
	x("health", "GET", "/health", "", "")
	want(x("team/new", "POST", "/team/new", c.master, `{"team_id":"t1","team_alias":"team one"}`), 200, "team/new")
	want(x("user/new", "POST", "/user/new", c.master, `{"user_id":"u1","user_email":"u1@example.com"}`), 200, "user/new")
	keyA := newKey("key/generate A", `{"key_alias":"alias-a","metadata":{"note":"n"},"team_id":"t1","user_id":"u1"}`)
	// Few fixed characters: a window (12 characters) of "sk-chosen-" and
	// two random ones was shared by two targets' keys once in 3,844 pairs
	// and flagged as a leak between them.
	chosen := "sk-c" + randString(alnum, 40)
	keyB := newKey("key/generate B (chosen secret)", `{"key":"`+chosen+`","key_alias":"alias-b"}`)
	if keyB != chosen {
		t.Errorf("%s: the chosen key was not kept", tg.name)
	}
	want(x("key/info ?key=A", "GET", "/key/info?key="+keyA, c.master, ""), 200, "key/info")
	want(x("key/info own", "GET", "/key/info", keyA, ""), 200, "key/info own")
	want(x("key/list", "GET", "/key/list", c.master, ""), 200, "key/list")
	x("key/list full", "GET", "/key/list?return_full_object=true", c.master, "")
	want(x("key/update", "POST", "/key/update", c.master, `{"key":"`+keyA+`","max_budget":100}`), 200, "key/update")
	r := x("key/regenerate B", "POST", "/key/regenerate", c.master, `{"key":"`+keyB+`"}`)
	want(r, 200, "key/regenerate")
	keyB2 := gjson.GetBytes(r.body, "key").String()
	rec.Secret("virtual key ("+tg.name+" regenerated B)", keyB2, tg.name+": key/regenerate B")
	x("key/{key}/regenerate of a wrong key", "POST", "/key/"+c.bad+"/regenerate", c.master, `{}`)
	x("key/info ?key=wrong", "GET", "/key/info?key="+c.bad, c.master, "")
	x("key/update wrong", "POST", "/key/update", c.master, `{"key":"`+c.bad+`","max_budget":1}`)
	x("key/delete wrong", "POST", "/key/delete", c.master, `{"keys":["`+c.bad+`"]}`)
	x("key/generate bad JSON", "POST", "/key/generate", c.master, `{"key_alias":`)
	x("key/generate unknown field", "POST", "/key/generate", c.master, `{"no_such_field":1}`)
	x("key/generate short chosen", "POST", "/key/generate", c.master, `{"key":"sk-1"}`)
	x("key/list wrong master", "GET", "/key/list", c.bad, "")
	x("key/generate by a virtual key", "POST", "/key/generate", keyA, `{}`)
	x("key/list by a virtual key", "GET", "/key/list", keyA, "")
	want(x("model/info", "GET", "/model/info", c.master, ""), 200, "model/info")
	x("v1/model/info by a virtual key", "GET", "/v1/model/info", keyA, "")
	x("team/info", "GET", "/team/info?team_id=t1", c.master, "")
	// A team's logging callback with a credential (no call of the team is
	// made: nothing is delivered); cbTeam's stored record is searched too.
	want(x("team/new "+cbTeam, "POST", "/team/new", c.master, `{"team_id":"`+cbTeam+`"}`), 200, "team/new "+cbTeam)
	want(x("team/{id}/callback", "POST", "/team/"+cbTeam+"/callback", c.master, `{"callback_name":"langfuse","callback_vars":{"langfuse_public_key":"pk-lf-1","langfuse_secret_key":"`+c.callback+`","langfuse_host":"http://127.0.0.1:9"}}`), 200, "team callback")
	want(x("team/{id}/callback GET", "GET", "/team/"+cbTeam+"/callback", c.master, ""), 200, "team callback GET")
	x("team/info "+cbTeam, "GET", "/team/info?team_id="+cbTeam, c.master, "")
	x("team/list", "GET", "/team/list", c.master, "")
	x("user/info", "GET", "/user/info?user_id=u1", c.master, "")

	// Chats and embeddings, each provider in each mode, streamed and not.
	for _, p := range []string{"openai", "azure", "anthropic", "bedrock", "gemini", "vertex", "vertexgemini"} {
		for _, m := range modes {
			for _, stream := range []bool{false, true} {
				body := fmt.Sprintf(`{"model":"%s-%s","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, p, m, stream)
				r := x(fmt.Sprintf("chat %s-%s stream=%t", p, m, stream), "POST", "/v1/chat/completions", keyA, body)
				switch {
				case m == "ok":
					want(r, 200, p+" ok")
				case m == "e401" && r.status == 200:
					t.Errorf("%s: %s e401 answered 200", tg.name, p)
				case (m == "midstream" || m == "cut") && stream:
					want(r, 200, p+" "+m)
				}
			}
		}
	}
	for _, f := range bedrockFaults {
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(`{"model":"bedrock-%s","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, faultName(f), stream)
			x(fmt.Sprintf("chat bedrock fault %q stream=%t", f, stream), "POST", "/v1/chat/completions", keyA, body)
		}
	}
	for _, m := range []string{"ok", "e401", "text500"} {
		x("embeddings "+m, "POST", "/v1/embeddings", keyA, `{"model":"embed-`+m+`","input":"hi"}`)
	}
	for _, stream := range []bool{false, true} {
		r := x(fmt.Sprintf("chat vertex-tokenfail stream=%t", stream), "POST", "/v1/chat/completions", keyA, fmt.Sprintf(`{"model":"vertex-tokenfail","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, stream))
		want(r, 502, "vertex token refused")
	}
	want(x("chat api_base with a password", "POST", "/v1/chat/completions", keyA, `{"model":"userinfo-ok","messages":[{"role":"user","content":"hi"}]}`), 200, "api_base with a password")
	x("chat unimplemented provider", "POST", "/v1/chat/completions", keyA, `{"model":"unimplemented","messages":[{"role":"user","content":"hi"}]}`)
	x("chat master key", "POST", "/v1/chat/completions", c.master, `{"model":"openai-e401","messages":[{"role":"user","content":"hi"}]}`)
	want(x("chat regenerated key", "POST", "/v1/chat/completions", keyB2, `{"model":"openai-ok","messages":[{"role":"user","content":"hi"}]}`), 200, "regenerated key")
	want(x("chat old secret of a regenerated key", "POST", "/v1/chat/completions", keyB, `{"model":"openai-ok","messages":[{"role":"user","content":"hi"}]}`), 401, "old secret")
	want(x("chat wrong key", "POST", "/v1/chat/completions", c.bad, `{"model":"openai-ok","messages":[{"role":"user","content":"hi"}]}`), 401, "wrong key")
	x("chat no key", "POST", "/v1/chat/completions", "", `{"model":"openai-ok","messages":[{"role":"user","content":"hi"}]}`)
	x("chat bad JSON", "POST", "/v1/chat/completions", keyA, `{"model":`)
	x("chat unknown model", "POST", "/v1/chat/completions", keyA, `{"model":"no-such-model","messages":[]}`)
	x("chat bad messages", "POST", "/v1/chat/completions", keyA, `{"model":"openai-ok","messages":"`+c.bad+`"}`)
	x("models", "GET", "/v1/models", keyA, "")
	x("models wrong key", "GET", "/v1/models", c.bad, "")
	x("spend/logs", "GET", "/spend/logs", c.master, "")
	x("global/spend/report", "GET", "/global/spend/report", c.master, "")
	if tg.http {
		want(x("metrics", "GET", "/metrics", c.master, ""), 200, "metrics")
		x("metrics wrong key", "GET", "/metrics", c.bad, "")
	}

	// Stored models (store_model_in_db): their keys are sealed in the store
	// and shown by no answer, log line or error, inline or through
	// os.environ/, against upstreams that echo them.
	for _, m := range []string{"ok", "e401", "midstream"} {
		body := fmt.Sprintf(`{"model_name":"stored-%s","litellm_params":{"model":"openai/gpt-4o-mini","api_base":%q,"api_key":%q},"model_info":{"id":"stored-%s"}}`, m, u.hostile+"/m/"+m+"/v1", c.stored, m)
		want(x("model/new stored-"+m, "POST", "/model/new", c.master, body), 200, "model/new")
		for _, stream := range []bool{false, true} {
			r := x(fmt.Sprintf("chat stored-%s stream=%t", m, stream), "POST", "/v1/chat/completions", keyA, fmt.Sprintf(`{"model":"stored-%s","stream":%t,"messages":[{"role":"user","content":"hi"}]}`, m, stream))
			if m == "ok" {
				want(r, 200, "chat stored-ok")
			}
		}
	}
	want(x("model/update stored-ok", "POST", "/model/update", c.master, `{"model_info":{"id":"stored-ok"},"litellm_params":{"api_key":"os.environ/SECRETS_STORED_ENV","rpm":100}}`), 200, "model/update")
	want(x("chat stored-ok via os.environ", "POST", "/v1/chat/completions", keyA, `{"model":"stored-ok","messages":[{"role":"user","content":"hi"}]}`), 200, "chat stored-ok env")
	want(x("model/{id}/update stored-e401", "PATCH", "/model/stored-e401/update", c.master, `{"litellm_params":{"api_key":"os.environ/SECRETS_STORED_ENV"}}`), 200, "PATCH model")
	x("chat stored-e401 via os.environ", "POST", "/v1/chat/completions", keyA, `{"model":"stored-e401","messages":[{"role":"user","content":"hi"}]}`)
	x("model/update bad value", "POST", "/model/update", c.master, `{"model_info":{"id":"stored-ok"},"litellm_params":{"rpm":"lots"}}`)
	x("model/new duplicate", "POST", "/model/new", c.master, fmt.Sprintf(`{"model_name":"x","litellm_params":{"model":"openai/x","api_key":%q},"model_info":{"id":"stored-ok"}}`, c.stored))
	want(x("model/info with stored", "GET", "/model/info", c.master, ""), 200, "model/info")
	want(x("v2/model/info", "GET", "/v2/model/info", c.master, ""), 200, "v2/model/info")
	x("v2/model/info by a virtual key", "GET", "/v2/model/info?modelId=stored-ok", keyA, "")
	want(x("model/delete stored-midstream", "POST", "/model/delete", c.master, `{"id":"stored-midstream"}`), 200, "model/delete")

	// Deleting a key, then using it.
	want(x("key/delete A", "POST", "/key/delete", c.master, `{"keys":["`+keyA+`"]}`), 200, "key/delete")
	want(x("chat deleted key", "POST", "/v1/chat/completions", keyA, `{"model":"openai-ok","messages":[{"role":"user","content":"hi"}]}`), 401, "deleted key")
	x("key/info deleted", "GET", "/key/info?key="+keyA, c.master, "")
}

// TestNoSecretLeaves drives every way of serving the gateway and searches
// all it said for the secrets.
func TestNoSecretLeaves(t *testing.T) {
	c := newCanaries()
	u := startUpstreams(t)
	c.vertexCreds = u.vertex.JSON
	rec := &Recorder{}
	c.register(rec)
	rec.Secret("Vertex service account's private key", strings.Join(strings.Fields(strings.NewReplacer("-----BEGIN PRIVATE KEY-----", "", "-----END PRIVATE KEY-----", "").Replace(u.vertex.PEM)), ""), "")

	// Control: the hostile upstream does put the keys in its answers, and
	// the search finds them there (so an empty result means something).
	control := "control: the hostile upstream's own answer"
	req, _ := http.NewRequest("POST", u.hostile+"/m/e401/v1/chat/completions", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+c.openai)
	req.Header.Set("X-Amz-Security-Token", c.awsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rec.Record(control, b)

	stores := []string{app.StoreMemory}
	if !testing.Short() {
		stores = append(stores, app.StoreDynamoDB)
	}
	type variant struct {
		store               string
		lambda, fromSecrets bool
	}
	var variants []variant
	for _, store := range stores {
		for _, lambda := range []bool{false, true} {
			variants = append(variants, variant{store, lambda, false})
		}
	}
	// The keys from Secrets Manager (moto): the reads at start, and the
	// re-read each provider's 401 for a secret's key starts.
	variants = append(variants, variant{app.StoreMemory, false, true}, variant{app.StoreMemory, true, true})
	for _, v := range variants {
		store, lambda := v.store, v.lambda
		{
			name := store + "/local-http"
			if lambda {
				name = store + "/lambda"
			}
			if v.fromSecrets {
				name = "secrets-manager/" + name
			}
			t.Run(name, func(t *testing.T) {
				logs := &syncBuffer{}
				gw := build(t, c, u, store, lambda, v.fromSecrets, logs)
				var tg target
				if lambda {
					tg = lambdaTarget(t, name, gw, logs)
				} else {
					tg = httpTarget(t, name, serveLocal(t, gw))
				}
				drive(t, rec, tg, c, u)
				if team, err := gw.Keys.GetTeam(context.Background(), cbTeam); err != nil {
					t.Errorf("%s: %v", cbTeam, err)
				} else {
					rec.Record(name+": the stored record of "+cbTeam, team.Metadata)
				}
				if err := gw.Close(context.Background()); err != nil { // the spend still queued
					t.Errorf("close: %v", err)
				}
				rec.Record(name+": logs", logs.Bytes())
				if !bytes.Contains(logs.Bytes(), []byte(`"level":"DEBUG"`)) && !bytes.Contains(logs.Bytes(), []byte(`"level":"INFO"`)) {
					t.Errorf("%s: no log lines captured", name)
				}
			})
		}
	}
	t.Run("process/local-http", func(t *testing.T) { runProcess(t, rec, u, c) })

	if path := os.Getenv("SECRETS_DUMP"); path != "" { // everything searched, to read
		if err := os.WriteFile(path, rec.dump(), 0o600); err != nil {
			t.Error(err)
		}
	}
	// The access tokens issued and the assertions signed during the run.
	for _, a := range []*vertextest.Account{u.vertex, u.vertexEcho} {
		for i, tok := range a.Issued() {
			rec.Secret(fmt.Sprintf("Vertex access token %d", i), tok, "")
		}
		for i, as := range a.Assertions() {
			rec.Secret(fmt.Sprintf("signed JWT assertion %d", i), as, "")
		}
	}
	if len(u.vertex.Issued()) == 0 || len(u.vertexEcho.Assertions()) == 0 || len(u.vertex.Refused()) != 0 {
		t.Errorf("the Vertex token endpoints saw %d exchanges (refused %v) and %d refused assertions: the Vertex scenarios did not run", len(u.vertex.Issued()), u.vertex.Refused(), len(u.vertexEcho.Assertions()))
	}
	leaks := rec.Scan()
	var controlled bool
	var found []string
	for _, l := range leaks {
		if l.Exchange == control {
			controlled = true
			continue
		}
		found = append(found, l.String())
	}
	if !controlled {
		t.Errorf("the control exchange, which holds the OpenAI key and the session token, was not flagged: the search is broken")
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
	t.Logf("searched %d exchanges for the secrets", rec.Len())
}
