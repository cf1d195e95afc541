#!/usr/bin/env bash
# make bench: migrations ("Speed"). N spaces (default 200) on a
# sandboxsim of flavour e2b, each with a workspace of SIZE_MB (default 10)
# seeded through envd's POST /files, move to a second sandboxsim (flavour
# cube) by changing spec.provider (whenIdleFor 0s, keepSourceFor 0s: the
# source is deleted as soon as the target is bound). Prints the total time
# (apply to the last migration completed, from the controller's
# spacekeeper_migrations_total{result="completed"}), throughput in MB/s and
# spaces/min, the controller's CPU time as a share of the wall time and per
# GB moved, each simulator's CPU time (all from /proc/PID/stat) and the
# controller's peak RSS (VmHWM). Targets: CPU < 20% of wall (the copy is
# bounded by the simulators), RSS < 64 MB. Then moves the spaces back with
# FILES_MS added to every data-plane file request, the provider-bound case
# the target assumes. Figures only, no timed assertion.
# Env: N, SIZE_MB, FILES_MS (default 1000), WORKERS (default 16), SK_BIN_DIR (default bin/), TIMEOUT_S (default 1800).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${SK_BIN_DIR:-$root/bin}
n=${N:-200}
size_mb=${SIZE_MB:-10}
workers=${WORKERS:-16}
timeout_s=${TIMEOUT_S:-1800}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-migrate.XXXXXX")
. "$root/test/bench/common.sh"
sim2_pid=
trap 'kill -TERM $sim2_pid 2>/dev/null; bench_cleanup' EXIT
trap 'exit 130' INT TERM
bench_need_bins

bench_start_db
bench_start_sim 0
src_sim=$sim
"$bin/sandboxsim" --listen 127.0.0.1:0 --flavor cube 2>"$tmp/sim2.log" &
sim2_pid=$!
dst_sim=$(log_wait "$tmp/sim2.log" "$SIM_LISTENING" "$sim2_pid") || {
	echo "bench: the second sandboxsim did not start" >&2
	exit 1
}

cat >"$tmp/config.yaml" <<EOF
apiVersion: spacekeeper.dev/v1alpha1
kind: ControllerConfig
providers:
  - name: e2b
    type: e2b
    apiURL: $src_sim
    sandboxURL: $src_sim
    apiKeyEnv: E2B_API_KEY
    maxInFlight: 64
    qps: 100000
    burst: 100000
    requestTimeout: 60s
    sandboxTimeout: 1h
  - name: cube
    type: cube
    apiURL: $dst_sim
    sandboxURL: $dst_sim
    apiKeyEnv: E2B_API_KEY
    maxInFlight: 64
    qps: 100000
    burst: 100000
    requestTimeout: 60s
    sandboxTimeout: 1h
controller:
  workers: $workers
  resyncPeriod: 10s
  listen: 127.0.0.1:0
EOF

spaces() { # PROVIDER
	for i in $(seq 0 $((n - 1))); do
		printf -- '---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: m%04d\nspec:\n  userID: m%04d\n  provider: %s\n  lifecycle: {idleTimeout: 0s}\n  migration: {whenIdleFor: 0s, keepSourceFor: 0s}\n' "$i" "$i" "$1"
	done
}

echo "bench: $n spaces on e2b"
spaces e2b >"$tmp/users.yaml"
"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/users.yaml" >/dev/null
bench_start_keeper "$tmp/config.yaml"
bench_wait_ready "$n" "$(date +%s.%N)" 600

echo "bench: seeding $size_mb MB per space through envd POST /files"
head -c $((size_mb * 1024 * 1024)) /dev/urandom >"$tmp/blob"
"$bin/spacectl" --mongodb-uri "$uri" get userspaces -o json |
	json 'd.items.map(i=>i.status.sandboxID).join("\n")' >"$tmp/ids"
while read -r id; do
	curl -sf -XPOST "$src_sim/files?path=/home/user/blob.bin" -H "E2b-Sandbox-Id: $id" \
		-H "E2b-Sandbox-Port: 49983" -H "Content-Type: application/octet-stream" \
		--data-binary @"$tmp/blob" >/dev/null || {
		echo "bench: upload to $id failed" >&2
		exit 1
	}
done <"$tmp/ids"
[ "$(wc -l <"$tmp/ids")" -eq "$n" ] || { echo "bench: not every space is bound" >&2; exit 1; }

# metric0 NAME [FILTER]: metric_sum, 0 for a series not exported yet (-1).
metric0() {
	local v
	v=$(metric_sum "$@")
	[ "$v" = -1 ] && v=0
	echo "$v"
}

