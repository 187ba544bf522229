package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-gw/sluice/shared/providers/catalog"
)

// Error is a config value that cannot be used.
type Error struct {
	Path string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Getenv looks up an environment variable; os.LookupEnv in production, a map
// in tests. Values written as "os.environ/NAME" are resolved through it.
type Getenv func(name string) (string, bool)

// LoadFile reads and loads the config file at path.
func LoadFile(path string, getenv Getenv) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Load(data, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Load parses and validates a LiteLLM proxy config.
func Load(data []byte, getenv Getenv) (*Config, error) {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse config: %w", err)
	}
	l := &loader{getenv: getenv, cfg: &Config{General: GeneralSettings{RateLimitsFailOpen: true}}}
	if err := l.load(&doc); err != nil {
		return nil, err
	}
	return l.cfg, nil
}

type loader struct {
	getenv Getenv
	cfg    *Config
	// raw settings gathered before merging router_settings over litellm_settings
	litellm, router map[string]setting
}

type setting struct {
	path string
	node *yaml.Node
}

func (l *loader) warn(path string, n *yaml.Node, format string, args ...any) {
	w := Warning{Path: path, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		w.Line = n.Line
	}
	l.cfg.Warnings = append(l.cfg.Warnings, w)
}

func errAt(path string, n *yaml.Node, format string, args ...any) *Error {
	e := &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line = n.Line
	}
	return e
}

// deref follows an alias (*name) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isMerge(k *yaml.Node) bool { return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" }

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// maxMerged bounds the mappings that merge keys bring into one mapping
// (nested merges of merges could otherwise grow exponentially).
const maxMerged = 1000

// pairs iterates a mapping node's keys and values. It follows aliases and
// YAML merge keys (<<: *defaults), as LiteLLM's YAML loader does: merged
// keys come first, and a key the mapping sets itself wins over a merged one.
func pairs(path string, n *yaml.Node, fn func(key string, v *yaml.Node, kpath string) error) error {
	n = deref(n)
	if n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return errAt(path, n, "must be a mapping")
	}
	var seen map[string]bool // with merge keys: the keys already given to fn, or set explicitly
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMerge(n.Content[i]) {
			seen = map[string]bool{}
			break
		}
	}
	if seen != nil {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !isMerge(n.Content[i]) {
				seen[n.Content[i].Value] = true
			}
		}
		budget := maxMerged
		if err := mergedPairs(path, n, seen, &budget, fn); err != nil {
			return err
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen != nil && isMerge(k) {
			continue
		}
		if err := fn(k.Value, n.Content[i+1], joinPath(path, k.Value)); err != nil {
			return err
		}
	}
	return nil
}

