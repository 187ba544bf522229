package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

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
	"litellm_provider": true, "team_id": true, "db_model": true, "updated_at": true,
	"updated_by": true, "created_at": true, "created_by": true,
}

func (l *loader) models(list *yaml.Node) error {
	list = deref(list)
	ids := map[string]string{}
	if list == nil || (list.Kind == yaml.ScalarNode && list.Tag == "!!null") {
		if len(l.stored) == 0 {
			l.warn("model_list", list, "no models configured: every request will get 404")
		}
		list = &yaml.Node{Kind: yaml.SequenceNode}
	}
	if list.Kind != yaml.SequenceNode {
		return errAt("model_list", list, "must be a list of deployments")
	}
	for i, item := range list.Content {
		item = deref(item)
		path := fmt.Sprintf("model_list[%d]", i)
		d, err := l.deployment(path, item)
		var invalid *invalidEntry
		if errors.As(err, &invalid) {
			// LiteLLM's proxy ignores an invalid deployment
			// (ignore_invalid_deployments) and loads the others.
			l.cfg.Warnings = append(l.cfg.Warnings, Warning{Path: invalid.e.Path, Line: invalid.e.Line,
				Message: invalid.e.Msg + "; the entry is left out (LiteLLM's proxy skips invalid deployments too)"})
			continue
		}
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
	if err := l.storedModels(ids); err != nil {
		return err
	}
	l.cfg.indexAccessGroups()
	return nil
}

// entry is what one model_list item holds beyond its Deployment while it
// loads: its sections, and the limits and timeout that litellm_params and
// model_info may both set (a LiteLLM-ism seen in real configs; litellm_params
// wins).
type entry struct {
	params, info         *yaml.Node
	paramsPath, infoPath string
	model                *yaml.Node // litellm_params.model

	// typos are keys of the entry or its litellm_params one edit or two
	// from a required key (model_name, litellm_params, model), by the key
	// they resemble: a missing required key is then reported as the typo.
	typos map[string]*yaml.Node

	ownLimits, infoLimits limits // set in litellm_params, in model_info
	topLimits             limits // rpm/tpm beside litellm_params (LiteLLM's usage routing reads them there too)
}

// limits are the rpm, tpm and timeout one section sets.
type limits struct {
	rpm, tpm int64
	timeout  time.Duration
}

// limit reads key into lim when it is rpm, tpm or one of timeoutKeys, and
// says whether it was.
func (l *loader) limit(lim *limits, key, p string, v *yaml.Node, timeoutKeys ...string) (ok bool, err error) {
	switch {
	case key == "rpm":
		lim.rpm, err = l.intv(p, v)
	case key == "tpm":
		lim.tpm, err = l.intv(p, v)
	case slices.Contains(timeoutKeys, key):
		lim.timeout, err = l.seconds(p, v)
	default:
		return false, nil
	}
	return true, err
}

// deployment loads one model_list item.
func (l *loader) deployment(path string, n *yaml.Node) (*Deployment, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errAt(path, n, "must be a mapping with model_name and litellm_params")
	}
	d := &Deployment{}
	e, err := l.sections(path, n, d)
	if err != nil {
		return nil, err
	}
	if err := l.litellmParams(e, d); err != nil {
		return nil, err
	}
	if e.model == nil {
		if typo := e.typos["model"]; typo != nil {
			return nil, errAt(e.paramsPath+"."+typo.Value, typo, "unknown key %s (did you mean model?)", typo.Value)
		}
		return nil, &invalidEntry{errAt(e.paramsPath+".model", e.params, "is required (provider/model, e.g. openai/gpt-4o)")}
	}
	if err := l.modelInfo(e, d); err != nil {
		return nil, err
	}
	d.RPM, d.TPM = firstNonZero(e.ownLimits.rpm, e.infoLimits.rpm, e.topLimits.rpm), firstNonZero(e.ownLimits.tpm, e.infoLimits.tpm, e.topLimits.tpm)
	d.Timeout = firstNonZero(e.ownLimits.timeout, e.infoLimits.timeout)
	l.endpoint(e, d)
	l.anyProvider(d)
	deriveRegion(d)
	if d.ID == "" {
		d.ID = stableID(d)
	}
	if d.PriceSet {
		d.Price = d.configPrice()
	}
	return d, nil
}

