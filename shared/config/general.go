package config

import (
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
	"max_parallel_requests":            "on Lambda, bound parallel requests with the function's reserved concurrency",
	"global_max_parallel_requests":     "on Lambda, bound parallel requests with the function's reserved concurrency",
	"proxy_batch_write_at":             "spend is written through the SQS spend queue",
	"set_verbose":                      "log level is set with the LOG_LEVEL environment variable",
	"json_logs":                        "logs are always structured JSON",
	"telemetry":                        "the gateway sends no telemetry",
	"background_health_checks":         "a serverless function runs no background tasks",
	"health_check_interval":            "a serverless function runs no background tasks",
	"disable_spend_logs":               "spend logging is configured on the spend consumer",
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

func (l *loader) general(path string, n *yaml.Node) error {
	defer l.keyManagementDone(path, n)
	return pairs(path, n, func(key string, v *yaml.Node, p string) error {
		switch key {
		case "key_management_system", "key_management_settings": // keymgmt.go
			return l.keyManagement(key, p, v)
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
		case "alerting", "alert_types", "alert_to_webhook_url", "alerting_args", "alerting_threshold": // alerting.go
			return l.alerting(key, p, v)
		case "master_key":
			l.masterKeys[0] = &setting{p, v} // resolved by masterKey, with litellm_settings'
		default:
			l.unsupported(generalSection, key, p, v)
		}
		return nil
	})
}
