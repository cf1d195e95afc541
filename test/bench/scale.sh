#!/usr/bin/env bash
# make bench: how each cost grows with the number of users ("Scale").
# For each N of NS (default 1000; NS="1000 10000 100000" for the curve), on a
# fresh FerretDB: N UserSpaces of which ACTIVE_PCT percent (default 1, at least
# one) are mode Running with lifecycle.idleTimeout IDLE_S (default 900 s, the
# idle timeout the calls' target is set at) and the
# rest are created asleep (mode Paused: Ready without a sandbox, so that 100,000
# users need no 100,000 sandboxes); sandboxsim at LATENCY_MS (default 20) per
# call; 2 replicas (REPLICAS) sharing SHARDS shards (default 64) with the
# product's default resync (30 s) and informer periods. It measures:
#   - apply: spacectl apply of the N documents into the empty database, then
#     converge: until a replica's cache counts all N Ready (its gauge);
#   - at rest, for STEADY_S seconds (default 60) while the active users connect
#     (test/bench/connectload.c: half of them in a session at any moment,
#     a connect every 2 to 5 s, sessions of 10 to 30 s, so they also sleep):
#     each replica's CPU per minute, resident memory, informer CPU per poll;
#     FerretDB's CPU per minute and the database's size on disk; the
#     provider calls per minute by endpoint (/_sim/stats);
#   - the status page (/), /metrics and `spacectl get us`: size and time;
#   - replica 1 stopped and started again on its connect port: the time to its
#     first answered connect to an awake user and to its "controller started"
#     line (the informer's first full list and the first provider observation).
# The targets are printed beside the figures. The machine is shared: `uptime`'s
# load is printed with the results.
# Env: NS (or N), ACTIVE_PCT, IDLE_S, LATENCY_MS, REPLICAS (default 2), SHARDS,
#      STEADY_S, MAX_IN_FLIGHT (default 64), SK_BIN_DIR, SK_TOOLS_DIR, TIMEOUT_S.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${SK_BIN_DIR:-$root/bin}
tools=${SK_TOOLS_DIR:-$root/build/rel/tools}
ns=${NS:-${N:-1000}}
active_pct=${ACTIVE_PCT:-1}
idle_s=${IDLE_S:-900}
lat=${LATENCY_MS:-20}
replicas=${REPLICAS:-2}
shards=${SHARDS:-64}
steady_s=${STEADY_S:-60}
mif=${MAX_IN_FLIGHT:-64}
timeout_s=${TIMEOUT_S:-1800}
tmp=
. "$root/hack/lib.sh"
. "$root/test/bench/common.sh"
bench_need_bins
if [ ! -x "$tools/connectload" ]; then
	[ -z "${SK_TOOLS_DIR:-}" ] || { echo "scale: $tools/connectload missing" >&2; exit 1; }
	make -C "$root" --no-print-directory build/rel/tools/connectload >/dev/null
fi
clk=$(getconf CLK_TCK)
pids=()
ports=()
cports=()
load_pid=

# scale_cleanup: stops what run_one started (also between two sizes: a replica
# that exits non-zero on its stop must not end the script under set -e).
scale_cleanup() {
	for p in $load_pid "${pids[@]}"; do
		{ kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; } || true
	done
	pids=()
	load_pid=
	[ -n "$tmp" ] && bench_cleanup
	tmp=
}
trap scale_cleanup EXIT
trap 'exit 130' INT TERM

