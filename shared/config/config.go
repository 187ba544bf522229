// Package config loads a LiteLLM proxy config file (model_list, router_settings,
// litellm_settings, general_settings) into typed, validated structs.
//
// Loading is strict about values and lenient about keys: a bad value fails
// with its path and line ("model_list[2].litellm_params.rpm (line 14): must
// be a whole number"); a key the gateway does not support is kept out and
// reported once as a warning, never silently dropped and never fatal. An
// entry LiteLLM loads but the gateway cannot call (an unknown provider, no
// model name, no api_base) is a warning too, and left out of routing.
package config

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-gw/sluice/shared/catalog"
	"github.com/sluice-gw/sluice/shared/pricing"
)

// Config is a loaded, validated gateway configuration.
type Config struct {
	Deployments []*Deployment // every deployment of model_list, in file order
	Router      RouterSettings
	General     GeneralSettings
	Callbacks   Callbacks // litellm_settings' logging callbacks (callbacks.go)
	Warnings    []Warning // unsupported or ignored keys, missing env vars, left-out deployments
	// ModerationDefault serves a moderation request whose model no group
	// serves (or that names none), as LiteLLM sends it to OpenAI's
	// /moderations with OPENAI_API_KEY (moderation.go); nil when that
	// variable is not set.
	ModerationDefault *Deployment
	// AccessGroups maps each model access group (model_info.access_groups)
	// to the model groups whose deployments name it, in file order; nil
	// when no deployment names one.
	AccessGroups map[string][]string
}

// Warning is something the operator should know about a loaded config.
type Warning struct {
	Path    string // e.g. "general_settings.database_url"
	Line    int
	Message string

	price bool // added by ResolvePrices
}

func (w Warning) String() string {
	if w.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", w.Path, w.Line, w.Message)
	}
	return fmt.Sprintf("%s: %s", w.Path, w.Message)
}

// Deployment is one entry of model_list: a concrete provider model behind a
// model group.
type Deployment struct {
	ID          string // model_info.id, or a stable hash of the entry
	ModelName   string // the model group (model_name)
	Provider    string // "openai", "azure", "mock", ...
	Model       string // the provider's model name (litellm_params.model without the provider prefix)
	Protocol    Protocol
	Implemented bool // false: reported at load and left out of routing
	// AnyProvider: litellm_params.model is a bare "*": each request's
	// model names its provider (ForModel, anyprovider.go).
	AnyProvider bool
	variants    map[string]*Deployment // by provider, for AnyProvider
	// Unusable says why an entry LiteLLM would load is left out of routing
	// (an unknown provider, no model name, no api_base); "" for a provider
	// not implemented yet. Requests to its group get it as their error.
	Unusable string
	APIBase  string // base URL, without trailing slash
	APIKey   string `json:"-"` // resolved secret; never logged (Key: its current value)
	// APIKeyEnv names the variable api_key was read from (os.environ/NAME,
	// or Azure's AZURE_API_KEY); "" for a key written in the config.
	APIKeyEnv string
	// key, when bound (BindKey), holds the current value of a key that may
	// rotate (a secret re-read); shared by copies of the deployment.
	key        *atomic.Pointer[string]
	APIVersion string // Azure api-version
	// AWS holds the Bedrock deployment's aws_* params (region, explicit
	// credentials, a role to assume); empty: the default chain and region.
	AWS AWSParams
	// Vertex holds a Vertex AI deployment's vertex_* params (vertex.go).
	Vertex        VertexParams
	Timeout       time.Duration
	StreamTimeout time.Duration
	// NumRetries is litellm_params.num_retries: the retries of a failure
	// of this deployment, when NumRetriesSet (else the router's).
	NumRetries    int
	NumRetriesSet bool
	// MockTimeout (litellm_params.mock_timeout): every call waits the
	// deployment's timeout, then fails as a timeout, without calling the
	// provider (LiteLLM's test switch).
	MockTimeout bool
	RPM, TPM    int64
	// MaxParallel bounds the deployment's requests in flight across every
	// instance (litellm_params.max_parallel_requests); nil: none, 0: none
	// admitted (every request goes to another deployment).
	MaxParallel *int64
	Weight      float64
	HasWeight   bool // weight was set (simple-shuffle decides by the first candidate)
	Order       int  // lower is tried first; 0 = unset
	Blocked     bool
	// Stored: added through the admin API (store_model_in_db), not the
	// config file; /model/info shows it as LiteLLM's db_model.
	Stored bool
	Tags   []string
	// AccessGroups are model_info.access_groups: names a key, team or user
	// may list in its models to call this deployment's model group.
	AccessGroups []string
	// Region is where the deployment runs, as an end user's
	// allowed_model_region names it ("eu", "us"): litellm_params.region_name,
	// else derived from aws_region_name (Bedrock) or the api_base host
	// (Azure); "" when unknown.
	Region string
	// MaxInputTokens is the context window used by pre-call checks (0 =
	// unknown); filled from the price table when the config sets none.
	MaxInputTokens int
	// MockResponse, when set, answers without calling the provider (LiteLLM's
	// mock_response): a reply text, or an error name such as
	// "litellm.RateLimitError".
	MockResponse *string
	// Prices set in the config (litellm_params, or model_info), in USD per
	// token: input_cost_per_token, output_cost_per_token,
	// cache_read_input_token_cost (or input_cost_per_token_cache_hit) and
	// cache_creation_input_token_cost. PriceSet says any of them was set: an
	// explicit 0 is a price (a free local model), not an unknown one.
	InputCostPerToken      float64
	OutputCostPerToken     float64
	CacheReadCostPerToken  float64
	CacheWriteCostPerToken float64
	PriceSet               bool
	// BaseModel is model_info.base_model: the model a deployment is priced
	// as (an Azure deployment's name says nothing about its model).
	BaseModel string
	// MaxOutputTokens is the model's output limit (model_info, else the
	// price table; 0 = unknown).
	MaxOutputTokens int
	// Price is the deployment's resolved price: from its own price keys,
	// else from the price table (ResolvePrices). nil: unknown, and so is the
	// cost of its calls. A wildcard deployment ("openai/*") without price
	// keys has none: its models are priced per call.
	Price *pricing.Price
	// Params are the remaining litellm_params (e.g. temperature, max_tokens),
	// set on the upstream request when the client did not send them.
	Params map[string]any
	// DropParams drops the OpenAI params a translating provider (anthropic)
	// cannot send, instead of refusing the request with a 400 naming them:
	// litellm_params.drop_params, else litellm_settings.drop_params.
	DropParams bool

	line            int  // line of litellm_params.model, for warnings
	dropParamsSet   bool // litellm_params.drop_params was set: the global one does not apply
	priceFromTable  bool // Price, MaxInputTokens, MaxOutputTokens came from a
	maxInFromTable  bool // table: replaced when another table is resolved
	maxOutFromTable bool
}

