package config

import "go.yaml.in/yaml/v3"

// LiteLLM's documented config keys (docs/proxy/config_settings.md and
// configs.md) that the gateway does not read, by section: such a key is
// warned as not implemented (with ignoredWhy's reason where one is known).
// A key neither implemented nor documented is warned as unknown, with a
// "did you mean" naming the closest known key of its section.
var (
	documentedTop = []string{
		"environment_variables", "callback_settings", "guardrails", "finetune_settings", "files_settings",
		"credential_list", "mcp_servers", "mcp_tools", "vector_store_registry", "assistant_settings",
		"search_tools", "prompts", "include", "pass_through_endpoints", "model_cost_map",
	}
	documentedLiteLLM = []string{
		"success_callback", "failure_callback", "callbacks", "service_callbacks", "turn_off_message_logging",
		"modify_params", "enable_preview_features", "redact_user_api_key_info", "mcp_aliases",
		"langfuse_default_tags", "set_verbose", "json_logs", "force_ipv4", "cache", "cache_params",
		"disable_end_user_cost_tracking", "disable_end_user_cost_tracking_prometheus_only",
		"key_generation_settings", "disable_add_transform_inline_image_block",
		"use_chat_completions_url_for_anthropic_messages", "disable_hf_tokenizer_download",
		"enable_json_schema_validation", "enable_key_alias_format_validation",
		"disable_copilot_system_to_assistant", "default_team_settings", "include_cost_in_streaming_usage",
		"upperbound_key_generate_params", "default_key_generate_params", "max_budget", "budget_duration",
		"default_internal_user_params", "max_internal_user_budget", "internal_user_budget_duration",
		"num_retries_per_request", "drop_params", "telemetry", "context_window_fallbacks",
		"content_policy_fallbacks", "default_fallbacks", "request_timeout", "callback_settings",
		"ssl_verify", "ssl_certificate", "disable_token_counter", "return_response_headers",
		"allowed_fails", "num_retries", "cache_responses",
	}
	documentedGeneral = []string{
		"completion_model", "disable_spend_logs", "disable_spend_updates", "disable_master_key_return",
		"disable_retry_on_max_parallel_request_limit_error", "disable_reset_budget",
		"disable_adding_master_key_hash_to_db", "disable_responses_id_security", "enable_jwt_auth",
		"enforce_user_param", "reject_clientside_metadata_tags", "allowed_routes", "database_url",
		"database_connection_pool_limit", "database_connection_timeout", "allow_requests_on_db_unavailable",
		"custom_auth", "max_parallel_requests", "global_max_parallel_requests", "infer_model_from_keys",
		"background_health_checks", "health_check_interval", "alerting", "alerting_threshold",
		"use_client_credentials_pass_through_routes", "health_check_details", "public_routes", "alert_types",
		"enforced_params", "enable_oauth2_auth", "use_x_forwarded_for", "service_account_settings",
		"image_generation_model", "supported_db_objects", "user_mcp_management_mode",
		"store_prompts_in_spend_logs", "max_request_size_mb", "max_response_size_mb",
		"proxy_budget_rescheduler_min_time", "proxy_budget_rescheduler_max_time", "proxy_batch_write_at",
		"proxy_batch_polling_interval", "alerting_args", "custom_key_generate", "allowed_ips",
		"embedding_model", "default_team_disabled", "alert_to_webhook_url", "allow_user_auth",
		"user_api_key_cache_ttl", "disable_prisma_schema_update", "litellm_key_header_name",
		"moderation_model", "custom_sso", "allow_client_side_credentials", "admin_only_routes",
		"use_azure_key_vault", "use_google_kms", "spend_report_frequency", "ui_access_mode",
		"litellm_jwtauth", "litellm_license", "oauth2_config_mappings", "pass_through_endpoints",
		"enable_oauth2_proxy_auth", "forward_openai_org_id", "forward_client_headers_to_llm_api",
		"maximum_spend_logs_retention_period", "maximum_spend_logs_retention_interval",
		"custom_team_metadata_validate", "use_redis_transaction_buffer", "disable_end_user_cost_tracking",
	}
	documentedRouter = []string{
		"redis_host", "redis_password", "redis_port", "redis_db", "redis_url", "enable_pre_call_check",
		"tag_filtering_match_any", "default_max_parallel_requests", "default_priority", "polling_interval",
		"default_litellm_params", "debug_level", "client_ttl", "cache_kwargs", "routing_strategy_args",
		"caching_groups", "alerting_config", "assistants_config", "set_verbose", "provider_budget_config",
		"cache_responses", "router_general_settings", "optional_pre_call_checks",
		"deployment_affinity_ttl_seconds", "ignore_invalid_deployments", "search_tools", "guardrail_list",
	}
	// the keys each section implements (beside the switch that reads them)
	implementedTop     = []string{"model_list", "router_settings", "litellm_settings", "general_settings"}
	implementedGeneral = []string{"key_management_system", "key_management_settings", "rate_limits_fail_open", "store_model_in_db", "strict_budgets", "master_key"}
	implementedRouter  = []string{
		"routing_strategy", "num_retries", "retries", "max_retries", "allowed_fails", "cooldown_time",
		"disable_cooldowns", "timeout", "request_timeout", "stream_timeout", "retry_after", "max_retry_after",
		"max_fallbacks", "enable_pre_call_checks", "enable_tag_filtering", "fallbacks", "context_window_fallbacks",
		"content_policy_fallbacks", "default_fallbacks", "retry_policy", "allowed_fails_policy",
		"model_group_retry_policy", "model_group_alias",
	}
	implementedEntry  = []string{"model_name", "litellm_params", "model_info", "rpm", "tpm"}
	implementedParams = []string{
		"model", "api_key", "api_base", "base_url", "api_version", "stream_timeout", "num_retries", "mock_timeout",
		"weight", "order", "mock_response", "tags", "max_input_tokens", "drop_params", "region_name",
		"max_parallel_requests", "rpm", "tpm", "timeout", "request_timeout",
	}
)

// section is one part of the config whose keys are checked: what it
// implements and what LiteLLM documents beside that.
type section struct {
	implemented, documented []string
}

func (s section) known() []string {
	return append(append([]string(nil), s.implemented...), s.documented...)
}

var (
	topSection     = section{implementedTop, documentedTop}
	generalSection = section{implementedGeneral, documentedGeneral}
	// litellm_settings also takes every routing key.
	litellmSection = section{implementedRouter, documentedLiteLLM}
	routerSection  = section{implementedRouter, documentedRouter}
)

// unsupported warns about a key the section does not read: with its
// reason when one is known, as a documented LiteLLM key not implemented,
// or as unknown, with the closest known key when one is close (a typo
// such as router_setings).
func (l *loader) unsupported(s section, key, path string, v *yaml.Node) {
	if why, ok := ignoredWhy[key]; ok {
		l.warn(path, v, "ignored: %s", why)
		return
	}
	for _, k := range s.documented {
		if k == key {
			l.warn(path, v, "not supported yet; ignored")
			return
		}
	}
	if best := closest(key, append(s.known(), keysOf(ignoredWhy)...)); best != "" {
		l.warn(path, v, "unknown key %s (did you mean %s?); ignored", key, best)
		return
	}
	l.warn(path, v, "unknown key %s; ignored", key)
}
