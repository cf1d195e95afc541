#!/usr/bin/env bash
# make bench: controller convergence benchmark ("Speed").
# Applies N UserSpaces (default 2000) to a fresh FerretDB, starts sandboxsim
# with 20 ms latency per control-plane call and spacekeeper (workers =
# maxInFlight), and prints: time to converge (every object Ready), the lower
# bound N x calls-per-user x latency / maxInFlight, their ratio, API calls per
# user by endpoint (from /_sim/stats), the controller's CPU seconds and peak
# RSS (VmHWM), the CPU seconds FerretDB, sandboxsim and the controller spent
# while converging (FerretDB's also by command, from its own pprof profile:
# db_profile_start in common.sh), and the calls one steady-state resync makes.
# Convergence is detected from the controller's own gauge
# spacekeeper_userspaces{ready="true"} (its informer cache; scraped every
# 100 ms), not by listing every object from FerretDB, which would steal the
# CPU the benchmark measures; one list at the end confirms it in the database.
# Env: N (default 2000), MAX_IN_FLIGHT (default 64), LATENCY_MS (default 20),
#      RESYNC (default 10s), SK_BIN_DIR (default bin/), TIMEOUT_S (default 900).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${SK_BIN_DIR:-$root/bin}
n=${N:-2000}
mif=${MAX_IN_FLIGHT:-64}
lat=${LATENCY_MS:-20}
resync=${RESYNC:-10s}
timeout_s=${TIMEOUT_S:-900}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-bench.XXXXXX")
. "$root/test/bench/common.sh"
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
bench_need_bins

bench_start_db
bench_start_sim "$lat"
bench_config "$tmp/config.yaml" "$mif" "$resync"

echo "bench: applying $n UserSpaces"
for i in $(seq 0 $((n - 1))); do
	printf -- '---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: b%05d\nspec:\n  userID: b%05d\n' "$i" "$i"
done >"$tmp/users.yaml"
"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/users.yaml" >/dev/null

curl -s -XPOST "$sim/_sim/stats/reset" >/dev/null
echo "bench: starting spacekeeper (workers = maxInFlight = $mif, ${lat}ms per call)"
db_c0=$(cpu_ticks "$db_pid")
db_profile_start
sim_c0=$(cpu_ticks "$sim_pid")
t0=$(date +%s.%N)
bench_start_keeper "$tmp/config.yaml"
bench_wait_ready "$n" "$t0" "$timeout_s"
r=$n
t1=$(date +%s.%N)
db_c1=$(cpu_ticks "$db_pid")
db_profile_stop "$n" >"$tmp/db-breakdown.txt"
sim_c1=$(cpu_ticks "$sim_pid")
keeper_c1=$(cpu_ticks "$keeper_pid")
# The controller's write commands to FerretDB while converging, by collection
# (spacekeeper_store_write_commands_total: counted as they leave, a command
# of many documents once), read before anything else writes.
store_writes=$(metric_sum spacekeeper_store_write_commands_total)
store_by_coll=$(for c in userspaces claims events other; do
	printf '%s %s, ' "$c" "$(metric_sum spacekeeper_store_write_commands_total "collection=\"$c\"")"
done)
store_reads=$(metric_sum spacekeeper_store_read_commands_total)
reads_by_coll=$(for c in userspaces claims events other; do
	printf '%s %s, ' "$c" "$(metric_sum spacekeeper_store_read_commands_total "collection=\"$c\"")"
done)
inf_c1=$(thread_cpu_ns "$keeper_pid" sk-informer)
converge=$(calc "$t1 - $t0")
stats=$(curl -s "$sim/_sim/stats")

# The metric comes from the controller's cache: confirm once in the database
# (one list), and take the last Ready transition the objects record.
"$bin/spacectl" --mongodb-uri "$uri" get userspaces -o json >"$tmp/get.json" 2>"$tmp/get.err" || {
	echo "bench: spacectl get userspaces failed after convergence:" >&2
	cat "$tmp/get.err" >&2
	exit 1
}
ready_cond='(u=>((u.status||{}).conditions||[]).find(c=>c.type==="Ready"))'
db_sum=$(json "(r=>r.length+' '+r.reduce((m,u)=>Math.max(m,Date.parse($ready_cond(u).lastTransitionTime)||0),0)/1000)(d.items.filter(u=>($ready_cond(u)||{}).status==='True'))" <"$tmp/get.json")
read -r db_ready last_ready <<<"$db_sum"
if [ "$db_ready" -lt "$n" ]; then
	echo "bench: FAIL: the metric lied: spacekeeper_userspaces said $r/$n Ready," \
		"but the database has only $db_ready/$n Ready; some that are not:" >&2
	json "d.items.filter(u=>($ready_cond(u)||{}).status!=='True').slice(0,10).map(u=>'  '+u.metadata.name+' phase='+(u.status||{}).phase+' Ready='+JSON.stringify($ready_cond(u)||null)).join('\\n')" <"$tmp/get.json" >&2
	exit 1
fi

calls=$(sim_calls "$stats")
per_user=$(calc "$calls / $n")
bound=$(calc "$calls * $lat / 1000 / $mif")
ratio=$(calc "$converge / $bound")

