#!/usr/bin/env bash
# make bench, second scenario: a "day of use" ("Speed").
# N_DAY UserSpaces (b00000...) with lifecycle.idleTimeout IDLE_S are created
# at apply and fall asleep; then, for RUN_S seconds, ACTIVE of the users are
# in a session at any moment (sessions of SESSION seconds start and end at
# random, connects every INTERVAL seconds) from CALLERS keep-alive callers
# (test/bench/connectload.c). Printed against the issue's targets: connect
# latency p50/p99 by path, provider calls per connect (/_sim/stats,
# control-plane endpoints), database writes per connect (the controller's
# spacekeeper_status_writes_total, and FerretDB's own count of write
# commands), running-sandbox-seconds (the simulator's running sandboxes,
# sampled every 250 ms) against always-on (N x run) and 1.2 x what a perfect
# sleeper runs (per session: active time + one idle tail).
# Before the day, a fast-path micro benchmark: FAST_USERS spaces that stay
# awake (idleTimeout 15m) connected by CALLERS callers for FAST_S seconds,
# paced (FAST_RATE connects a second in all) and saturated (each caller
# again at once: then latency is callers / throughput, Little's law).
# Env: N_DAY (2000), RUN_S (60), IDLE_S (10), ACTIVE (0.1), SESSION (10-30),
#      INTERVAL (0.5-3), CALLERS (64), FAST_USERS (256), FAST_S (5), FAST_RATE (5000),
#      LATENCY_MS (20), MAX_IN_FLIGHT (64), RESYNC (10s), SEED (1),
#      FAST_PIN (1: the fast windows run the controller on CPU 0 and the load
#      generator on CPU 1, taskset), PERF (set: perf record of the controller
#      during the saturated window, its top symbols printed; Debian linux-perf;
#      PERF_OUT: a file to keep perf.data in, for perf report -g),
#      FAST_ONLY (set: only the fast-path windows, then their figures; use
#      with a small N_DAY), TIMEOUT_S (900, convergence), AUTO_RESUME (false), SK_BIN_DIR (bin/),
#      SK_TOOLS_DIR (build/rel/tools).
# autoResume is off by default, so that every wake is the controller's
# resume and counted as such (with it on, a user's own traffic may wake a
# sandbox first). The controller never probes a keeper at or near its
# deadline (that probe would wake it through autoResume).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${SK_BIN_DIR:-$root/bin}
tools=${SK_TOOLS_DIR:-$root/build/rel/tools}
n=${N_DAY:-2000}
run_s=${RUN_S:-60}
idle_s=${IDLE_S:-10}
active=${ACTIVE:-0.1}
session=${SESSION:-10-30}
interval=${INTERVAL:-0.5-3}
callers=${CALLERS:-64}
nfast=${FAST_USERS:-256}
fast_s=${FAST_S:-5}
fast_rate=${FAST_RATE:-5000}
lat=${LATENCY_MS:-20}
mif=${MAX_IN_FLIGHT:-64}
resync=${RESYNC:-10s}
seed=${SEED:-1}
auto_resume=${AUTO_RESUME:-false}
timeout_s=${TIMEOUT_S:-900}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-day.XXXXXX")
. "$root/test/bench/common.sh"
trap bench_cleanup EXIT
trap 'exit 130' INT TERM
bench_need_bins
if [ ! -x "$tools/connectload" ]; then
	[ -z "${SK_TOOLS_DIR:-}" ] || { echo "day: $tools/connectload missing" >&2; exit 1; }
	make -C "$root" --no-print-directory build/rel/tools/connectload >/dev/null
fi

# free_port: a port below Linux's ephemeral range that nothing listens on.
free_port() {
	local p
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % 12000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}