// AWSParams are LiteLLM's aws_* litellm_params of a Bedrock deployment.
type AWSParams struct {
	Region          string // aws_region_name
	AccessKeyID     string `json:"-"` // aws_access_key_id
	SecretAccessKey string `json:"-"` // aws_secret_access_key
	SessionToken    string `json:"-"` // aws_session_token
	RoleName        string // aws_role_name: a role ARN to assume with STS
	SessionName     string // aws_session_name
}

// VertexParams are LiteLLM's vertex_* litellm_params of a Vertex AI
// deployment, with the environment's defaults applied at load.
type VertexParams struct {
	Project  string // vertex_project, else VERTEXAI_PROJECT, else the credentials' project_id
	Location string // vertex_location, else VERTEXAI_LOCATION / VERTEX_LOCATION, else us-central1
	// Credentials is the service account's JSON key (vertex_credentials:
	// inline, read from the file it names, or os.environ/NAME; else
	// VERTEXAI_CREDENTIALS, else the file GOOGLE_APPLICATION_CREDENTIALS
	// names). Never logged; Creds reads its current value.
	Credentials string `json:"-"`
	// CredentialsEnv names the variable the credentials were read from
	// (os.environ/NAME); "" otherwise.
	CredentialsEnv string
	creds          *atomic.Pointer[string] // BindCredentials
}

// Creds is the service account's current JSON key: the value bound by
// BindCredentials (a secret that rotates), else Credentials.
func (v *VertexParams) Creds() string { return current(v.creds, v.Credentials) }

// BindCredentials makes Creds read p, as BindKey does for api_key.
func (v *VertexParams) BindCredentials(p *atomic.Pointer[string]) { v.creds = p }

// Protocol is the wire protocol a deployment speaks (catalog.Protocol).
type Protocol = catalog.Protocol

