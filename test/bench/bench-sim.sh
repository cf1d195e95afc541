#!/usr/bin/env bash
# make bench-sim: sandboxsim throughput and memory with 100,000 sandboxes.
# Creates them through the API (reporting creation throughput), then measures
# GET /sandboxes/{id} and the per-user metadata list GET /v2/sandboxes?metadata=
# with keep-alive connections, reads VmRSS/VmHWM, checks that 64 concurrent
# calls each delayed 20 ms by --latency overlap, and prints PASS/FAIL against
# the targets (>= 5,000 requests/s, 100,000 sandboxes held).
# Env: SK_SIM_BIN (default bin/sandboxsim), SK_LOADGEN (default
# build/rel/tools/loadgen, built when missing), BENCH_SECONDS (default 5),
# BENCH_CONC (default 16).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
sim_bin=${SK_SIM_BIN:-bin/sandboxsim}
loadgen=${SK_LOADGEN:-build/rel/tools/loadgen}
secs=${BENCH_SECONDS:-5}
conc=${BENCH_CONC:-16}
total=100000
target_rps=5000
key='X-API-Key: e2b_0000000000000000000000000000000000000000'
tmp=$(mktemp -d)
pids=()
fail=0

cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

if [ ! -x "$loadgen" ]; then
	make --no-print-directory "$loadgen" >/dev/null || exit 1
fi
[ -x "$sim_bin" ] || { echo "bench-sim: $sim_bin not built" >&2; exit 1; }

# start_sim LOG ARGS...: starts sandboxsim on a free port, sets $base and $pid.
start_sim() {
	local log=$1
	shift
	"$sim_bin" --listen 127.0.0.1:0 "$@" 2>"$log" &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 100); do
		base=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$log")
		[ -n "$base" ] && return 0
		sleep 0.1
	done
	echo "bench-sim: sandboxsim did not start: $(cat "$log")" >&2
	exit 1
}

rps_of() { sed -n 's/.*rps=\([0-9]*\).*/\1/p' <<<"$1"; }

verdict() { # name value target unit
	if [ "$2" -ge "$3" ]; then
		printf '  %-42s %8s %-6s (target >= %s)  PASS\n' "$1" "$2" "$4" "$3"
	else
		printf '  %-42s %8s %-6s (target >= %s)  FAIL\n' "$1" "$2" "$4" "$3"
		fail=1
	fi
}

echo "bench-sim: $(nproc) CPUs, $conc keep-alive connections, ${secs}s per phase"
start_sim "$tmp/sim.log" --seed 1
echo "== create $total sandboxes through POST /sandboxes"
out=$("$loadgen" --url "$base" --path /sandboxes --method POST -H "$key" -c "$conc" \
	--count "$total" --body '{"templateID":"base","timeout":86400,"autoPause":true,"metadata":{"user_id":"u{n}","managed_by":"spacekeeper"}}')
echo "  $out"
create_rps=$(rps_of "$out")
rss_created=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
curl -s "$base/_sim/sandboxes" | grep -o '"sandboxID":"[a-z0-9]*"' |
	sed 's/.*:"\(.*\)"/\/sandboxes\/\1/' >"$tmp/paths"
held=$(wc -l <"$tmp/paths")

echo "== GET /sandboxes/{id} (random ids of the $held)"
shuf "$tmp/paths" -o "$tmp/paths" 2>/dev/null
out=$("$loadgen" --url "$base" --paths "$tmp/paths" -H "$key" -c "$conc" --duration "$secs")
echo "  $out"
get_rps=$(rps_of "$out")

echo "== GET /v2/sandboxes?metadata=user_id%3Du{n} (index lookup per user)"
out=$("$loadgen" --url "$base" --path '/v2/sandboxes?metadata=user_id%3Du{n}' --mod "$total" \
	-H "$key" -c "$conc" --duration "$secs")
echo "  $out"
list_rps=$(rps_of "$out")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")

echo "== --latency 20ms with 64 concurrent requests (delays must overlap)"
start_sim "$tmp/sim-lat.log" --latency 20ms
out=$("$loadgen" --url "$base" --path /v2/sandboxes -H "$key" -c 64 --duration 3)
echo "  $out"
lat_rps=$(rps_of "$out")

echo
echo "results:"
verdict "sandboxes held in memory" "$held" "$total" ""
verdict "create (POST /sandboxes)" "$create_rps" "$target_rps" "req/s"
verdict "get (GET /sandboxes/{id})" "$get_rps" "$target_rps" "req/s"
verdict "list by user (GET /v2/sandboxes?metadata)" "$list_rps" "$target_rps" "req/s"
verdict "64 x 20ms concurrent (ideal 3200)" "$lat_rps" 2000 "req/s"
printf '  %-42s %8s kB (%s bytes/sandbox, after creating them)\n' \
	"RSS with $held sandboxes" "$rss_created" "$((rss_created * 1024 / (held > 0 ? held : 1)))"
printf '  %-42s %8s kB (VmHWM %s kB; the peak is the /_sim/sandboxes dump)\n' \
	"RSS at the end" "$rss" "$hwm"
if [ "$fail" -eq 0 ]; then echo "bench-sim: PASS"; else echo "bench-sim: FAIL"; fi
exit "$fail"
