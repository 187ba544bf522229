#!/bin/sh
# Runs inside LocalStack once it is ready: creates what the stack needs
# before `samlocal deploy` and that the template cannot create itself.
# The tables and queues come from template.yaml.
set -eu
# The master key: an SSM SecureString, as in AWS (never plain text in the
# template). Override SLUICE_MASTER_KEY in docker-compose.yml for your own.
awslocal ssm put-parameter \
	--name /sluice/master-key \
	--type SecureString \
	--value "${SLUICE_MASTER_KEY:-sk-sluice-localstack-master-key}" \
	--overwrite >/dev/null
echo "sluice: created SSM parameter /sluice/master-key"
# The salt key that seals the credentials of models added through the
# admin API (store_model_in_db), LiteLLM's LITELLM_SALT_KEY: a key of its
# own, so that rotating the master key leaves them readable.
awslocal ssm put-parameter \
	--name /sluice/salt-key \
	--type SecureString \
	--value "${SLUICE_SALT_KEY:-sluice-localstack-salt-key}" \
	--overwrite >/dev/null
echo "sluice: created SSM parameter /sluice/salt-key"
