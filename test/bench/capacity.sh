#!/usr/bin/env bash
# make bench, "capacity" run ("Benchmark"): N_CAP UserSpaces
# (default 1000) on a plan of CAP running sandboxes (default 100:
# providers[].capacity.maxRunning, and sandboxsim --max-running CAP so that
# any excess is refused and counted), created at apply (the cap holds from
# the first create: the controller evicts as it creates); then the load of
# test/bench/capacity.py: a burst of BURST users (300) within BURST_S (10 s)
# with SESSION_S (15 s) sessions, then a trickle. Printed against the
# issue's targets: connects served / failed (target 0 failed), the highest
# running count at the simulator (its own high-water mark and a 100 ms
# sample; target never above CAP), the wake wait p50/p99 with and without an
# eviction in front, evictions, the controller's CPU and peak RSS.
# Env: N_CAP (1000), CAP (100), EVICT_AFTER (5s), LATENCY_MS (20),
#      MAX_IN_FLIGHT (64), RESYNC (10s), TIMEOUT_S (900, setup), and those of
#      capacity.py (BURST, BURST_S, SESSION_S, HEARTBEAT_S, TRICKLE_RATE,
#      TRICKLE_S, CONNECT_TIMEOUT_S, SEED); SK_BIN_DIR (bin/).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${SK_BIN_DIR:-$root/bin}
n=${N_CAP:-1000}
cap=${CAP:-100}
evict_after=${EVICT_AFTER:-5s}
lat=${LATENCY_MS:-20}
mif=${MAX_IN_FLIGHT:-64}
resync=${RESYNC:-10s}
timeout_s=${TIMEOUT_S:-900}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-bench-cap.XXXXXX")
. "$root/test/bench/common.sh"
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
bench_need_bins

bench_start_db
"$bin/sandboxsim" --listen 127.0.0.1:0 --latency "${lat}ms" --max-running "$cap" 2>"$tmp/sim.log" &
sim_pid=$!
sim=$(log_wait "$tmp/sim.log" "$SIM_LISTENING" "$sim_pid") || {
	echo "bench: sandboxsim did not start" >&2
	exit 1
}
bench_config "$tmp/config.yaml" "$mif" "$resync"
printf '    capacity: {maxRunning: %d, evictAfter: %s}\n' "$cap" "$evict_after" >"$tmp/cap.yaml"
sed -i "/sandboxTimeout: 1h/r $tmp/cap.yaml" "$tmp/config.yaml"

echo "bench: capacity: applying $n UserSpaces (maxRunning $cap)"
for i in $(seq 0 $((n - 1))); do
	printf -- '---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: b%05d\nspec:\n  userID: b%05d\n  lifecycle: {idleTimeout: 10m}\n' "$i" "$i"
done >"$tmp/users.yaml"
"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/users.yaml" >/dev/null
t0=$(date +%s.%N)
bench_start_keeper "$tmp/config.yaml"
bench_wait_ready "$n" "$t0" "$timeout_s"
setup=$(calc "$(date +%s.%N) - $t0")
setup_evictions=$(metric_sum spacekeeper_evictions_total)
curl -s -XPOST "$sim/_sim/stats/reset" >/dev/null
c0=$(cpu_ticks "$keeper_pid")
echo "bench: capacity: all $n bound in ${setup}s ($setup_evictions evictions); the load"
out=$(python3 "$root/test/bench/capacity.py" "http://127.0.0.1:$cport" "$sim" "$cap")
c1=$(cpu_ticks "$keeper_pid")
bench_keeper_alive
stats=$(curl -s "$sim/_sim/stats")
evictions=$(calc "$(metric_sum spacekeeper_evictions_total) - $setup_evictions")
clk=$(getconf CLK_TCK)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$keeper_pid/status")
g() { json "d.$1" <<<"$out"; }
failed=$(json "Object.values(d.failed).reduce((a,b)=>a+b,0)" <<<"$out")
simmax=$(json "d.max_running" <<<"$stats")
refused=$(json "JSON.stringify(d.refused)" <<<"$stats")

printf '\nspacekeeper capacity benchmark: N=%d, maxRunning=%d, burst %s users in %ss, %ss sessions, then %s/s for %ss\n' \
	"$n" "$cap" "${BURST:-300}" "${BURST_S:-10}" "${SESSION_S:-15}" "${TRICKLE_RATE:-1}" "${TRICKLE_S:-60}"
printf '  setup: %d spaces bound                %8.1f s  (%s evictions while creating)\n' "$n" "$setup" "$setup_evictions"
printf '  sessions                              %8s    (%s s)\n' "$(g sessions)" "$(g elapsed_s)"
printf '  connects served / failed              %8s / %s  (target 0 failed: %s) %s\n' "$(g served)" \
	"$failed" "$(met "$failed == 0")" "$(json "JSON.stringify(d.failed)" <<<"$out")"
printf '  max running at the simulator          %8s    (sampled every 100 ms: %s; target <= %d: %s)\n' \
	"$simmax" "$(g running_max_sampled)" "$cap" "$(met "$simmax <= $cap && $(g running_max_sampled) <= $cap")"
printf '  provider refusals                     %8s\n' "$refused"
printf '  wake wait, eviction in front  p50/p99 %8s / %s s  (%s wakes)\n' "$(g wake_evict_p50)" \
	"$(g wake_evict_p99)" "$(g wake_evict_n)"
printf '  wake wait, a free slot        p50/p99 %8s / %s s  (%s wakes)\n' "$(g wake_free_p50)" \
	"$(g wake_free_p99)" "$(g wake_free_n)"
printf '  evictions during the load             %8s\n' "$evictions"
printf '  controller CPU (load)                 %8s s\n' "$(calc "($c1 - $c0) / $clk")"
printf '  controller peak RSS (VmHWM)           %8.1f MB\n' "$(calc "$hwm / 1024")"
