package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// ignoredWhy lists keys that have no meaning on serverless, with the reason.
var ignoredWhy = map[string]string{
	"database_url":                     "state lives in DynamoDB, not a SQL database",
	"database_connection_pool_limit":   "state lives in DynamoDB, not a SQL database",
	"database_connection_timeout":      "state lives in DynamoDB, not a SQL database",
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

func (l *loader) general(path string, n *yaml.Node) error {
	return pairs(path, n, func(key string, v *yaml.Node, p string) error {
		switch key {
		case "rate_limits_fail_open":
			b, err := l.boolv(p, v)
			l.cfg.General.RateLimitsFailOpen = b
			return err
		case "store_model_in_db":
			b, err := l.boolv(p, v)
			l.cfg.General.StoreModelInDB = b
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