# db_writes: write commands FerretDB has served (its debug metrics).
db_writes() {
	curl -s --max-time 5 "http://$FERRETDB_DEBUG_ADDR/debug/metrics" | awk '
		/^ferretdb_client_requests_total\{/ && /command="(insert|update|delete|findAndModify)"/ { s += $2 }
		END { print s + 0 }'
}

sim_running() { json "d.running" <<<"$(curl -s --max-time 5 "$sim/_sim/stats")"; }

# wait_until DESC SECONDS CMD...: until CMD succeeds (every 0.5 s), at most SECONDS.
wait_until() {
	local desc=$1 limit=$2 t0
	shift 2
	t0=$(date +%s)
	until "$@"; do
		bench_keeper_alive
		if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
			echo "day: $desc: not reached after ${limit}s" >&2
			return 1
		fi
		sleep 0.5
	done
}

# users PREFIX COUNT MODE IDLE: UserSpace documents.
users() {
	for i in $(seq 0 $(($2 - 1))); do
		printf -- '---\napiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: %s%05d\nspec:\n  userID: %s%05d\n  mode: %s\n  lifecycle: {idleTimeout: %s, autoResume: %s}\n' \
			"$1" "$i" "$1" "$i" "$3" "$4" "$auto_resume"
	done
}

# field LINE KEY: the value of KEY=value in a connectload output line.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# Snapshot of the counters around a window: provider calls by endpoint,
# status writes, FerretDB write commands.
snap() {
	stats=$(curl -s "$sim/_sim/stats")
	writes=$(metric_sum spacekeeper_status_writes_total)
	dbw=$(db_writes)
	[ "$writes" -ge 0 ] || { echo "day: $bin/spacekeeper has no spacekeeper_status_writes_total; rebuild it" >&2; exit 1; }
}

# looks: reconciles by how they learnt the bound sandbox's state
# (spacekeeper_observe_looks_total), "list=N known=N asleep-maybe=N get=N none=N".
looks() {
	local l out=""
	for l in list known asleep-maybe get none; do
		out="$out $l=$(metric_sum spacekeeper_observe_looks_total "look=\"$l\"")"
	done
	echo "${out# }"
}

# path_rows FILE PATH...: count, p50 and p99 of each named path (0 when
# absent); "other": one row for each path but fast, wake and create.
path_rows() {
	local file=$1
	shift
	awk -v want=" $* " '
		function row(p) { printf "    %-10s %7d  p50 %9.2f ms  p99 %9.2f ms\n", p, n[p], p50[p], p99[p] }
		/^path=/ { k = split($0, f, /[ =]/); p = f[2]
			for (i = 1; i < k; i += 2) v[f[i]] = f[i + 1] + 0
			n[p] = v["n"]; p50[p] = v["p50_ms"]; p99[p] = v["p99_ms"]; order[++m] = p }
		END { k = split(want, w, " ")
			for (i = 1; i <= k; i++) if (w[i] != "other") { if (w[i] in n) row(w[i]); else printf "    %-10s %7d\n", w[i], 0 }
			if (want ~ / other /) for (i = 1; i <= m; i++) if (order[i] !~ /^(fast|wake|create)$/) row(order[i]) }' "$file"
}

