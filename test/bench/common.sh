# Shared shell of make bench's scenarios (sourced by test/bench/bench.sh and
# test/bench/dayofuse.sh): FerretDB, sandboxsim and spacekeeper on
# 127.0.0.1 in a scratch directory, stopped by bench_cleanup (the EXIT trap).
# The sourcing script sets root, bin and tmp first.
. "$root/hack/lib.sh"
sim_pid=
keeper_pid=

bench_cleanup() {
	[ -z "${db_prof_pid:-}" ] || { touch "$tmp/dbprof/stop"; kill "$db_prof_pid" 2>/dev/null; }
	for p in $keeper_pid $sim_pid; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	"$root/hack/ferretdb.sh" stop "$tmp/ferretdb" >/dev/null 2>&1 || true
	[ -n "${BENCH_KEEP:-}" ] && echo "bench: kept $tmp" || rm -rf "$tmp"
}

bench_need_bins() {
	for b in spacekeeper spacectl sandboxsim; do
		[ -x "$bin/$b" ] || { echo "bench: $bin/$b missing; run 'make' first" >&2; exit 1; }
	done
}

# calc EXPR: arithmetic (and comparisons, 1/0) with awk.
calc() { awk "BEGIN { x = $1; printf (x == int(x) ? \"%d\n\" : \"%.3f\n\"), x }"; }

# met COND: "met" when the awk comparison COND holds, else "NOT met".
met() { [ "$(calc "$1")" = 1 ] && echo "met" || echo "NOT met"; }

# json EXPR: evaluates a JavaScript expression over the JSON on stdin (as `d`).
json() { node -e "let s='';process.stdin.on('data',c=>s+=c).on('end',()=>{const d=JSON.parse(s);console.log($1)})"; }

# cpu_ticks PID: utime + stime of a process (every thread), in clock ticks.
# The fields are counted after the ")" that ends comm (which may hold spaces).
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# thread_cpu_ns PID COMM: the CPU time of the threads of PID named COMM
# (pthread_setname_np), in nanoseconds (schedstat: clock ticks are 10 ms,
# too coarse for one thread); 0 when none.
thread_cpu_ns() {
	local t s=0
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] || continue
		s=$((s + $(awk '{ print $1 }' "$t/schedstat")))
	done
	echo "$s"
}

# bench_start_db: FerretDB in $tmp/ferretdb; sets uri and db_pid. With
# FERRETDB_DEBUG_ADDR set, its Prometheus metrics answer there.
bench_start_db() {
	if [ -n "$(db_profile_go)" ]; then
		db_debug_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		export FERRETDB_DEBUG_ADDR=127.0.0.1:$db_debug_port
	fi
	uri=$("$root/hack/ferretdb.sh" start "$tmp/ferretdb")
	db_pid=$(cat "$tmp/ferretdb/pid")
	unset FERRETDB_DEBUG_ADDR
}

# FerretDB's own CPU profile (Go's pprof on its debug address), taken in 2 s
# pieces from db_profile_start to db_profile_stop, tells which commands its
# CPU went to. Needs go (hack/deps.sh builds FerretDB with it); DB_PROFILE=0
# turns it off.
db_profile_go() {
	[ "${DB_PROFILE:-1}" != 0 ] || return 0
	command -v go || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; } || true
}

db_profile_start() {
	[ -n "${db_debug_port:-}" ] || return 0
	mkdir -p "$tmp/dbprof"
	(
		i=0
		while [ ! -e "$tmp/dbprof/stop" ]; do
			i=$((i + 1))
			curl -s -o "$tmp/dbprof/p$i.pb.gz" \
				"http://127.0.0.1:$db_debug_port/debug/pprof/profile?seconds=2" || break
		done
	) &
	db_prof_pid=$!
}

# db_profile_stop USERS: prints FerretDB's CPU by command over the profile,
# in % and in ms per user (the piece in flight is waited for: at most 2 s).
# Not in a command substitution: it waits for db_profile_start's loop.
db_profile_stop() {
	[ -n "${db_prof_pid:-}" ] || return 0
	touch "$tmp/dbprof/stop"
	wait "$db_prof_pid" 2>/dev/null || true
	db_prof_pid=
	local go
	go=$(db_profile_go)
	# shellcheck disable=SC2046 # one argument per profile piece
	"$go" tool pprof -top -cum -unit=ms -nodecount=100000 $(ls "$tmp"/dbprof/p*.pb.gz 2>/dev/null) \
		2>/dev/null | awk -v users="$1" '
		/^Duration:/ { for (i = 1; i <= NF; i++) if ($i == "=") { total = $(i + 1) + 0 } }
		function cum(name) { return name in ms ? ms[name] : 0 }
		$NF ~ /handler\.\(\*Handler\)\.Msg(Update|Find|Insert|Delete)$/ ||
		$NF ~ /common\.SortIterator$/ ||
		$NF ~ /handler\.\(\*Handler\)\.MsgFind$/ {
			v = $4; sub(/ms$/, "", v); ms[$NF] = v + 0
		}
		END {
			if (total <= 0) { print "  FerretDB CPU by command           (no profile)"; exit }
			split("MsgUpdate MsgFind MsgInsert MsgDelete", k, " ")
			line = ""; rest = total
			for (i = 1; i <= 4; i++) {
				v = cum("github.com/FerretDB/FerretDB/internal/handler.(*Handler)." k[i])
				rest -= v
				polls = k[i] != "MsgFind" ? "" : sprintf("; the informer'"'"'s sorted scans %.0f%%",
					100 * cum("github.com/FerretDB/FerretDB/internal/handler/common.SortIterator") / total)
				line = line sprintf("%s %.0f%% (%.2f ms/user%s)%s", tolower(substr(k[i], 4)),
					100 * v / total, v / users, polls, i < 4 ? ", " : "")
			}
			printf "  FerretDB CPU by command (profile, %.1f s sampled): %s, other %.0f%%\n",
				total / 1000, line, 100 * rest / total
		}' || true
}