# move PROVIDER LABEL: moves every space to PROVIDER and prints the figures
# of that move (counters are taken as differences, so moves can follow one
# another).
move() {
	local to=$1 label=$2 done0 ab0 bytes0 c0 s0 d0 t0 done_n aborted t1 c1 s1 d1
	local hz wall cpu src_cpu dst_cpu share rss_kb bytes mb gb
	echo "bench: $label: moving $n spaces to $to (spec.provider)"
	done0=$(metric0 spacekeeper_migrations_total 'result="completed"')
	ab0=$(metric0 spacekeeper_migrations_total 'result="aborted"')
	bytes0=$(metric0 spacekeeper_migration_bytes_total)
	c0=$(cpu_ticks "$keeper_pid")
	s0=$(cpu_ticks "$sim_pid")
	d0=$(cpu_ticks "$sim2_pid")
	t0=$(date +%s.%N)
	spaces "$to" >"$tmp/users.yaml"
	"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/users.yaml" >/dev/null
	while :; do
		done_n=$(($(metric_sum spacekeeper_migrations_total 'result="completed"') - done0))
		aborted=$(($(metric_sum spacekeeper_migrations_total 'result="aborted"') - ab0))
		[ "$((done_n + aborted))" -ge "$n" ] && break
		bench_keeper_alive
		if [ "$(calc "$(date +%s.%N) - $t0 > $timeout_s")" = 1 ]; then
			echo "bench: only $done_n/$n migrations completed after ${timeout_s}s" >&2
			exit 1
		fi
		sleep 0.2
	done
	t1=$(date +%s.%N)
	c1=$(cpu_ticks "$keeper_pid")
	s1=$(cpu_ticks "$sim_pid")
	d1=$(cpu_ticks "$sim2_pid")
	hz=$(getconf CLK_TCK)
	wall=$(calc "$t1 - $t0")
	cpu=$(calc "($c1 - $c0) / $hz")
	src_cpu=$(calc "($s1 - $s0) / $hz")
	dst_cpu=$(calc "($d1 - $d0) / $hz")
	share=$(calc "100 * $cpu / $wall")
	rss_kb=$(awk '/^VmHWM:/ { print $2 }' "/proc/$keeper_pid/status")
	bytes=$(calc "$(metric_sum spacekeeper_migration_bytes_total) - $bytes0")
	mb=$(calc "$bytes / 1048576")
	gb=$(calc "$bytes / 1073741824")
	echo "bench: $label: $done_n/$n spaces moved ($aborted aborted) in ${wall}s"
	echo "bench: $label: $mb MB copied, $(calc "$mb / $wall") MB/s, $(calc "60 * $done_n / $wall") spaces/min"
	echo "bench: $label: controller CPU ${cpu}s = ${share}% of wall (target < 20%), peak RSS $(calc "$rss_kb / 1024") MB (target < 64)"
	echo "bench: $label: CPU per GB moved: controller $(calc "$cpu / $gb")s, e2b sim $(calc "$src_cpu / $gb")s, cube sim $(calc "$dst_cpu / $gb")s (sims ${src_cpu}s + ${dst_cpu}s = $(calc "100 * ($src_cpu + $dst_cpu) / $wall")% of wall)"
	[ "$aborted" -eq 0 ] || { echo "bench: $aborted migrations aborted" >&2; exit 1; }
}

# 1. In-memory simulators with no latency: every component is CPU-bound and
# the controller, which touches each byte more than either simulator (see
# docs/migration.md), has the largest share.
move cube migrate

# 2. The same spaces back to e2b with FILES_MS (default 1000) added to every
# data-plane file request (GET/POST /files) on both simulators: about 10 MB/s
# per stream, a provider that is the bottleneck, as the target assumes.
files_ms=${FILES_MS:-1000}
for s in "$src_sim" "$dst_sim"; do
	curl -sf -XPOST "$s/_sim/faults" -H "Content-Type: application/json" \
		-d "{\"latency\": {\"files\": {\"fixed_ms\": $files_ms}}}" >/dev/null || {
		echo "bench: cannot set the data-plane latency on $s" >&2
		exit 1
	}
done
# Before the second apply, the first move's tail (the sources' deletion and
# its status writes) is done: an apply racing it fails with a conflict.
t0=$(date +%s.%N)
until [ "$(curl -s "$dst_sim/_sim/sandboxes" | json 'd.filter(s=>s.state==="running").length')" -ge "$n" ] &&
	[ "$(curl -s "$src_sim/_sim/sandboxes" | json 'd.filter(s=>s.state==="running"||s.state==="paused").length')" = 0 ]; do
	bench_keeper_alive
	if [ "$(calc "$(date +%s.%N) - $t0 > 120")" = 1 ]; then
		echo "bench: the sources on e2b are not all deleted after 120s" >&2
		exit 1
	fi
	sleep 0.5
done
bench_wait_ready "$n" "$t0" 120
sleep 2
move e2b "migrate (+${files_ms}ms per file request)"