# fast_window LABEL RATE: FAST_S seconds of connects to the awake spaces from
# CALLERS callers, at most RATE a second (0: each caller again at once);
# prints latency, provider calls and writes of the window.
fast_window() {
	local out=$tmp/fast-$1.out s0 w0 d0 calls lists line p99 what c0 c1
	snap
	s0=$stats w0=$writes d0=$dbw
	c0=$(cpu_ticks "$keeper_pid")
	if [ -n "${PERF:-}" ] && [ "$2" = 0 ]; then
		perf record -F 999 -g -p "$keeper_pid" -o "$tmp/perf.data" -- sleep "$fast_s" \
			>/dev/null 2>&1 &
		perf_pid=$!
	fi
	$pin_load "$tools/connectload" --url "http://127.0.0.1:$cport" --users "$nfast" --prefix f \
		--mode fast -c "$callers" --duration "$fast_s" --rate "$2" >"$out"
	c1=$(cpu_ticks "$keeper_pid")
	if [ -n "${perf_pid:-}" ]; then
		wait "$perf_pid" || true
		perf_pid=
		perf report -i "$tmp/perf.data" --no-children --stdio --percent-limit 1.5 -g none \
			--sort symbol 2>/dev/null | grep -E '^ +[0-9]' | head -20 >"$tmp/perf-top.txt" || true
		[ -z "${PERF_OUT:-}" ] || cp "$tmp/perf.data" "$PERF_OUT"
	fi
	snap
	calls=$(json "(s=>Object.keys(d.requests).filter(k=>!['list','list_v1'].includes(k)&&$SIM_CONTROL.includes(k)).map(k=>[k,Object.values(d.requests[k]).reduce((x,y)=>x+y,0)-Object.values(s.requests[k]||{}).reduce((x,y)=>x+y,0)]).filter(([,v])=>v>0).reduce((a,[k,v])=>[a[0]+v,a[1]+' '+k+'='+v],[0,'']).join(''))($s0)" <<<"$stats")
	lists=$(($(sim_calls "$stats" '["list","list_v1"]') - $(sim_calls "$s0" '["list","list_v1"]')))
	line=$(head -1 "$out")
	p99=$(field "$(grep '^path=fast ' "$out" || true)" p99_ms)
	[ "$2" = 0 ] && what="each caller again at once" || what="at most $2/s"
	printf 'fast path, %s: %d awake spaces, %d callers (%s), %ss: %s connects (%s/s)\n' "$1" \
		"$nfast" "$callers" "$what" "$fast_s" "$(field "$line" connects)" "$(field "$line" rps)"
	path_rows "$out" fast other
	if [ "$2" = 0 ]; then
		printf '  %s connects/s on the controller'"'"'s core, target >= 25000: %s\n' \
			"$(field "$line" rps)" "$(met "$(field "$line" rps) >= 25000")"
		# what a core of its own would answer: the controller's CPU time per
		# connect (user + system) counts little of the other processes' load
		printf '  controller CPU %.1f us per connect: %.0f connects/s per busy core\n' \
			"$(calc "1e6 * ($c1 - $c0) / $(getconf CLK_TCK) / $(field "$line" connects)")" \
			"$(calc "$(field "$line" connects) * $(getconf CLK_TCK) / ($c1 - $c0)")"
		# the other side of the loopback: connectload's own CPU (its run
		# only: the window's connects and their answers)
		printf '  load generator CPU %.1f us per connect, its core busy %.0f%%\n' \
			"$(calc "1e6 * $(field "$line" cpu_s) / $(field "$line" connects)")" \
			"$(calc "100 * $(field "$line" cpu_s) / $(field "$line" seconds)")"
	else
		printf '  p99 %s ms, target <= 2 ms: %s\n' "${p99:-none}" "$(met "${p99:-1e9} <= 2")"
	fi
	printf '  provider calls %s (target 0: %s; the observer'"'"'s periodic lists, not per connect: %d)\n' \
		"$calls" "$(met "${calls%% *} == 0")" "$lists"
	printf '  database writes: reconciles that wrote %d, FerretDB write commands %d (target 0: %s)\n' \
		$((writes - w0)) $((dbw - d0)) "$(met "$writes - $w0 + $dbw - $d0 == 0")"
}

FERRETDB_DEBUG_ADDR=127.0.0.1:$(free_port)
export FERRETDB_DEBUG_ADDR
bench_start_db
bench_start_sim "$lat"
bench_config "$tmp/config.yaml" "$mif" "$resync"
echo "day: applying $n UserSpaces (idleTimeout ${idle_s}s) and $nfast that stay awake (15m)"
{ users b "$n" Running "${idle_s}s"; users f "$nfast" Running 15m; } >"$tmp/users.yaml"
"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/users.yaml" >/dev/null
bench_start_keeper "$tmp/config.yaml"
bench_wait_ready $((n + nfast)) "$(date +%s.%N)" "$timeout_s"
# ---- the first connect after an apply the controller converged (0 calls) ----
snap
s0=$stats
"$tools/connectload" --url "http://127.0.0.1:$cport" --users "$nfast" --prefix f --mode warm \
	-c "$callers" --duration 60 >"$tmp/first.out" || true
snap
first_calls=$(($(sim_calls "$stats") - $(sim_calls "$stats" '["list","list_v1"]') - $(sim_calls "$s0") + $(sim_calls "$s0" '["list","list_v1"]')))
printf 'first connect after the apply: %s connects to %d spaces just converged, %d provider calls but lists (target 0: %s)\n' \
	"$(field "$(head -1 "$tmp/first.out")" connects)" "$nfast" "$first_calls" "$(met "$first_calls == 0")" >"$tmp/first.txt"