# start_replica R [CONNECT_PORT]: spacekeeper number R; sets pids[R], ports[R], cports[R].
start_replica() {
	local r=$1 listen=127.0.0.1:${2:-0}
	"$bin/spacekeeper" --config "$tmp/config.yaml" --mongodb-uri "$uri" --id "scale-$r" \
		--connect-listen "$listen" >>"$tmp/replica-$r.log" 2>&1 &
	pids[r]=$!
}
# wait_replica R: until its "controller started" line (the informer's first
# full list can take longer than log_wait's 30 s at 10,000 objects and more).
wait_replica() {
	local r=$1 t0
	t0=$(now)
	while [ -z "$(sed -n "$KEEPER_STARTED" "$tmp/replica-$r.log")" ]; do
		if ! kill -0 "${pids[r]}" 2>/dev/null || [ "$(calc "$(now) - $t0 > $timeout_s")" = 1 ]; then
			echo "scale: replica $r did not start" >&2
			tail -20 "$tmp/replica-$r.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	ports[r]=$(sed -n "$KEEPER_STARTED" "$tmp/replica-$r.log" | tail -1)
	cports[r]=$(sed -n "$KEEPER_CONNECT" "$tmp/replica-$r.log" | tail -1)
}
replica_metric() { port=${ports[$1]} metric_sum "$2" "${3:-}"; }
ready_max() {
	local r m=0 v
	for r in "${!pids[@]}"; do
		v=$(port=${ports[r]} ready_metric)
		[ "$v" -gt "$m" ] && m=$v
	done
	echo "$m"
}
now() { date +%s.%N; }
rss_mb() { awk '/VmRSS/ { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status"; }
# timed URL: "bytes seconds" of one GET.
timed() { curl -s -o /dev/null -w '%{size_download} %{time_total}\n' "$1"; }

declare -A res
keys=()
put() {
	res["$1,$2"]=$3
	case " ${keys[*]} " in *" $2 "*) ;; *) keys+=("$2") ;; esac
}

users_yaml() {
	local n=$1 active=$2
	awk -v n="$n" -v active="$active" -v idle="$idle_s" 'BEGIN {
		for (i = 0; i < n; i++) {
			printf "---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: s%06d\nspec:\n  userID: s%06d\n", i, i
			if (i < active)
				printf "  mode: Running\n  lifecycle: {idleTimeout: %ss}\n", idle
			else
				printf "  mode: Paused\n"
		}
	}'
}