// The protocols, under the names the gateway and the router's tests use.
const (
	ProtocolNone      = catalog.None      // provider not implemented
	ProtocolOpenAI    = catalog.OpenAI    // OpenAI's REST API (and compatible servers)
	ProtocolAzure     = catalog.Azure     // Azure OpenAI: deployment URLs, api-version, api-key header
	ProtocolMock      = catalog.Mock      // in-process canned replies (no network)
	ProtocolAnthropic = catalog.Anthropic // Anthropic's Messages API, translated from and to OpenAI chat
	ProtocolBedrock   = catalog.Bedrock   // Amazon Bedrock's Converse API (AWS SDK, SigV4)
	ProtocolGemini    = catalog.Gemini    // Google's Gemini API (AI Studio), translated from and to OpenAI chat
	ProtocolVertex    = catalog.Vertex    // Vertex AI: Claude (rawPredict) and Gemini, OAuth from a service account
)

// RouterSettings holds router_settings merged with the routing keys of
// litellm_settings (router_settings wins where both are set).
type RouterSettings struct {
	RoutingStrategy        string
	NumRetries             int
	RetryPolicy            map[string]int            // error class -> retries (LiteLLM's RetryPolicy names)
	ModelGroupRetryPolicy  map[string]map[string]int // group -> error class -> retries
	AllowedFails           int
	AllowedFailsPolicy     map[string]int // error class -> allowed fails
	CooldownTime           time.Duration
	DisableCooldowns       bool
	Timeout                time.Duration // whole request, all attempts (bounded by the request's own deadline)
	AttemptTimeout         time.Duration // one attempt when the deployment sets none (timeout / request_timeout)
	StreamTimeout          time.Duration // until the first chunk
	RetryAfter             time.Duration // minimum wait before a retry
	MaxRetryAfter          time.Duration // cap on a provider's Retry-After we honour
	Fallbacks              []Fallback
	ContextWindowFallbacks []Fallback
	ContentPolicyFallbacks []Fallback
	DefaultFallbacks       []string
	MaxFallbacks           int
	ModelGroupAlias        map[string]string // alias -> group
	HiddenAliases          map[string]bool   // aliases not listed by /v1/models
	EnablePreCallChecks    bool
	EnableTagFiltering     bool // route by request tags (metadata.tags); off: tags are only recorded
}

// Fallback maps a model group (or a wildcard pattern such as "gpt-*") to the
// groups tried after it, in order.
type Fallback struct {
	From string
	To   []string
	at   []pos // where each of To is written (config.go's validate warns there)
}

// pos is where a value is written: its path and line.
type pos struct {
	path string
	line int
}

// GeneralSettings holds the general_settings the gateway uses.
type GeneralSettings struct {
	MasterKey string `json:"-"` // empty: the gateway is open (LiteLLM's behaviour)
	// RateLimitsFailOpen admits requests uncounted when the limits store
	// cannot answer (logged and counted); false refuses them with 503.
	RateLimitsFailOpen bool
	// StrictBudgets (strict_budgets, our extension; default false): a
	// request that a budget applies to reserves its worst-case cost in its
	// admission, so that recorded spend never passes max_budget.
	StrictBudgets bool
	// KeyManagement is where os.environ/NAME values the environment does
	// not set come from (key_management_system; keymgmt.go).
	KeyManagement KeyManagement
	// StoreModelInDB (store_model_in_db): deployments may also be added,
	// changed and deleted through the admin API's /model/* routes; they
	// live in the model store and every instance reloads them.
	StoreModelInDB bool
	// Alerting is alerting, alert_types, alert_to_webhook_url and
	// alerting_args (alerting.go): the spend consumer's budget alerts.
	Alerting Alerting
}

// Defaults as LiteLLM documents them.
const (
	DefaultNumRetries    = 2
	DefaultAllowedFails  = 3
	DefaultCooldownTime  = 5 * time.Second
	DefaultMaxFallbacks  = 5
	DefaultMaxRetryAfter = 30 * time.Second
	DefaultTimeout       = 600 * time.Second
	DefaultStrategy      = "simple-shuffle"
)

// Groups returns the model group names in first-appearance order.
func (c *Config) Groups() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range c.Deployments {
		if !seen[d.ModelName] {
			seen[d.ModelName] = true
			out = append(out, d.ModelName)
		}
	}
	return out
}

// Key is the deployment's API key: the value bound by BindKey (a key that
// rotates), else APIKey.
func (d *Deployment) Key() string { return current(d.key, d.APIKey) }

// current is the value bound to p (a secret that rotates), else the value
// loaded from the config.
func current(p *atomic.Pointer[string], loaded string) string {
	if p != nil {
		if v := p.Load(); v != nil {
			return *v
		}
	}
	return loaded
}

// BindKey makes Key read p: the assembly binds a key read from a secret
// manager to the value its re-reads keep current. Called at start, before
// the deployment serves.
func (d *Deployment) BindKey(p *atomic.Pointer[string]) { d.key = p }