echo "day: all created; waiting for the $n to fall asleep"
asleep() { [ "$(metric_sum spacekeeper_userspaces 'phase="Idle"')" -ge "$n" ] && [ "$(sim_running)" -le "$nfast" ]; }
wait_until "all $n Idle" $((2 * idle_s + 90)) asleep || {
	echo "day: UserSpaces b* not Idle, and sandboxes running at the simulator:" >&2
	"$bin/spacectl" --mongodb-uri "$uri" get us -o wide | awk '$1 ~ /^b/ && !/Idle/' | head >&2
	curl -s "$sim/_sim/sandboxes" | json "d.filter(s=>s.state==='running'&&/^b/.test(s.metadata.user_id)).slice(0,10).map(s=>JSON.stringify(s)).join('\\n')" >&2
	exit 1
}

# ---- fast path: awake, recently probed spaces ----
"$tools/connectload" --url "http://127.0.0.1:$cport" --users "$nfast" --prefix f --mode warm \
	-c "$callers" --duration 60 >"$tmp/warm.out" || {
	echo "day: some of the $nfast awake spaces never took the fast path:" >&2
	cat "$tmp/warm.out" >&2
	exit 1
}
sleep 1
# The fast path's figures with the load generator on a core of its own:
# the controller on CPU 0, connectload on CPU 1 (FAST_PIN=0: no pinning).
pin_load=
if [ "${FAST_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	taskset -a -p -c 0 "$keeper_pid" >/dev/null
	pin_load="taskset -c 1"
fi
fast_window paced "$fast_rate" >"$tmp/fast-paced.txt"
fast_window saturated 0 >"$tmp/fast-saturated.txt"
if [ -n "$pin_load" ]; then
	taskset -a -p -c "0-$(($(nproc) - 1))" "$keeper_pid" >/dev/null
	pin_load=
fi
if [ -n "${FAST_ONLY:-}" ]; then
	cat "$tmp/fast-paced.txt" "$tmp/fast-saturated.txt"
	[ ! -s "$tmp/perf-top.txt" ] || sed 's/^/  perf: /' "$tmp/perf-top.txt"
	exit 0
fi

# ---- the day ----
echo "day: pausing the $nfast awake spaces"
users f "$nfast" Paused 15m >"$tmp/fast-paused.yaml"
"$bin/spacectl" --mongodb-uri "$uri" apply -f "$tmp/fast-paused.yaml" >/dev/null
none_running() { [ "$(sim_running)" -eq 0 ]; }
wait_until "no sandbox running" 120 none_running || exit 1
sleep 2
echo "day: ${run_s}s of use: $active of $n users active, sessions ${session}s, a connect every ${interval}s, $callers callers"
curl -s -XPOST "$sim/_sim/stats/reset" >/dev/null
snap
w0=$writes d0=$dbw
looks0=$(looks)
db_c0=$(cpu_ticks "$db_pid")
keeper_c0=$(cpu_ticks "$keeper_pid")
"$tools/connectload" --url "http://127.0.0.1:$cport" --users "$n" --prefix b --mode day \
	-c "$callers" --duration "$run_s" --active "$active" --session "$session" \
	--interval "$interval" --idle-timeout "$idle_s" --sim "$sim" --seed "$seed" \
	--log-slow 1000 >"$tmp/day.out" 2>"$tmp/day.slow"
snap
looks1=$(looks)
db_c1=$(cpu_ticks "$db_pid")
keeper_c1=$(cpu_ticks "$keeper_pid")
clk=$(getconf CLK_TCK)

day=$(head -1 "$tmp/day.out")
connects=$(field "$day" connects)
[ "$connects" -gt 0 ] || { echo "day: no connect was made" >&2; cat "$tmp/day.out" >&2; exit 1; }
calls=$(sim_calls "$stats")
ref=$(field "$(grep '^sessions=' "$tmp/day.out")" reference_s)
running=$(field "$(grep '^running_s=' "$tmp/day.out")" running_s)
sessions=$(field "$(grep '^sessions=' "$tmp/day.out")" sessions)
samples=$(field "$(grep '^running_s=' "$tmp/day.out")" samples)
[ "$samples" -ge "$run_s" ] || { echo "day: only $samples samples of /_sim/stats in ${run_s}s" >&2; exit 1; }

printf '\nspacekeeper day of use: N=%d, idleTimeout=%ss, %ss run, %s active (sessions %ss, a connect every %ss), %d callers, %dms per call\n' \
	"$n" "$idle_s" "$run_s" "$active" "$session" "$interval" "$callers" "$lat"
printf '  connects                     %8d  (%s/s, %s sessions; %s)\n' "$connects" \
	"$(calc "$connects / $run_s")" "$sessions" "$(sed 's/.*errors=/errors=/' <<<"$day")"
echo "  connect latency by path:"
path_rows "$tmp/day.out" fast wake create other
rp99=$(field "$(grep '^path=reconcile ' "$tmp/day.out" || true)" p99_ms)
wp99=$(field "$(grep '^path=wake ' "$tmp/day.out" || true)" p99_ms)
# the probe is a loopback data-plane request: about 1 ms
printf '    targets: reconcile p99 %s ms <= 100 ms: %s; wake p99 %s ms <= 2 x (%d ms + probe 1 ms) = %d ms: %s\n' \
	"${rp99:-none}" "$(met "${rp99:-0} <= 100")" "${wp99:-none}" "$lat" $((2 * (lat + 1))) \
	"$(met "${wp99:-0} <= 2 * ($lat + 1)")"
gets=$(sim_calls "$stats" '["get"]')
renewals=$(sim_calls "$stats" '["timeout"]')
# active user-minutes: ACTIVE x N users in a session at any moment, for the run
active_min=$(calc "$active * $n * $run_s / 60")
printf '  provider calls per connect   %8s  (%d calls; target <= 0.35 at idleTimeout 10s: %s)\n' \
	"$(calc "$calls / $connects")" "$calls" "$(met "$calls / $connects <= 0.35")"
printf '    GETs per connect           %8s  (%d; target <= 0.05: %s)\n' \
	"$(calc "$gets / $connects")" "$gets" "$(met "$gets / $connects <= 0.05")"
json "'    by endpoint: '+Object.entries(d.requests).filter(([k])=>$SIM_CONTROL.includes(k)).map(([k,v])=>k+' '+Object.values(v).reduce((x,y)=>x+y,0)).join(', ')" <<<"$stats"
printf '    per active user-minute: %s calls, %s renewals (set_timeout) (%s user-minutes)\n' \
	"$(calc "$calls / $active_min")" "$(calc "$renewals / $active_min")" "$active_min"
printf '    reconciles by look at the bound sandbox: %s\n' "$(paste -d' ' <(tr ' ' '\n' <<<"$looks1") <(tr ' ' '\n' <<<"$looks0") |
	awk '{ split($1, a, "="); split($2, b, "="); printf "%s%s %d", (NR > 1 ? ", " : ""), a[1], a[2] - b[2] }')"
