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
