#!/usr/bin/env bash
# Measures the gateway's own cost: a thin wrapper around `go run ./test/bench`
# (test/bench/main.go says what it runs and which flags and environment
# variables it reads).
#
#   test/bench/run.sh                        # about 2.5 minutes
#   ROUNDS=3 DURATION=10s test/bench/run.sh  # longer, steadier
#   test/bench/run.sh -rounds 1 -d 2s        # a quick look
set -euo pipefail
cd "$(dirname "$0")/../.."
exec go run ./test/bench "$@"