// mergedPairs calls fn for the keys that n's merge keys bring and seen
// lacks (an earlier source wins over a later one, a source's own keys over
// those it merges itself), and adds them to seen.
func mergedPairs(path string, n *yaml.Node, seen map[string]bool, budget *int, fn func(key string, v *yaml.Node, kpath string) error) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			continue
		}
		v := deref(n.Content[i+1])
		srcs := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			srcs = v.Content
		}
		for _, src := range srcs {
			src = deref(src)
			if src.Kind != yaml.MappingNode {
				return errAt(joinPath(path, "<<"), src, "must be a mapping or a list of mappings")
			}
			if *budget--; *budget < 0 {
				return errAt(joinPath(path, "<<"), src, "more than %d merged mappings", maxMerged)
			}
			for j := 0; j+1 < len(src.Content); j += 2 {
				k := src.Content[j]
				if isMerge(k) || seen[k.Value] {
					continue
				}
				seen[k.Value] = true
				if err := fn(k.Value, src.Content[j+1], joinPath(path, k.Value)); err != nil {
					return err
				}
			}
			if err := mergedPairs(path, src, seen, budget, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// ignoredWhy lists keys that have no meaning on serverless, with the reason.
var ignoredWhy = map[string]string{
	"database_url":                     "state lives in DynamoDB, not a SQL database",
	"database_connection_pool_limit":   "state lives in DynamoDB, not a SQL database",
	"database_connection_timeout":      "state lives in DynamoDB, not a SQL database",
	"store_model_in_db":                "models come from this config file; state lives in DynamoDB",
	"redis_host":                       "shared state lives in DynamoDB; no Redis is needed",
	"redis_port":                       "shared state lives in DynamoDB; no Redis is needed",
	"redis_password":                   "shared state lives in DynamoDB; no Redis is needed",
	"redis_url":                        "shared state lives in DynamoDB; no Redis is needed",
	"cache":                            "response caching is not supported yet",
	"cache_params":                     "response caching is not supported yet",
	"cache_responses":                  "response caching is not supported yet",
	"alerting":                         "alerting integrations are not supported; use CloudWatch alarms on the function's metrics",
	"alerting_threshold":               "alerting integrations are not supported; use CloudWatch alarms on the function's metrics",
	"alert_types":                      "alerting integrations are not supported; use CloudWatch alarms on the function's metrics",
	"max_parallel_requests":            "on Lambda, bound parallel requests with the function's reserved concurrency",
	"global_max_parallel_requests":     "on Lambda, bound parallel requests with the function's reserved concurrency",
	"proxy_batch_write_at":             "spend is written through the SQS spend queue",
	"success_callback":                 "callbacks are Python hooks; spend and logs go to SQS and CloudWatch",
	"failure_callback":                 "callbacks are Python hooks; spend and logs go to SQS and CloudWatch",
	"callbacks":                        "callbacks are Python hooks; spend and logs go to SQS and CloudWatch",
	"set_verbose":                      "log level is set with the LOG_LEVEL environment variable",
	"json_logs":                        "logs are always structured JSON",
	"telemetry":                        "the gateway sends no telemetry",
	"background_health_checks":         "a serverless function runs no background tasks",
	"health_check_interval":            "a serverless function runs no background tasks",
	"disable_spend_logs":               "spend logging is configured on the spend consumer",
	"turn_off_message_logging":         "the gateway never logs message content",
	"redact_user_api_key_info":         "the gateway never logs keys",
	"environment_variables":            "set environment variables on the function instead",
	"num_workers":                      "Lambda scales by instances, not workers",
	"routing_strategy_args":            "strategy arguments are not supported yet; defaults apply",
	"provider_budget_config":           "provider budgets are not supported yet",
	"disable_master_key_return":        "the master key is never returned",
	"master_key_rotation":              "rotate the master key in SSM Parameter Store",
	"infer_model_from_keys":            "not supported",
	"public_routes":                    "not supported",
	"allowed_routes":                   "not supported",
	"ui_access_mode":                   "the gateway has no admin UI",
	"allow_requests_on_db_unavailable": "configure fail-open/closed per check in the gateway's store settings",
}

func (l *loader) ignoredOrUnsupported(key, path string, v *yaml.Node) {
	if why, ok := ignoredWhy[key]; ok {
		l.warn(path, v, "ignored: %s", why)
		return
	}
	l.warn(path, v, "not supported yet; ignored")
}

func (l *loader) load(doc *yaml.Node) error {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return errors.New("config: empty document")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return errAt("(root)", root, "must be a mapping with model_list and settings")
	}
	l.litellm = map[string]setting{}
	l.router = map[string]setting{}
	var modelList *yaml.Node
	err := pairs("", root, func(key string, v *yaml.Node, path string) error {
		switch key {
		case "model_list":
			modelList = v
		case "router_settings":
			return pairs(path, v, func(k string, vv *yaml.Node, p string) error {
				l.router[k] = setting{p, vv}
				return nil
			})
		case "litellm_settings":
			return pairs(path, v, func(k string, vv *yaml.Node, p string) error {
				l.litellm[k] = setting{p, vv}
				return nil
			})
		case "general_settings":
			return l.general(path, v)
		default:
			l.ignoredOrUnsupported(key, path, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := l.models(modelList); err != nil {
		return err
	}
	if err := l.dropParams(); err != nil {
		return err
	}
	if err := l.routerSettings(); err != nil {
		return err
	}
	return l.validate()
}

// dropParams reads litellm_settings.drop_params (a LiteLLM setting, not a
// router one) into every deployment that does not set its own.
func (l *loader) dropParams() error {
	s, ok := l.litellm["drop_params"]
	if !ok {
		return nil
	}
	delete(l.litellm, "drop_params") // not a routing key
	drop, err := l.boolv(s.path, s.node)
	if err != nil {
		return err
	}
	for _, d := range l.cfg.Deployments {
		if !d.dropParamsSet {
			d.DropParams = drop
		}
	}
	return nil
}

func (l *loader) general(path string, n *yaml.Node) error {
	return pairs(path, n, func(key string, v *yaml.Node, p string) error {
		switch key {
		case "rate_limits_fail_open":
			b, err := l.boolv(p, v)
			l.cfg.General.RateLimitsFailOpen = b
			return err
		case "strict_budgets":
			b, err := l.boolv(p, v)
			l.cfg.General.StrictBudgets = b
			return err
		case "master_key":
			s, set, err := l.str(p, v)
			if err != nil {
				return err
			}
			if !set {
				if l.masterKeyOverridden() {
					return nil // the key the gateway gets from its environment (or SSM) replaces this one
				}
				return errAt(p, v, "environment variable %s is not set; refusing to start an open gateway", envName(v.Value))
			}
			if s != "" && !strings.HasPrefix(s, "sk-") {
				l.warn(p, v, "LiteLLM expects the master key to start with \"sk-\"; accepted as is")
			}
			l.cfg.General.MasterKey = s
		default:
			l.ignoredOrUnsupported(key, p, v)
		}
		return nil
	})
}

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

func (l *loader) intv(path string, n *yaml.Node) (int64, error) {
	s, err := l.scalar(path, n)
	if err != nil {
		return 0, err
	}
	if s == "" {
		return 0, nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) >= math.MaxInt64 {
			return 0, errAt(path, n, "must be a whole number, got %s", shown(n, s))
		}
		i = int64(f)
	}
	if i < 0 {
		return 0, errAt(path, n, "must not be negative, got %d", i)
	}
	return i, nil
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

func (l *loader) floatv(path string, n *yaml.Node) (float64, error) {
	s, err := l.scalar(path, n)
	if err != nil {
		return 0, err
	}
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errAt(path, n, "must be a number, got %s", shown(n, s))
	}
	if f < 0 {
		return 0, errAt(path, n, "must not be negative, got %v", f)
	}
	return f, nil
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
	n = deref(n)
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return nil, nil
		}
		s, err := l.scalar(path, n)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(path, n, "must be a list")
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		s, err := l.scalar(fmt.Sprintf("%s[%d]", path, i), c)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// anyValue decodes a node into plain Go values (for pass-through params).
func anyValue(path string, n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, errAt(path, n, "%v", err)
	}
	return v, nil
}

// Params from litellm_params that become defaults on the upstream request.
var passParams = map[string]bool{
	"temperature": true, "top_p": true, "max_tokens": true, "max_completion_tokens": true,
	"frequency_penalty": true, "presence_penalty": true, "seed": true, "stop": true, "n": true,
	"response_format": true, "user": true, "reasoning_effort": true, "logit_bias": true,
	"parallel_tool_calls": true, "service_tier": true,
}

// Informational model_info keys: accepted, shown by /v1/models where useful.
var infoKeys = map[string]bool{
	"mode": true, "description": true,
	"supports_vision": true, "supports_function_calling": true, "supports_tool_choice": true,
	"supports_response_schema": true, "supports_system_messages": true, "supports_prompt_caching": true,
	"supports_reasoning": true, "supports_audio_input": true, "supports_audio_output": true,
	"litellm_provider": true, "access_groups": true, "team_id": true, "db_model": true, "updated_at": true,
	"updated_by": true, "created_at": true, "created_by": true,
}

func (l *loader) models(list *yaml.Node) error {
	list = deref(list)
	if list == nil || (list.Kind == yaml.ScalarNode && list.Tag == "!!null") {
		l.warn("model_list", list, "no models configured: every request will get 404")
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		return errAt("model_list", list, "must be a list of deployments")
	}
	ids := map[string]string{}
	for i, item := range list.Content {
		item = deref(item)
		path := fmt.Sprintf("model_list[%d]", i)
		d, err := l.deployment(path, item)
		if err != nil {
			return err
		}
		if prev, dup := ids[d.ID]; dup {
			if item.Kind == yaml.MappingNode && hasKey(item, "model_info", "id") {
				return errAt(path+".model_info.id", item, "duplicate deployment id %q (also %s)", d.ID, prev)
			}
			d.ID = fmt.Sprintf("%s-%d", d.ID, i)
		}
		ids[d.ID] = path
		l.cfg.Deployments = append(l.cfg.Deployments, d)
	}
	return nil
}

func hasKey(m *yaml.Node, section, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == section {
			s := m.Content[i+1]
			for j := 0; j+1 < len(s.Content); j += 2 {
				if s.Content[j].Value == key {
					return true
				}
			}
		}
	}
	return false
}

func (l *loader) deployment(path string, n *yaml.Node) (*Deployment, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errAt(path, n, "must be a mapping with model_name and litellm_params")
	}
	d := &Deployment{}
	var params, info *yaml.Node
	var paramsPath, infoPath string
	err := pairs(path, n, func(key string, v *yaml.Node, p string) error {
		switch key {
		case "model_name":
			s, err := l.scalar(p, v)
			if err != nil {
				return err
			}
			d.ModelName = strings.TrimSpace(s)
		case "litellm_params":
			params, paramsPath = v, p
		case "model_info":
			info, infoPath = v, p
		default:
			l.warn(p, v, "not supported yet; ignored")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if d.ModelName == "" {
		return nil, errAt(path+".model_name", n, "is required")
	}
	if params == nil {
		return nil, errAt(path+".litellm_params", n, "is required")
	}
	var rpm, tpm, infoRPM, infoTPM int64
	var timeout, infoTimeout time.Duration
	var modelNode *yaml.Node
	err = pairs(paramsPath, params, func(key string, v *yaml.Node, p string) error {
		var err error
		switch key {
		case "model":
			modelNode = v
			d.line = v.Line
			var s string
			if s, err = l.scalar(p, v); err == nil {
				err = l.parseModel(p, v, s, d)
			}
		case "api_key":
			s, set, e := l.str(p, v)
			if e != nil {
				return e
			}
			if !set {
				l.warn(p, v, "environment variable %s is not set; calls to this deployment will fail authentication", envName(v.Value))
			}
			d.APIKey = s
		case "api_base", "base_url":
			var s string
			if s, err = l.scalar(p, v); err == nil {
				d.APIBase = strings.TrimRight(strings.TrimSpace(s), "/")
				if d.APIBase != "" && !strings.HasPrefix(d.APIBase, "http://") && !strings.HasPrefix(d.APIBase, "https://") {
					err = errAt(p, v, "must be an http:// or https:// URL, got %s", shown(v, s))
				}
			}
		case "api_version":
			d.APIVersion, err = l.scalar(p, v)
		case "aws_region_name", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
			"aws_role_name", "aws_session_name", "aws_bedrock_runtime_endpoint":
			s, set, e := l.str(p, v)
			if e != nil {
				return e
			}
			if !set {
				l.warn(p, v, "environment variable %s is not set", envName(v.Value))
			}
			switch key {
			case "aws_region_name":
				d.AWS.Region = s
			case "aws_access_key_id":
				d.AWS.AccessKeyID = s
			case "aws_secret_access_key":
				d.AWS.SecretAccessKey = s
			case "aws_session_token":
				d.AWS.SessionToken = s
			case "aws_role_name":
				d.AWS.RoleName = s
			case "aws_session_name":
				d.AWS.SessionName = s
			case "aws_bedrock_runtime_endpoint":
				d.APIBase = strings.TrimRight(strings.TrimSpace(s), "/")
			}
		case "timeout", "request_timeout":
			timeout, err = l.seconds(p, v)
		case "stream_timeout":
			d.StreamTimeout, err = l.seconds(p, v)
		case "rpm":
			rpm, err = l.intv(p, v)
		case "tpm":
			tpm, err = l.intv(p, v)
		case "weight":
			d.Weight, err = l.floatv(p, v)
			d.HasWeight = true
		case "order":
			d.Order, err = l.count(p, v)
		case "mock_response":
			var s string
			if s, err = l.scalar(p, v); err == nil {
				d.MockResponse = &s
			}
		case "input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
			"input_cost_per_token_cache_hit", "cache_creation_input_token_cost":
			err = l.price(p, v, key, d, false)
		case "tags":
			d.Tags, err = l.strList(p, v)
		case "max_input_tokens":
			d.MaxInputTokens, err = l.count(p, v)
		case "drop_params":
			d.DropParams, err = l.boolv(p, v)
			d.dropParamsSet = true
		default:
			if passParams[key] {
				var val any
				if val, err = anyValue(p, v); err == nil {
					if d.Params == nil {
						d.Params = map[string]any{}
					}
					d.Params[key] = val
				}
			} else {
				l.warn(p, v, "not supported yet; ignored")
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if modelNode == nil {
		return nil, errAt(paramsPath+".model", params, "is required (provider/model, e.g. openai/gpt-4o)")
	}
	err = pairs(infoPath, info, func(key string, v *yaml.Node, p string) error {
		var err error
		switch key {
		case "id":
			d.ID, err = l.scalar(p, v)
		case "blocked":
			d.Blocked, err = l.boolv(p, v)
		case "rpm":
			infoRPM, err = l.intv(p, v)
		case "tpm":
			infoTPM, err = l.intv(p, v)
		case "timeout":
			infoTimeout, err = l.seconds(p, v)
		case "max_input_tokens", "max_tokens":
			var m int
			if m, err = l.count(p, v); err == nil && (key == "max_input_tokens" || d.MaxInputTokens == 0) {
				d.MaxInputTokens = m
			}
		case "input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
			"input_cost_per_token_cache_hit", "cache_creation_input_token_cost":
			err = l.price(p, v, key, d, true)
		case "base_model":
			var s string
			if s, err = l.scalar(p, v); err == nil {
				d.BaseModel = strings.TrimSpace(s)
			}
		case "max_output_tokens":
			d.MaxOutputTokens, err = l.count(p, v)
		default:
			if !infoKeys[key] {
				l.warn(p, v, "not supported yet; ignored")
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	// LiteLLM-ism seen in real configs: limits and timeout under model_info.
	d.RPM, d.TPM, d.Timeout = firstNonZero(rpm, infoRPM), firstNonZero(tpm, infoTPM), firstNonZero(timeout, infoTimeout)

	spec, _ := catalog.Lookup(d.Provider)
	switch {
	case !d.Implemented:
		l.warn(paramsPath+".model", modelNode, "provider %q is not implemented yet: deployment %q is left out of routing", d.Provider, d.ModelName)
	case d.APIBase == "" && spec.NeedsBase && d.MockResponse == nil:
		return nil, errAt(paramsPath+".api_base", params, "is required for provider %q", d.Provider)
	case d.APIBase == "":
		d.APIBase = spec.DefaultBase
	}
	if d.ID == "" {
		d.ID = stableID(d)
	}
	if d.PriceSet {
		d.Price = d.configPrice()
	}
	return d, nil
}

// price reads one price key into d. model_info's prices only fill what
// litellm_params left unset (litellm_params wins, as in LiteLLM).
func (l *loader) price(path string, v *yaml.Node, key string, d *Deployment, fromInfo bool) error {
	f, err := l.floatv(path, v)
	if err != nil {
		return err
	}
	var dst *float64
	switch key {
	case "input_cost_per_token":
		dst = &d.InputCostPerToken
	case "output_cost_per_token":
		dst = &d.OutputCostPerToken
	case "cache_read_input_token_cost", "input_cost_per_token_cache_hit":
		dst = &d.CacheReadCostPerToken
	case "cache_creation_input_token_cost":
		dst = &d.CacheWriteCostPerToken
	}
	if fromInfo && *dst != 0 {
		return nil
	}
	*dst = f
	d.PriceSet = true
	return nil
}

func firstNonZero[T comparable](vals ...T) T {
	var zero T
	for _, v := range vals {
		if v != zero {
			return v
		}
	}
	return zero
}

func (l *loader) parseModel(path string, n *yaml.Node, s string, d *Deployment) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return errAt(path, n, "must not be empty")
	}
	provider, model, ok := strings.Cut(s, "/")
	if !ok { // LiteLLM infers OpenAI for bare model names
		provider, model = "openai", s
	}
	spec, known := catalog.Lookup(provider)
	if !known {
		return errAt(path, n, "unknown provider %q%s", provider, suggest(provider))
	}
	if model == "" {
		return errAt(path, n, "missing model name after %q", provider+"/")
	}
	d.Provider, d.Model, d.Protocol = provider, model, spec.Protocol
	d.Implemented = spec.Implemented()
	return nil
}

// suggest names the closest known provider, for typos like "opnai".
func suggest(p string) string {
	best, bestD := "", 3
	for _, name := range catalog.Prefixes() {
		if d := editDistance(p, name); d < bestD {
			best, bestD = name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// stableID derives a deployment id that every gateway instance computes the
// same way from the same config, so that shared cooldowns and counters agree.
func stableID(d *Deployment) string {
	h := sha256.New()
	for _, s := range []string{d.ModelName, d.Provider, d.Model, d.APIBase, d.APIVersion} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// MasterKeyOverrides name the environment variables whose key replaces
// general_settings.master_key: the key itself, or the SSM parameter it is
// read from (GATEWAY_MASTER_KEY_PARAMETER, as the template deploys it). With
// one set, a master_key naming an unset variable (os.environ/LITELLM_MASTER_KEY
// in a config brought from LiteLLM) is not fatal: the gateway does not run
// open, and a parameter that cannot be read stops it at start.
var MasterKeyOverrides = []string{"GATEWAY_MASTER_KEY", "LITELLM_MASTER_KEY", "GATEWAY_MASTER_KEY_PARAMETER"}

func (l *loader) masterKeyOverridden() bool {
	for _, name := range MasterKeyOverrides {
		if v, ok := l.getenv(name); ok && v != "" {
			return true
		}
	}
	return false
}
