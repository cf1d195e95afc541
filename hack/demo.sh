#!/usr/bin/env bash
# The spacekeeper demo (make demo): FerretDB, sandboxsim and spacekeeper on
# loopback, the example UserSpaces applied, and a live table while they
# converge. Ctrl-C stops everything this script started and removes its
# scratch directory.
#   DEMO_SECONDS=N   run non-interactively for N seconds, then clean up and exit
#   SK_BIN_DIR=DIR   binaries to use (default: bin/, as built by `make all`)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SK_BIN_DIR:-$root/bin}
. "$root/hack/lib.sh"
seconds=${DEMO_SECONDS:-}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-demo.XXXXXX")
sim_pid=
keeper_pid=

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$keeper_pid" ] && kill -0 "$keeper_pid" 2>/dev/null; then
		kill -TERM "$keeper_pid" 2>/dev/null || true
		wait "$keeper_pid" 2>/dev/null || true
	fi
	if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
		kill -TERM "$sim_pid" 2>/dev/null || true
		wait "$sim_pid" 2>/dev/null || true
	fi
	"$root/hack/ferretdb.sh" stop "$scratch/ferretdb" >/dev/null 2>&1 || true
	rm -rf "$scratch"
	echo
	echo "demo stopped; nothing left running."
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

for b in spacekeeper spacectl sandboxsim; do
	[ -x "$bin/$b" ] || { echo "demo: $bin/$b missing; run 'make' first" >&2; exit 1; }
done

echo "==> starting FerretDB (SQLite backend) in $scratch"
uri=$("$root/hack/ferretdb.sh" start "$scratch/ferretdb")

echo "==> starting sandboxsim (20ms latency per call)"
"$bin/sandboxsim" --listen 127.0.0.1:0 --latency 20ms >"$scratch/sandboxsim.log" 2>&1 &
sim_pid=$!
sim_url=$(log_wait "$scratch/sandboxsim.log" "$SIM_LISTENING" "$sim_pid") || { echo "demo: sandboxsim did not start" >&2; cat "$scratch/sandboxsim.log" >&2; exit 1; }
echo "    $sim_url"

sed "s#http://127.0.0.1:3000#$sim_url#g" "$root/manifests/config/demo.yaml" >"$scratch/config.yaml"
# Only for the demo: sandboxsim accepts any e2b_<hex> key.
export E2B_API_KEY=e2b_0000000000000000000000000000000000000000
echo "==> starting spacekeeper"
"$bin/spacekeeper" --config "$scratch/config.yaml" --mongodb-uri "$uri" \
	--listen 127.0.0.1:0 --connect-listen 127.0.0.1:0 --resync 5s --poll 500ms >"$scratch/spacekeeper.log" 2>&1 &
keeper_pid=$!
keeper_port=$(log_wait "$scratch/spacekeeper.log" "$KEEPER_STARTED" "$keeper_pid") || { echo "demo: spacekeeper did not start" >&2; cat "$scratch/spacekeeper.log" >&2; exit 1; }
connect_port=$(sed -n "$KEEPER_CONNECT" "$scratch/spacekeeper.log")
echo "    status page http://127.0.0.1:$keeper_port/ (metrics at /metrics)"
echo "    connect API http://127.0.0.1:$connect_port/v1/ (its own listener)"

echo "==> applying manifests/examples/"
"$bin/spacectl" --mongodb-uri "$uri" apply -f "$root/manifests/examples/"
sleep 1

table() {
	"$bin/spacectl" --mongodb-uri "$uri" get userspaces 2>&1 || true
}

show_for() {
	local n=$1 i
	for i in $(seq 1 "$n"); do
		if [ -t 1 ] && [ -z "$seconds" ]; then
			printf '\033[H\033[2J'
		else
			echo
		fi
		echo "spacekeeper demo: UserSpaces converging ($i/${n}s, Ctrl-C to stop)"
		echo
		table
		if ! kill -0 "$keeper_pid" 2>/dev/null; then
			echo "demo: spacekeeper exited; its log:" >&2
			tail -20 "$scratch/spacekeeper.log" >&2
			exit 1
		fi
		sleep 1
	done
}

if [ -n "$seconds" ]; then
	show_for "$seconds"
	echo
	echo "sandboxes at the simulator:"
	"$bin/spacectl" sandboxes --config "$scratch/config.yaml" || true
	exit 0
fi

show_for 20
cat <<EOF

Everything is still running. In another terminal, try:

  export SPACEKEEPER_MONGODB_URI=$uri
  $bin/spacectl get userspaces -o wide
  $bin/spacectl describe userspace alice
  $bin/spacectl events
  E2B_API_KEY=$E2B_API_KEY $bin/spacectl sandboxes --config $scratch/config.yaml
  curl -s -XPOST http://127.0.0.1:$connect_port/v1/userspaces/alice/connect
  curl -s http://127.0.0.1:$keeper_port/metrics | grep reconcile_total
  open http://127.0.0.1:$keeper_port/ in a browser: spaces by phase, drift, each space
  curl -s $sim_url/_sim/sandboxes   # the simulator's own view

Logs: $scratch/spacekeeper.log
Press Ctrl-C to stop the demo (it removes everything it started).
EOF
while kill -0 "$keeper_pid" 2>/dev/null; do
	sleep 1
done
echo "demo: spacekeeper exited; its log:" >&2
tail -20 "$scratch/spacekeeper.log" >&2
exit 1