run_one() {
	local n=$1 active r t0 t1 t2 a b line
	active=$((n * active_pct / 100))
	[ "$active" -ge 1 ] || active=1
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-scale.XXXXXX")
	echo "scale: N=$n ($active active), $replicas replicas, $shards shards; load: $(uptime | sed 's/.*load average: //')"
	bench_start_db
	bench_start_sim "$lat"
	bench_config "$tmp/config.yaml" "$mif" 30s
	printf '  shards: %d\n' "$shards" >>"$tmp/config.yaml"
	users_yaml "$n" "$active" >"$tmp/users.yaml"

	t0=$(now)
	local db0 db1
	db0=$(cpu_ticks "$db_pid")
	"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/users.yaml" >/dev/null
	t1=$(now)
	db1=$(cpu_ticks "$db_pid")
	put "$n" apply_s "$(calc "$t1 - $t0")"
	put "$n" apply_db_cpu_s "$(calc "($db1 - $db0) / $clk")"
	export E2B_API_KEY=e2b_0000000000000000000000000000000000000000
	for r in $(seq 0 $((replicas - 1))); do start_replica "$r"; done
	for r in $(seq 0 $((replicas - 1))); do wait_replica "$r"; done
	put "$n" started_s "$(calc "$(now) - $t1")"
	while [ "$(ready_max)" -lt "$n" ]; do
		for r in "${!pids[@]}"; do kill -0 "${pids[r]}" 2>/dev/null || {
			echo "scale: replica $r died" >&2
			tail -20 "$tmp/replica-$r.log" >&2
			exit 1
		}; done
		if [ "$(calc "$(now) - $t0 > $timeout_s")" = 1 ]; then
			echo "scale: only $(ready_max)/$n Ready after ${timeout_s}s" >&2
			exit 1
		fi
		sleep 0.2
	done
	t2=$(now)
	local keep_cpu=0 all_cpu
	for r in "${!pids[@]}"; do keep_cpu=$((keep_cpu + $(cpu_ticks "${pids[r]}"))); done
	all_cpu=$((keep_cpu + $(cpu_ticks "$db_pid") - db0 + $(cpu_ticks "$sim_pid")))
	put "$n" converge_s "$(calc "$t2 - $t1")"
	put "$n" empty_to_converged_s "$(calc "$t2 - $t0")"
	put "$n" converge_keeper_share_pct "$(calc "100 * $keep_cpu / $all_cpu")"

	# At rest: the active users connect, everyone else sleeps.
	sleep 5
	"$tools/connectload" --url "http://127.0.0.1:${cports[0]}" --users "$active" --prefix s \
		--digits 6 --mode day --active 0.5 --session 10-30 --interval 2-5 \
		--idle-timeout "$idle_s" --duration "$steady_s" -c 16 >"$tmp/load.out" 2>"$tmp/load.err" &
	load_pid=$!
	curl -s -XPOST "$sim/_sim/stats/reset" >/dev/null
	local -a c0 i0 p0
	local w0 w1 d0 d1
	for r in "${!pids[@]}"; do
		c0[r]=$(cpu_ticks "${pids[r]}")
		i0[r]=$(thread_cpu_ns "${pids[r]}" sk-informer)
		p0[r]=$(replica_metric "$r" spacekeeper_informer_polls_total)
	done
	d0=$(cpu_ticks "$db_pid")
	w0=$(now)
	wait "$load_pid" || { echo "scale: connectload failed" >&2; cat "$tmp/load.err" >&2; exit 1; }
	load_pid=
	w1=$(now)
	d1=$(cpu_ticks "$db_pid")
	local win cpu_max=0 rss_max=0 inf_max=0 v polls
	win=$(calc "$w1 - $w0")
	for r in "${!pids[@]}"; do
		v=$(calc "($(cpu_ticks "${pids[r]}") - ${c0[r]}) / $clk * 60 / $win")
		[ "$(calc "$v > $cpu_max")" = 1 ] && cpu_max=$v
		v=$(rss_mb "${pids[r]}")
		[ "$(calc "$v > $rss_max")" = 1 ] && rss_max=$v
		polls=$(($(replica_metric "$r" spacekeeper_informer_polls_total) - ${p0[r]}))
		[ "$polls" -gt 0 ] || polls=1
		v=$(calc "($(thread_cpu_ns "${pids[r]}" sk-informer) - ${i0[r]}) / 1e6 / $polls")
		[ "$(calc "$v > $inf_max")" = 1 ] && inf_max=$v
	done
	local stats calls_min
	stats=$(curl -s "$sim/_sim/stats")
	put "$n" rest_keeper_cpu_s_per_min "$cpu_max"
	put "$n" rest_keeper_cpu_pct "$(calc "100 * $cpu_max / 60")"
	put "$n" rest_keeper_rss_mb "$rss_max"
	put "$n" rest_informer_ms_per_poll "$inf_max"
	put "$n" rest_db_cpu_s_per_min "$(calc "($d1 - $d0) / $clk * 60 / $win")"
	put "$n" db_size_mb "$(du -sk "$tmp/ferretdb" | awk '{ printf "%.1f\n", $1 / 1024 }')"
	calls_min=$(calc "$(sim_calls "$stats") * 60 / $win")
	put "$n" rest_calls_per_min "$calls_min"
	put "$n" rest_calls_target "$(calc "2 * $active + 0.01 * ($n - $active)")"
	put "$n" rest_calls_by_endpoint "$(json "Object.entries(d.requests).filter(([k])=>$SIM_CONTROL.includes(k)).map(([k,v])=>k+' '+(Object.values(v).reduce((x,y)=>x+y,0)*60/$win).toFixed(1)).join(', ')||'none'" <<<"$stats")"
	line=$(head -1 "$tmp/load.out")
	put "$n" rest_connects "$(sed 's/.*connects=\([0-9]*\).*/\1/' <<<"$line")"

	# What an operator reads.
	read -r a b < <(timed "http://127.0.0.1:${ports[0]}/")
	put "$n" page_kb "$(calc "$a / 1024")"
	put "$n" page_ms "$(calc "$b * 1000")"
	read -r a b < <(timed "http://127.0.0.1:${ports[0]}/metrics")
	put "$n" metrics_kb "$(calc "$a / 1024")"
	put "$n" metrics_ms "$(calc "$b * 1000")"
	t0=$(now)
	"$bin/spacectl" --mongodb-uri "$uri" get us >/dev/null
	put "$n" get_us_s "$(calc "$(now) - $t0")"

	# A restart: replica 1 stops (it releases its shards) and starts again.
	local cp=${cports[1]} user=s000000 first=
	kill -TERM "${pids[1]}"
	wait "${pids[1]}" 2>/dev/null || true
	: >"$tmp/replica-1.log"
	t0=$(now)
	start_replica 1 "$cp"
	while [ -z "$first" ]; do
		kill -0 "${pids[1]}" 2>/dev/null || { echo "scale: restarted replica died" >&2; tail "$tmp/replica-1.log" >&2; exit 1; }
		if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
			"http://127.0.0.1:$cp/v1/users/$user/sandbox?timeout=10s" || true)" = 200 ]; then
			first=$(calc "$(now) - $t0")
		elif [ "$(calc "$(now) - $t0 > $timeout_s")" = 1 ]; then
			echo "scale: the restarted replica answered no connect in ${timeout_s}s" >&2
			exit 1
		else
			sleep 0.05
		fi
	done
	wait_replica 1
	put "$n" restart_first_connect_s "$first"
	put "$n" restart_started_s "$(calc "$(date -d "$(sed -n 's/^ts=\([^ ]*\) .*msg="controller started".*/\1/p' \
		"$tmp/replica-1.log" | head -1)" +%s.%N) - $t0")"
	scale_cleanup
}

