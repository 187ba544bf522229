#!/usr/bin/env bash
# Measures the gateway's own cost as ../shared/bench/README.md describes:
# the bench mock upstream, net/http's bare ReverseProxy in front of it, and the
# gateway in local mode with one deployment whose api_base is the mock; loadgen
# against the bare proxy and the gateway, interleaved, at c=1 and c=32, JSON
# and SSE. The gateway runs twice: at the default log level (info) and with
# LOG_LEVEL=warn, to show what per-request logging costs.
#
# Not part of CI: the numbers depend on the machine. Only ratios measured in
# one run mean anything (load generator, upstream and proxy share the cores).
#
#   test/bench/run.sh                        # about 2.5 minutes
#   ROUNDS=3 DURATION=10s test/bench/run.sh  # longer, steadier
#
# Environment: BENCH_DIR (default: ../shared/bench beside the repo), ROUNDS (2),
# DURATION (5s), WARMUP (1s), CONCURRENCY ("1 32"), MODES ("json sse"),
# OUT (a directory to keep the raw RESULT lines and logs; default: a temp dir).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bench=${BENCH_DIR:-$(dirname "$repo")/shared/bench}
rounds=${ROUNDS:-2}
dur=${DURATION:-5s}
warm=${WARMUP:-1s}
concs=${CONCURRENCY:-"1 32"}
modes=${MODES:-"json sse"}

for tool in mock bareproxy loadgen; do
	if [[ ! -f "$bench/$tool/main.go" ]]; then
		echo "run.sh: bench tool $tool not found at $bench/$tool (expected ../shared/bench beside the repo; set BENCH_DIR)" >&2
		exit 1
	fi
done
command -v go >/dev/null || { echo "run.sh: go is not on PATH" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench.XXXXXX")
out=${OUT:-$work}
mkdir -p "$out"
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work/bin"
}
trap cleanup EXIT INT TERM

echo "== building (bench tools from $bench)"
mkdir -p "$work/bin"
for tool in mock bareproxy loadgen; do
	(cd "$bench/$tool" && GOFLAGS= go build -o "$work/bin/$tool" .)
done
(cd "$repo" && go build -o "$work/bin/gateway" ./functions/gateway)

# free_port prints a loopback port nothing listens on.
free_port() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "run.sh: no free port found" >&2
	exit 1
}

# wait_up PORT NAME waits until something listens on 127.0.0.1:PORT (bounded).
wait_up() {
	local port=$1 name=$2
	for _ in $(seq 1 200); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return
		fi
		sleep 0.05
	done
	echo "run.sh: $name did not come up on port $port; log:" >&2
	cat "$out/$name.log" >&2
	exit 1
}

mock_port=$(free_port)
"$work/bin/mock" -addr "127.0.0.1:$mock_port" >"$out/mock.log" 2>&1 &
pids+=($!)
wait_up "$mock_port" mock

bare_port=$(free_port)
"$work/bin/bareproxy" -addr "127.0.0.1:$bare_port" -upstream "http://127.0.0.1:$mock_port" >"$out/bareproxy.log" 2>&1 &
pids+=($!)
wait_up "$bare_port" bareproxy

cat >"$work/config.yaml" <<EOF
model_list:
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_base: http://127.0.0.1:$mock_port/v1
      api_key: dummy
EOF

start_gateway() { # name log_level port
	LOG_LEVEL=$2 "$work/bin/gateway" -addr "127.0.0.1:$3" -config "$work/config.yaml" >"$out/$1.log" 2>&1 &
	pids+=($!)
	wait_up "$3" "$1"
	if ! curl -fsS -o /dev/null "http://127.0.0.1:$3/health/readiness"; then
		echo "run.sh: $1 is not ready; log:" >&2
		cat "$out/$1.log" >&2
		exit 1
	fi
}
gw_info_port=$(free_port)
start_gateway gateway-info info "$gw_info_port"
gw_warn_port=$(free_port)
start_gateway gateway-warn warn "$gw_warn_port"

declare -A url=(
	[bare]="http://127.0.0.1:$bare_port/v1/chat/completions"
	[gw_info]="http://127.0.0.1:$gw_info_port/v1/chat/completions"
	[gw_warn]="http://127.0.0.1:$gw_warn_port/v1/chat/completions"
)
targets=(bare gw_info gw_warn)

results="$out/results.txt"
: >"$results"
echo "== go $(go env GOVERSION), $(nproc) cores; $rounds rounds x ${#targets[@]} targets, -d $dur -warmup $warm"
for round in $(seq 1 "$rounds"); do
	for mode in $modes; do
		stream=false
		[[ $mode == sse ]] && stream=true
		for c in $concs; do
			# Interleave, and rotate the order each round so no target always
			# runs first (or right after the same neighbour).
			order=("${targets[@]}")
			for _ in $(seq 2 "$round"); do order=("${order[@]:1}" "${order[0]}"); done
			for t in "${order[@]}"; do
				line=$("$work/bin/loadgen" -url "${url[$t]}" -c "$c" -d "$dur" -warmup "$warm" -stream="$stream" -label "$t")
				echo "$line" | tee -a "$results"
			done
		done
	done
done

# Median per (target, mode, c) of rps and p50 over the rounds, then the ratios.
echo
echo "== summary (median of $rounds rounds; raw lines in $results)"
awk -v concs="$concs" '
function field(name,   i, kv) {
	for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
	return ""
}
function median(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^RESULT/ {
	k = field("label") SUBSEP field("mode") SUBSEP field("c")
	rps[k] = rps[k] " " field("rps"); p50[k] = p50[k] " " field("p50_ms"); p99[k] = p99[k] " " field("p99_ms")
	errs[k] += field("err"); modes[field("mode")] = 1; cs[field("c")] = 1
}
END {
	printf "%-5s %4s | %9s %8s | %9s %8s %6s %8s | %9s %8s %6s %8s | %s\n", "mode", "c", "bare rps", "p50 ms", "info rps", "p50 ms", "ratio", "dp50 ms", "warn rps", "p50 ms", "ratio", "dp50 ms", "errors"
	split("json sse", ml, " ")
	for (mi = 1; mi <= 2; mi++) {
		m = ml[mi]; if (!(m in modes)) continue
		nc = split(concs, cl, " ")
		for (ci = 1; ci <= nc; ci++) {
			c = cl[ci]; if (!(c in cs)) continue
			kb = "bare" SUBSEP m SUBSEP c; ki = "gw_info" SUBSEP m SUBSEP c; kw = "gw_warn" SUBSEP m SUBSEP c
			br = median(rps[kb]); bp = median(p50[kb]); ir = median(rps[ki]); ip = median(p50[ki]); wr = median(rps[kw]); wp = median(p50[kw])
			printf "%-5s %4s | %9.0f %8.3f | %9.0f %8.3f %5.2fx %+8.3f | %9.0f %8.3f %5.2fx %+8.3f | %d\n", m, c, br, bp, ir, ip, ir / br, ip - bp, wr, wp, wr / br, wp - bp, errs[kb] + errs[ki] + errs[kw]
		}
	}
	print ""
	print "goal: at c=32 gateway rps / bare rps >= 0.90 (json and sse); at c=1 gateway p50 - bare p50 <= +0.050 ms"
}' "$results"