// sections reads model_name and finds litellm_params and model_info.
func (l *loader) sections(path string, n *yaml.Node, d *Deployment) (*entry, error) {
	e := &entry{typos: map[string]*yaml.Node{}}
	err := pairs(path, n, func(key string, v *yaml.Node, p string) error {
		if key == "rpm" || key == "tpm" {
			_, err := l.limit(&e.topLimits, key, p, v)
			return err
		}
		switch key {
		case "model_name":
			s, err := l.scalar(p, v)
			if err != nil {
				return err
			}
			d.ModelName = strings.TrimSpace(s)
		case "litellm_params":
			e.params, e.paramsPath = v, p
		case "model_info":
			e.info, e.infoPath = v, p
		default:
			l.unknownKey(e, implementedEntry, key, p, keyNode(n, key, v))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, req := range []string{"model_name", "litellm_params"} {
		if typo := e.typos[req]; typo != nil && (req == "model_name" && d.ModelName == "" || req == "litellm_params" && e.params == nil) {
			return nil, errAt(path+"."+typo.Value, typo, "unknown key %s (did you mean %s?)", typo.Value, req)
		}
	}
	if d.ModelName == "" {
		return nil, &invalidEntry{errAt(path+".model_name", n, "is required")}
	}
	if e.params == nil {
		return nil, &invalidEntry{errAt(path+".litellm_params", n, "is required")}
	}
	return e, nil
}

// litellmParams reads litellm_params: the provider and its model, where and
// how to reach it, limits, prices, and the params passed on to requests.
func (l *loader) litellmParams(e *entry, d *Deployment) error {
	return pairs(e.paramsPath, e.params, func(key string, v *yaml.Node, p string) error {
		if ok, err := l.limit(&e.ownLimits, key, p, v, "timeout", "request_timeout"); ok {
			return err
		}
		var err error
		switch key {
		case "model":
			e.model = v
			d.line = v.Line
			var s string
			if s, err = l.scalar(p, v); err == nil {
				err = l.parseModel(p, v, s, d)
			}
		case "api_key":
			var set bool
			if strings.HasPrefix(strings.TrimSpace(deref(v).Value), "os.environ/") {
				d.APIKeyEnv = envName(deref(v).Value)
			}
			if d.APIKey, set, err = l.str(p, v); err == nil && !set {
				l.warn(p, v, "environment variable %s is not set; calls to this deployment will fail authentication", envName(v.Value))
			}
		case "api_base", "base_url":
			var s string
			var set bool
			if s, set, err = l.str(p, v); err == nil && !set {
				// LiteLLM loads it as unset: an Azure deployment then
				// reads AZURE_API_BASE (endpoint).
				l.warn(p, v, "environment variable %s is not set; treated as no api_base", envName(v.Value))
			}
			if err == nil {
				d.APIBase = strings.TrimRight(strings.TrimSpace(s), "/")
				if d.APIBase != "" && !strings.HasPrefix(d.APIBase, "http://") && !strings.HasPrefix(d.APIBase, "https://") {
					err = errAt(p, v, "must be an http:// or https:// URL, got %s", shown(v, s))
				}
			}
		case "api_version":
			d.APIVersion, err = l.scalar(p, v)
		case "stream_timeout":
			d.StreamTimeout, err = l.seconds(p, v)
		case "num_retries":
			d.NumRetries, err = l.count(p, v)
			d.NumRetriesSet = true
		case "mock_timeout":
			d.MockTimeout, err = l.boolv(p, v)
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
		case "tags":
			d.Tags, err = l.strList(p, v)
		case "max_input_tokens":
			d.MaxInputTokens, err = l.count(p, v)
		case "drop_params":
			d.DropParams, err = l.boolv(p, v)
			d.dropParamsSet = true
		case "region_name":
			var s string
			if s, err = l.scalar(p, v); err == nil {
				d.Region = strings.ToLower(strings.TrimSpace(s))
			}
		case "max_parallel_requests":
			d.MaxParallel, err = l.maxParallel(p, v)
		default:
			err = l.otherParam(e, key, p, v, d)
		}
		return err
	})
}

// awsParams are LiteLLM's aws_* litellm_params (Bedrock's), by the field
// each sets.
var awsParams = map[string]func(*Deployment) *string{
	"aws_region_name":              func(d *Deployment) *string { return &d.AWS.Region },
	"aws_access_key_id":            func(d *Deployment) *string { return &d.AWS.AccessKeyID },
	"aws_secret_access_key":        func(d *Deployment) *string { return &d.AWS.SecretAccessKey },
	"aws_session_token":            func(d *Deployment) *string { return &d.AWS.SessionToken },
	"aws_role_name":                func(d *Deployment) *string { return &d.AWS.RoleName },
	"aws_session_name":             func(d *Deployment) *string { return &d.AWS.SessionName },
	"aws_bedrock_runtime_endpoint": func(d *Deployment) *string { return &d.APIBase },
}

// otherParam reads a litellm_params key of a table: an aws_* param, a
// price, or a param passed on to requests; any other is warned about.
func (l *loader) otherParam(e *entry, key, p string, v *yaml.Node, d *Deployment) error {
	if field, ok := awsParams[key]; ok {
		s, set, err := l.str(p, v)
		if err != nil {
			return err
		}
		if !set {
			l.warn(p, v, "environment variable %s is not set", envName(v.Value))
		}
		if key == "aws_bedrock_runtime_endpoint" {
			s = strings.TrimRight(strings.TrimSpace(s), "/")
		}
		*field(d) = s
		return nil
	}
	if ok, err := l.vertexParam(key, p, v, d); ok {
		return err
	}
	if priceField(d, key) != nil {
		return l.price(p, v, key, d, false)
	}
	if !passParams[key] {
		l.unknownKey(e, knownParams(), key, p, v)
		return nil
	}
	val, err := anyValue(p, v)
	if err == nil {
		if d.Params == nil {
			d.Params = map[string]any{}
		}
		d.Params[key] = val
	}
	return err
}

// modelInfo reads model_info: the deployment's id, block, limits, context
// window and prices (where litellm_params set none), and the keys shown by
// /v1/models.
func (l *loader) modelInfo(e *entry, d *Deployment) error {
	return pairs(e.infoPath, e.info, func(key string, v *yaml.Node, p string) error {
		if ok, err := l.limit(&e.infoLimits, key, p, v, "timeout"); ok {
			return err
		}
		var err error
		switch key {
		case "id":
			d.ID, err = l.scalar(p, v)
		case "blocked":
			d.Blocked, err = l.boolv(p, v)
		case "max_input_tokens", "max_tokens":
			var m int
			if m, err = l.count(p, v); err == nil && (key == "max_input_tokens" || d.MaxInputTokens == 0) {
				d.MaxInputTokens = m
			}
		case "base_model":
			var s string
			if s, err = l.scalar(p, v); err == nil {
				d.BaseModel = strings.TrimSpace(s)
			}
		case "max_output_tokens":
			d.MaxOutputTokens, err = l.count(p, v)
		case "access_groups":
			err = l.accessGroups(p, v, d)
		default:
			if priceField(d, key) != nil {
				err = l.price(p, v, key, d, true)
			} else if !infoKeys[key] {
				l.warn(p, v, "not supported yet; ignored")
			}
		}
		return err
	})
}

// price reads one price key into d. model_info's prices only fill what
// litellm_params left unset (litellm_params wins, as in LiteLLM).
func (l *loader) price(path string, v *yaml.Node, key string, d *Deployment, fromInfo bool) error {
	f, err := l.floatv(path, v)
	if err != nil {
		return err
	}
	dst := priceField(d, key)
	if fromInfo && *dst != 0 {
		return nil
	}
	*dst = f
	d.PriceSet = true
	return nil
}

// priceField is the field a price key sets (nil: key is not a price).
func priceField(d *Deployment, key string) *float64 {
	switch key {
	case "input_cost_per_token":
		return &d.InputCostPerToken
	case "output_cost_per_token":
		return &d.OutputCostPerToken
	case "cache_read_input_token_cost", "input_cost_per_token_cache_hit":
		return &d.CacheReadCostPerToken
	case "cache_creation_input_token_cost":
		return &d.CacheWriteCostPerToken
	}
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

// maxParallel reads a deployment's max_parallel_requests: a whole number
// >= 0, or null (no bound).
func (l *loader) maxParallel(p string, v *yaml.Node) (*int64, error) {
	if n := deref(v); n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	n, err := l.intv(p, v)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errAt(p, v, "must be a whole number >= 0, got %d", n)
	}
	return &n, nil
}