for n in $ns; do run_one "$n"; done

# The rows side by side: one column per N, the target last.
declare -A target=(
	[empty_to_converged_s]="<= 600 at N=100000"
	[converge_keeper_share_pct]="<= 25"
	[rest_keeper_cpu_pct]="<= 5 (of one core)"
	[rest_keeper_rss_mb]="<= 400"
	[rest_calls_per_min]="<= rest_calls_target"
	[restart_first_connect_s]="<= 5"
	[restart_started_s]="<= 60"
)
printf '\nspacekeeper scale benchmark: %s%% active, idleTimeout %ss, %d replicas, %d shards, %dms per call; load %s\n' \
	"$active_pct" "$idle_s" "$replicas" "$shards" "$lat" "$(uptime | sed 's/.*load average: //')"
printf '  %-28s' "N"
for n in $ns; do printf ' %12s' "$n"; done
printf '   target\n'
for k in "${keys[@]}"; do
	[ "$k" = rest_calls_by_endpoint ] && continue
	printf '  %-28s' "$k"
	for n in $ns; do printf ' %12s' "${res[$n,$k]:--}"; done
	t=${target[$k]:-}
	if [ -n "$t" ]; then
		printf '   %s' "$t"
		for n in $ns; do
			v=${res[$n,$k]:-}
			case $k in
			rest_calls_per_min) c="$v <= ${res[$n,rest_calls_target]}" ;;
			empty_to_converged_s) [ "$n" -ge 100000 ] || continue; c="$v <= 600" ;;
			*) c="$v ${t%% (*}" ;;
			esac
			printf ' [%s: %s]' "$n" "$(met "$c")"
		done
	fi
	printf '\n'
done
for n in $ns; do printf '  provider calls/min N=%-8s %s\n' "$n" "${res[$n,rest_calls_by_endpoint]}"; done