# bench_start_sim LATENCY_MS: sandboxsim on a free port; sets sim and sim_pid.
bench_start_sim() {
	"$bin/sandboxsim" --listen 127.0.0.1:0 --latency "$1ms" 2>"$tmp/sim.log" &
	sim_pid=$!
	sim=$(log_wait "$tmp/sim.log" "$SIM_LISTENING" "$sim_pid") || {
		echo "bench: sandboxsim did not start" >&2
		cat "$tmp/sim.log" >&2
		exit 1
	}
}

# bench_config FILE MAX_IN_FLIGHT RESYNC: one e2b provider on $sim.
bench_config() {
	cat >"$1" <<EOF
apiVersion: spacekeeper.dev/v1alpha1
kind: ControllerConfig
providers:
  - name: default
    type: e2b
    apiURL: $sim
    sandboxURL: $sim
    apiKeyEnv: E2B_API_KEY
    maxInFlight: $2
    qps: 100000
    burst: 100000
    requestTimeout: 30s
    sandboxTimeout: 1h
controller:
  workers: $2
  resyncPeriod: $3
  listen: 127.0.0.1:0
EOF
}

# bench_start_keeper CONFIG: spacekeeper on $uri; sets keeper_pid, port (metrics)
# and cport (the connect API).
bench_start_keeper() {
	export E2B_API_KEY=e2b_0000000000000000000000000000000000000000
	# shellcheck disable=SC2086 # KEEPER_ARGS: extra flags, e.g. --log-level debug
	"$bin/spacekeeper" --config "$1" --mongodb-uri "$uri${KEEPER_URI_OPTS:-}" ${KEEPER_ARGS:-} \
		--connect-listen 127.0.0.1:0 >"$tmp/spacekeeper.log" 2>&1 &
	keeper_pid=$!
	port=$(log_wait "$tmp/spacekeeper.log" "$KEEPER_STARTED" "$keeper_pid") || {
		echo "bench: spacekeeper did not start" >&2
		cat "$tmp/spacekeeper.log" >&2
		exit 1
	}
	cport=$(sed -n "$KEEPER_CONNECT" "$tmp/spacekeeper.log")
}

# metric_sum NAME [FILTER]: the sum of a metric's series on the controller's
# /metrics whose labels match the awk regex FILTER; 0 while it does not answer,
# -1 when it answers without that metric (a spacekeeper built before it).
metric_sum() {
	{ curl -s --max-time 2 "http://127.0.0.1:$port/metrics" || true; } |
		awk -v name="$1" -v filter="${2:-}" '
		index($1, name "{") == 1 || $1 == name { seen = 1; if ($0 ~ filter) s += $2 }
		END { print seen ? s + 0 : (NR ? -1 : 0) }'
}

# ready_metric: UserSpaces the controller counts Ready (sum over phases of
# spacekeeper_userspaces{ready="true"}).
ready_metric() { metric_sum spacekeeper_userspaces 'ready="true"'; }

# bench_wait_ready N T0 TIMEOUT_S: until the controller counts N Ready,
# spacekeeper dies (exit 1) or TIMEOUT_S seconds since T0 pass (exit 1).
bench_wait_ready() {
	local n=$1 t0=$2 timeout_s=$3 r
	while :; do
		r=$(ready_metric)
		[ "$r" -ge "$n" ] && return 0
		if [ "$r" -lt 0 ]; then
			echo "bench: $bin/spacekeeper /metrics has no spacekeeper_userspaces gauge; rebuild it" >&2
			exit 1
		fi
		bench_keeper_alive
		if [ "$(calc "$(date +%s.%N) - $t0 > $timeout_s")" = 1 ]; then
			echo "bench: only $r/$n Ready (spacekeeper_userspaces) after ${timeout_s}s" >&2
			exit 1
		fi
		sleep 0.1
	done
}

bench_keeper_alive() {
	kill -0 "$keeper_pid" 2>/dev/null && return 0
	echo "bench: spacekeeper died" >&2
	tail -20 "$tmp/spacekeeper.log" >&2
	exit 1
}

# sim_calls STATS_JSON [ENDPOINTS]: control-plane calls in a /_sim/stats
# answer, over ENDPOINTS (a JSON array; default every control-plane one).
SIM_CONTROL='["create","get","list","list_v1","kill","pause","connect","resume","timeout","refreshes"]'
sim_calls() {
	json "Object.entries(d.requests).filter(([k])=>${2:-$SIM_CONTROL}.includes(k)).reduce((a,[,v])=>a+Object.values(v).reduce((x,y)=>x+y,0),0)" <<<"$1"
}
