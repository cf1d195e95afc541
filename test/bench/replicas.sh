#!/usr/bin/env bash
# make bench: replicas share one provider list. Applies N
# UserSpaces (default 5000), starts sandboxsim (LATENCY_MS per call) and
# REPLICAS spacekeeper processes (default 3) against one FerretDB with
# SHARDS shards (default 64), waits until every object is Ready, then
# watches WINDOW resync periods (default 3) of steady state and prints: how
# many Ready objects each replica's cache counts 10 s after the store did, the
# provider list requests the simulator answered (one replica's worth, not
# REPLICAS'), what each replica did (own lists, shared lists read, the time a
# read took), what publishing cost the holder of shard 0 (bytes, time), and
# each replica's resident memory (a reader holds only its shards' sandboxes).
# Env: N, REPLICAS, SHARDS, RESYNC (default 10s), WINDOW, LATENCY_MS (default
#      2), SK_BIN_DIR (default bin/), TIMEOUT_S (default 900).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${SK_BIN_DIR:-$root/bin}
n=${N:-5000}
replicas=${REPLICAS:-3}
shards=${SHARDS:-64}
resync=${RESYNC:-10s}
window=${WINDOW:-3}
lat=${LATENCY_MS:-2}
timeout_s=${TIMEOUT_S:-900}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-bench.XXXXXX")
. "$root/test/bench/common.sh"
pids=()
ports=()

replicas_cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	bench_cleanup
}
trap replicas_cleanup EXIT
trap 'exit 130' INT TERM
bench_need_bins

bench_start_db
bench_start_sim "$lat"
bench_config "$tmp/config.yaml" 32 "$resync"
printf '  shards: %d\n' "$shards" >>"$tmp/config.yaml"

echo "bench: applying $n UserSpaces"
for i in $(seq 0 $((n - 1))); do
	printf -- '---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: r%05d\nspec:\n  userID: r%05d\n' "$i" "$i"
done >"$tmp/users.yaml"
"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/users.yaml" >/dev/null

echo "bench: starting $replicas replicas ($shards shards, resync $resync)"
export E2B_API_KEY=e2b_0000000000000000000000000000000000000000
for r in $(seq 0 $((replicas - 1))); do
	"$bin/spacekeeper" --config "$tmp/config.yaml" --mongodb-uri "$uri" --id "replica-$r" \
		--log-level debug --connect-listen 127.0.0.1:0 >"$tmp/replica-$r.log" 2>&1 &
	pids+=($!)
	ports+=("$(log_wait "$tmp/replica-$r.log" "$KEEPER_STARTED" "$!")")
done

# replica_metric R NAME FILTER: the sum of a metric's matching series on replica R.
replica_metric() {
	port=${ports[$1]} metric_sum "$2" "${3:-}"
}

# Ready as stored (spacectl), not a replica's gauge: a replica's informer
# counts every object, the ones other replicas reconcile too, and may lag
# their writes.
ready_stored() {
	"$bin/spacectl" --mongodb-uri "$uri" get userspaces -o json |
		json "d.items.filter(u=>((u.status||{}).conditions||[]).some(c=>c.type==='Ready'&&c.status==='True')).length"
}
t0=$(date +%s.%N)
while :; do
	ready=$(ready_stored)
	[ "$ready" -ge "$n" ] && break
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "bench: a replica died" >&2; exit 1; }; done
	if [ "$(calc "$(date +%s.%N) - $t0 > $timeout_s")" = 1 ]; then
		echo "bench: only $ready/$n Ready after ${timeout_s}s" >&2
		exit 1
	fi
	sleep 1
done
converge=$(calc "$(date +%s.%N) - $t0")

# Every replica's informer holds every object: CACHE_WAIT s (default 10)
# after the store, each should count them all Ready (another replica's
# writes reach it by poll).
cache_wait=${CACHE_WAIT:-10}
sleep "$cache_wait"
cached=()
for r in $(seq 0 $((replicas - 1))); do
	cached+=("$(replica_metric "$r" spacekeeper_userspaces 'ready="true"')")
done
curl -s -XPOST "$sim/_sim/stats/reset" >/dev/null
lists0=() reads0=() marks=()
for r in $(seq 0 $((replicas - 1))); do
	lists0+=("$(replica_metric "$r" spacekeeper_provider_list_total 'result="success"')")
	reads0+=("$(replica_metric "$r" spacekeeper_shared_list_total 'op="read",result="success"')")
	marks+=("$(wc -l <"$tmp/replica-$r.log")")
done
secs=$((window * ${resync%s}))
sleep "$secs"
stats=$(curl -s "$sim/_sim/stats")
list_requests=$(sim_calls "$stats" '["list","list_v1"]')

# log_avg R MSG FIELD: the mean of FIELD=V over the window's MSG lines of replica R.
log_avg() {
	tail -n +"$((${marks[$1]} + 1))" "$tmp/replica-$1.log" | grep "msg=\"$2\"" |
		sed -n "s/.* $3=\([0-9]*\).*/\1/p" | awk '{ s += $1; k++ } END { print k ? s / k : 0 }'
}

printf '\nspacekeeper replicas benchmark: N=%d, %d replicas, %d shards, resync %s, latency %dms\n' \
	"$n" "$replicas" "$shards" "$resync" "$lat"
printf '  time to converge (all Ready)     %8.2f s\n' "$converge"
printf '  provider list requests in %ds    %8d  (GET /v2/sandboxes pages, every replica together)\n' \
	"$secs" "$list_requests"
for r in $(seq 0 $((replicas - 1))); do
	l=$(calc "$(replica_metric "$r" spacekeeper_provider_list_total 'result="success"') - ${lists0[$r]}")
	d=$(calc "$(replica_metric "$r" spacekeeper_shared_list_total 'op="read",result="success"') - ${reads0[$r]}")
	held=$(replica_metric "$r" spacekeeper_shards_held)
	rss=$(awk '/VmRSS/ {print $2}' "/proc/${pids[$r]}/status")
	printf '  replica-%d: %2d shards, %d Ready in its cache %d s after the store, listed %d, read %d shared (%s ms each), RSS %.1f MB' \
		"$r" "$held" "${cached[$r]}" "$cache_wait" "$l" "$d" "$(log_avg "$r" "shared list read" took_ms)" "$(calc "$rss / 1024")"
	if [ "$l" -gt 0 ]; then
		printf ', published %s bytes in %s ms per pass' \
			"$(log_avg "$r" "shared list published" bytes)" "$(log_avg "$r" "shared list published" took_ms)"
	fi
	printf '\n'
done
