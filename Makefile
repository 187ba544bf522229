# Builds the Lambda functions. `sam build` calls the build-<LogicalId> targets
# (BuildMethod: makefile) with ARTIFACTS_DIR set; `make build` builds host
# bootstraps into bin/ for local runs and the Lambda tests.

GO       ?= go
GOFLAGS_LAMBDA := -tags lambda.norpc -trimpath -ldflags "-s -w"
LAMBDA_ENV     := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
FUNCTIONS      := gateway admin spend

# A LiteLLM config packaged with the gateway (and the spend function, which
# reads its logging callbacks and general_settings.alerting) when it exists;
# point the template's GatewayConfig parameter at config.yaml to use it.
GATEWAY_CONFIG_FILE ?= config.yaml

.PHONY: build build-GatewayFunction build-AdminFunction build-SpendFunction test clean

build-GatewayFunction:
	$(LAMBDA_ENV) $(GO) build $(GOFLAGS_LAMBDA) -o $(ARTIFACTS_DIR)/bootstrap ./functions/gateway
	if [ -f "$(GATEWAY_CONFIG_FILE)" ]; then cp "$(GATEWAY_CONFIG_FILE)" $(ARTIFACTS_DIR)/config.yaml; fi

build-AdminFunction:
	$(LAMBDA_ENV) $(GO) build $(GOFLAGS_LAMBDA) -o $(ARTIFACTS_DIR)/bootstrap ./functions/admin

build-SpendFunction:
	$(LAMBDA_ENV) $(GO) build $(GOFLAGS_LAMBDA) -o $(ARTIFACTS_DIR)/bootstrap ./functions/spend
	if [ -f "$(GATEWAY_CONFIG_FILE)" ]; then cp "$(GATEWAY_CONFIG_FILE)" $(ARTIFACTS_DIR)/config.yaml; fi

# Host-architecture bootstraps: bin/<function>/bootstrap.
build:
	for f in $(FUNCTIONS); do \
		CGO_ENABLED=0 $(GO) build $(GOFLAGS_LAMBDA) -o bin/$$f/bootstrap ./functions/$$f || exit 1; \
	done

test:
	./test/run.sh

clean:
	rm -rf bin .aws-sam
