#!/usr/bin/env bash
# FerretDB (SQLite backend) on a free 127.0.0.1 port in a scratch directory.
#   hack/ferretdb.sh start [DIR]   starts it, waits for ping, prints the URI;
#                                  a restart keeps the data and its port
#   hack/ferretdb.sh stop  [DIR]   stops it; the data stays in DIR
#   hack/ferretdb.sh clean [DIR]   stops it and removes DIR with its data
#   hack/ferretdb.sh uri   [DIR]   prints the URI of a running instance
# DIR defaults to .deps/run/ferretdb. Needs hack/deps.sh; the ping uses
# $SK_TOOLS_DIR/mongoping (default build/rel/tools/mongoping, built on demand).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
dir=${2:-$root/.deps/run/ferretdb}
bin=$root/.deps/bin/ferretdb
ping=${SK_TOOLS_DIR:-$root/build/rel/tools}/mongoping

usage() { echo "usage: hack/ferretdb.sh start|stop|clean|uri [DIR]" >&2; exit 2; }

# Below Linux's ephemeral range (32768-60999): a port there can be taken by
# any outgoing loopback connection between our check and FerretDB's bind.
free_port() {
	local port
	for _ in $(seq 1 100); do
		port=$((20000 + RANDOM % 12000))
		if ! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

# The port of the last run in DIR when it is free again (a restart keeps its
# URI), else a new free one.
pick_port() {
	local port
	port=$(sed -n 's|^mongodb://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$dir/uri" 2>/dev/null || true)
	if [ "$1" = 1 ] && [ -n "$port" ] && ! (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
		echo "$port"
		return 0
	fi
	free_port
}

start() {
	[ -x "$bin" ] || { echo "ferretdb: $bin missing; run hack/deps.sh" >&2; exit 1; }
	if [ ! -x "$ping" ]; then
		[ -z "${SK_TOOLS_DIR:-}" ] || { echo "ferretdb: $ping missing" >&2; exit 1; }
		make -C "$root" --no-print-directory build/rel/tools/mongoping >/dev/null
	fi
	if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
		cat "$dir/uri"
		return 0
	fi
	mkdir -p "$dir/data"
	# FerretDB already runs SQLite in WAL mode; synchronous NORMAL drops the
	# fsync per commit (halves an insert). Keep in sync with test/testutil.c.
	local pragmas='_pragma=synchronous(normal)'
	local port attempt
	for attempt in 1 2 3 4 5; do
		port=$(pick_port "$attempt")
		"$bin" --handler=sqlite --listen-addr="127.0.0.1:$port" \
			--sqlite-url="file:$dir/data/?$pragmas" --state-dir="$dir" --debug-addr="${FERRETDB_DEBUG_ADDR:--}" \
			--telemetry=disable --log-level=error >"$dir/log" 2>&1 &
		echo $! >"$dir/pid"
		echo "mongodb://127.0.0.1:$port" >"$dir/uri"
		for _ in $(seq 1 100); do
			if "$ping" "$(cat "$dir/uri")" 500 2>/dev/null; then
				cat "$dir/uri"
				return 0
			fi
			kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
			sleep 0.1
		done
		# Lost a race for the port: try another one.
		grep -q 'address already in use' "$dir/log" || break
		echo "ferretdb: port $port was taken (attempt $attempt), trying another" >&2
	done
	echo "ferretdb: did not answer ping; its log:" >&2
	tail -n 20 "$dir/log" >&2 || true
	stop
	exit 1
}

# Stops the server; DIR (its data, log and last URI) stays.
stop() {
	if [ -f "$dir/pid" ]; then
		kill "$(cat "$dir/pid")" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
			sleep 0.1
		done
		rm -f "$dir/pid"
	fi
}

clean() {
	stop
	rm -rf "$dir"
}

case "$cmd" in
start) start ;;
stop) stop ;;
clean) clean ;;
uri)
	[ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null ||
		{ echo "ferretdb: not running in $dir" >&2; exit 1; }
	cat "$dir/uri"
	;;
*) usage ;;
esac