# Steady state: three resync periods with nothing to change, divided by the
# number of observer passes the controller made meanwhile.
list_passes() {
	curl -s "http://127.0.0.1:$port/metrics" | awk '/^spacekeeper_provider_list_total/ { s += $2 } END { print s + 0 }'
}
# The informer's polls meanwhile: each re-reads the last `lookback` (256)
# versions, so its CPU per poll / 256 is its cost per object read.
informer_polls() {
	curl -s "http://127.0.0.1:$port/metrics" | awk '/^spacekeeper_informer_polls_total/ { s += $2 } END { print s + 0 }'
}
sleep 2
curl -s -XPOST "$sim/_sim/stats/reset" >/dev/null
p0=$(list_passes)
ip0=$(informer_polls)
inf_s0=$(thread_cpu_ns "$keeper_pid" sk-informer)
sleep $((3 * ${resync%s}))
p1=$(list_passes)
ip1=$(informer_polls)
inf_s1=$(thread_cpu_ns "$keeper_pid" sk-informer)
ipolls=$((ip1 - ip0))
[ "$ipolls" -gt 0 ] || ipolls=1
reread=$((n < 256 ? n : 256))
steady=$(curl -s "$sim/_sim/stats")
passes=$((p1 - p0))
[ "$passes" -gt 0 ] || passes=1

clk=$(getconf CLK_TCK)
read -r ut st < <(awk '{print $14, $15}' "/proc/$keeper_pid/stat")
cpu=$(calc "($ut + $st) / $clk")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$keeper_pid/status")

printf '\nspacekeeper convergence benchmark: N=%d, maxInFlight=%d, latency=%dms\n' "$n" "$mif" "$lat"
printf '  time to converge (all Ready)     %8.2f s  (target <= 4 s at N=2000: %s)\n' "$converge" \
	"$(met "$converge <= 4")"
printf '  control-plane calls per user     %8s\n' "$per_user"
printf '  lower bound N*calls*lat/mif      %8.2f s\n' "$bound"
printf '  ratio (target <= 1.5)            %8s\n' "$ratio"
printf '  controller CPU                   %8s s\n' "$cpu"
printf '  controller peak RSS (VmHWM)      %8.1f MB\n' "$(calc "$hwm / 1024")"
printf '  last Ready transition (database) %8.2f s  (detection lag %.2f s)\n' \
	"$(calc "$last_ready - $t0")" "$(calc "$t1 - $last_ready")"
printf '  controller CPU (convergence)     %8s s\n' "$(calc "$keeper_c1 / $clk")"
printf '  informer CPU (convergence)       %8.3f s  (%.1f us per object)\n' \
	"$(calc "$inf_c1 / 1e9")" "$(calc "$inf_c1 / 1e3 / $n")"
printf '  informer CPU (steady poll)       %8.2f ms (%d polls of %d objects: %.1f us per object)\n' \
	"$(calc "($inf_s1 - $inf_s0) / 1e6 / $ipolls")" "$ipolls" "$reread" \
	"$(calc "($inf_s1 - $inf_s0) / 1e3 / $ipolls / $reread")"
printf '  FerretDB CPU (convergence)       %8s s  (%.2f ms per user, target <= 2)\n' \
	"$(calc "($db_c1 - $db_c0) / $clk")" "$(calc "($db_c1 - $db_c0) * 1000 / $clk / $n")"
cat "$tmp/db-breakdown.txt"
if [ "$store_writes" -ge 0 ]; then
	printf '  FerretDB write commands per user %8s    (target <= 3: %s; %s)\n' \
		"$(calc "$store_writes / $n")" "$(met "$store_writes / $n <= 3")" "${store_by_coll%, }"
fi
if [ "$store_reads" -ge 0 ]; then
	printf '  FerretDB read commands per user  %8s    (%s)\n' \
		"$(calc "$store_reads / $n")" "${reads_by_coll%, }"
fi
printf '  sandboxsim CPU (convergence)     %8s s\n' "$(calc "($sim_c1 - $sim_c0) / $clk")"
echo "  calls per user by endpoint (convergence):"
json "Object.entries(d.requests).map(([k,v])=>'    '+k.padEnd(12)+' '+(Object.values(v).reduce((x,y)=>x+y,0)/$n).toFixed(3)+'  '+JSON.stringify(v)).join('\n')" <<<"$stats"
echo "  one steady-state resync (${resync}; averaged over $passes passes), calls by endpoint:"
json "Object.entries(d.requests).map(([k,v])=>'    '+k.padEnd(12)+' '+(Object.values(v).reduce((x,y)=>x+y,0)/$passes).toFixed(1)).join('\n') || '    (no calls)'" <<<"$steady"
mut=$(json "['create','kill','pause','connect','resume'].reduce((a,k)=>a+(d.requests[k]?Object.values(d.requests[k]).reduce((x,y)=>x+y,0):0),0)/$passes" <<<"$steady")
lists=$(json "['list','list_v1'].reduce((a,k)=>a+(d.requests[k]?Object.values(d.requests[k]).reduce((x,y)=>x+y,0):0),0)/$passes" <<<"$steady")
printf '  steady resync: mutating calls %s (target 0), list calls %s (target <= %d)\n' \
	"$mut" "$lists" $(((n + 99) / 100 + 1))