printf '  database writes per connect  %8s  (reconciles that wrote the UserSpace: %d)\n' \
	"$(calc "($writes - $w0) / $connects")" $((writes - w0))
printf '  FerretDB writes per connect  %8s  (insert/update/delete commands: %d; status, claims, events)\n' \
	"$(calc "($dbw - $d0) / $connects")" $((dbw - d0))
printf '  running-sandbox-seconds      %8.0f  (always-on N x run: %d, %.1f%% of it)\n' "$running" \
	$((n * run_s)) "$(calc "100 * $running / ($n * $run_s)")"
printf '    perfect sleeper (active + one idle tail per session) %.0f; target <= 1.2x = %.0f: %s (%.2fx)\n' \
	"$ref" "$(calc "1.2 * $ref")" "$(met "$running <= 1.2 * $ref")" "$(calc "$running / $ref")"
printf '  controller CPU %.1f s, FerretDB CPU %.1f s over the run\n' \
	"$(calc "($keeper_c1 - $keeper_c0) / $clk")" "$(calc "($db_c1 - $db_c0) / $clk")"

echo
cat "$tmp/first.txt" "$tmp/fast-paced.txt" "$tmp/fast-saturated.txt"
if [ -s "$tmp/perf-top.txt" ]; then
	echo "  perf (PERF=1), the controller while saturated, top symbols (self):"
	sed 's/^/  /' "$tmp/perf-top.txt"
fi
