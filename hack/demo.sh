#!/usr/bin/env bash
# The spacekeeper demo (make demo): FerretDB, sandboxsim and spacekeeper on
# loopback, the example UserSpaces applied, and a live table while they
# converge. It writes a spacectl context "demo" (the demo's MongoDB URI and a
# ControllerConfig naming its sandboxsim and a key file) into the file spacectl
# reads and makes it current, as kind and minikube do with kubeconfig, so that
# plain `spacectl get us`, `spacectl sandboxes` and `spacectl plan` work
# against the demo. Ctrl-C stops everything this script started, removes the
# context (the previous current context is current again) and its scratch
# directory, and exits 0. On a terminal the table is redrawn every second;
# otherwise (a log file, a pipe) it is printed once, then only the rows that
# change (spacectl get -w), and one "converged" line once every example is in
# the phase its spec.mode asks (those paused by annotation aside).
#   DEMO_SECONDS=N   run non-interactively for N seconds, then clean up and exit
#   DEMO_CONTEXT=NAME  the context's name (default demo; "" writes none)
#   SPACECTL_CONFIG=FILE  the context file (default ~/.config/spacectl/config.yaml)
#   SK_BIN_DIR=DIR   binaries to use (default: bin/, as built by `make all`)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SK_BIN_DIR:-$root/bin}
. "$root/hack/lib.sh"
seconds=${DEMO_SECONDS:-}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-demo.XXXXXX")
sim_pid=
keeper_pid=
watch_pid=
interrupted=
converged=
applied_at=0
context=${DEMO_CONTEXT-demo}
context_written=
context_prev=
context_file_existed=

cleanup() {
	local rc=$?
	# a second Ctrl-C does not cut the cleanup short; an interrupt is a normal end
	trap '' INT TERM
	trap - EXIT
	set +e
	[ -n "$interrupted" ] && rc=0
	if [ -n "$watch_pid" ] && kill -0 "$watch_pid" 2>/dev/null; then
		kill -TERM "$watch_pid" 2>/dev/null
		wait "$watch_pid" 2>/dev/null
	fi
	if [ -n "$keeper_pid" ] && kill -0 "$keeper_pid" 2>/dev/null; then
		kill -TERM "$keeper_pid" 2>/dev/null || true
		wait "$keeper_pid" 2>/dev/null || true
	fi
	if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
		kill -TERM "$sim_pid" 2>/dev/null || true
		wait "$sim_pid" 2>/dev/null || true
	fi
	"$root/hack/ferretdb.sh" stop "$scratch/ferretdb" >/dev/null 2>&1 || true
	context_remove
	rm -rf "$scratch"
	echo
	echo "demo stopped; nothing left running."
	exit "$rc"
}
# spacectl against the demo's database, whatever the user's current context
# says (an empty context file: no context, so no other database name).
ctl() {
	SPACECTL_CONFIG="$scratch/no-contexts.yaml" "$bin/spacectl" --mongodb-uri "$uri" \
		--database spacekeeper "$@"
}

# spacectl config on the user's context file
ctl_config() {
	"$bin/spacectl" config "$@"
}

# Writes the context (after the examples are applied: a context that exists
# names a ready world) and remembers what was current before.
context_write() {
	[ -n "$context" ] || return 0
	local file
	file=$(context_file)
	[ -e "$file" ] && context_file_existed=1
	context_prev=$(ctl_config current-context 2>/dev/null || true)
	[ "$context_prev" = "$context" ] && context_prev=
	if ! ctl_config set-context "$context" --mongodb-uri "$uri" --database spacekeeper \
		--controller-config "$scratch/config.yaml" --current >/dev/null; then
		echo "demo: no spacectl context written (above); pass --mongodb-uri $uri" >&2
		return 0
	fi
	context_written=1
	echo "==> spacectl context \"$context\" written to $file and made current"
	if [ -n "$context_prev" ]; then
		echo "    (\"$context_prev\" is current again when the demo stops)"
	fi
	if [ -n "${SPACEKEEPER_MONGODB_URI:-}" ]; then
		echo "    note: \$SPACEKEEPER_MONGODB_URI is set and wins over the context: unset it"
	fi
}

# Removes the context; the previous current context comes back when the demo's
# is still the current one. A file the demo created and left empty goes too.
context_remove() {
	[ -n "$context_written" ] || return 0
	local cur file
	file=$(context_file)
	cur=$(ctl_config current-context 2>/dev/null || true)
	ctl_config delete-context "$context" >/dev/null 2>&1 || true
	if [ "$cur" = "$context" ] && [ -n "$context_prev" ]; then
		ctl_config use-context "$context_prev" >/dev/null 2>&1 || true
	fi
	if [ -z "$context_file_existed" ] &&
		! ctl_config get-contexts 2>/dev/null | grep -q .; then
		rm -f "$file"
	fi
	echo "spacectl context \"$context\" removed from $file."
}

# The file spacectl reads its contexts from (as cmd/spacectl/config.c decides).
context_file() {
	if [ -n "${SPACECTL_CONFIG:-}" ]; then
		echo "$SPACECTL_CONFIG"
	elif [ -n "${XDG_CONFIG_HOME:-}" ]; then
		echo "$XDG_CONFIG_HOME/spacectl/config.yaml"
	else
		echo "$HOME/.config/spacectl/config.yaml"
	fi
}

trap cleanup EXIT
trap 'interrupted=1; exit 0' INT TERM

# Returns while spacekeeper runs. Ctrl-C at a terminal reaches it too, and it
# may stop (exit 0) before this script's trap has run: a stop is the demo's
# end (exit 0); a failure exits 1 with its log.
keeper_alive() {
	local status=0
	kill -0 "$keeper_pid" 2>/dev/null && return 0
	wait "$keeper_pid" 2>/dev/null || status=$?
	keeper_pid=
	if [ -n "$interrupted" ] || [ "$status" -eq 0 ]; then
		interrupted=1
		exit 0
	fi
	echo "demo: spacekeeper exited with status $status; its log:" >&2
	tail -20 "$scratch/spacekeeper.log" >&2
	exit 1
}

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

# The demo's ControllerConfig: manifests/config/demo.yaml with this run's
# simulator and database, and the key in a file (mode 0600) instead of
# $E2B_API_KEY, so that spacectl finds it through the context. Only for the
# demo: sandboxsim accepts any e2b_<hex> key.
(umask 077 && echo e2b_0000000000000000000000000000000000000000 >"$scratch/e2b-api-key")
sed -e "s#http://127.0.0.1:3000#$sim_url#g" -e "s#mongodb://127.0.0.1:27017#$uri#" \
	-e "s#apiKeyEnv: E2B_API_KEY#apiKeyFile: $scratch/e2b-api-key#" \
	"$root/manifests/config/demo.yaml" >"$scratch/config.yaml"
unset E2B_API_KEY
# The connect API's bearer token, made for this run (mode 0600), as a platform
# gets it from the Secret spacekeeper-connect.
(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$scratch/connect-token" &&
	echo >>"$scratch/connect-token")
echo "==> starting spacekeeper"
"$bin/spacekeeper" --config "$scratch/config.yaml" --mongodb-uri "$uri" \
	--listen 127.0.0.1:0 --connect-listen 127.0.0.1:0 --connect-token-file "$scratch/connect-token" \
	--resync 5s --poll 500ms >"$scratch/spacekeeper.log" 2>&1 &
keeper_pid=$!
keeper_port=$(log_wait "$scratch/spacekeeper.log" "$KEEPER_STARTED" "$keeper_pid") || { echo "demo: spacekeeper did not start" >&2; cat "$scratch/spacekeeper.log" >&2; exit 1; }
connect_port=$(sed -n "$KEEPER_CONNECT" "$scratch/spacekeeper.log")
echo "    status page http://127.0.0.1:$keeper_port/ (metrics at /metrics)"
echo "    connect API http://127.0.0.1:$connect_port (its own listener, token in $scratch/connect-token);"
echo "    for a client (README.md, From a platform), paste:"
printf '    export SPACEKEEPER_URL=%q SPACEKEEPER_TOKEN_FILE=%q\n' \
	"http://127.0.0.1:$connect_port" "$scratch/connect-token"

echo "==> applying manifests/examples/"
ctl apply -f "$root/manifests/examples/"
applied_at=$SECONDS
context_write
sleep 1

table() {
	ctl get userspaces 2>&1 || true
}

# Whether every example is in the phase its spec.mode asks (Running, Paused);
# one paused by the spacekeeper.dev/paused annotation is not reconciled and
# counts as it is.
examples_converged() {
	ctl get userspaces -o jsonpath='{range .items[*]}{.spec.mode}|{.status.phase}|{.metadata.annotations.spacekeeper\.dev/paused}{"\n"}{end}' 2>/dev/null |
		awk -F'|' 'NF { n++ } NF && $3 != "true" && $1 != $2 { bad = 1 } END { exit !(n > 0 && !bad) }'
}

# Once the examples have converged: converged holds how long it took
# (seconds since the apply) and the line saying so is printed (quiet: not).
note_converged() {
	if [ -z "$converged" ] && examples_converged; then
		converged=$((SECONDS - applied_at))
		[ "${1:-}" = quiet ] ||
			echo "==> converged after ${converged}s: every example is in the phase its spec.mode asks"
	fi
}

# A terminal: the table redrawn every second for n seconds.
redraw_for() {
	local n=$1 i
	for i in $(seq 1 "$n"); do
		printf '\033[H\033[2J'
		note_converged quiet
		if [ -n "$converged" ]; then
			echo "spacekeeper demo: UserSpaces converged after ${converged}s ($i/${n}s, Ctrl-C to stop)"
		else
			echo "spacekeeper demo: UserSpaces converging ($i/${n}s, Ctrl-C to stop)"
		fi
		echo
		table
		keeper_alive
		sleep 1
	done
}

# A log file or a pipe: the table once and then each row that changes
# (spacectl get -w, in the background until the demo stops), the
# "converged" line, and nothing more every second.
log_changes_for() {
	local n=$1 i
	if [ -z "$watch_pid" ]; then
		echo "==> UserSpaces (then a row for each change):"
		# spacectl itself in the background (not the ctl function's subshell), so
		# that cleanup's kill reaches it
		SPACECTL_CONFIG="$scratch/no-contexts.yaml" "$bin/spacectl" --mongodb-uri "$uri" \
			--database spacekeeper get userspaces -w &
		watch_pid=$!
	fi
	for i in $(seq 1 "$n"); do
		sleep 1 # first: the watch prints its table
		note_converged
		keeper_alive
	done
}

show_for() {
	if [ -t 1 ] && [ -z "$seconds" ]; then
		redraw_for "$1"
	else
		log_changes_for "$1"
	fi
}

if [ -n "$seconds" ]; then
	show_for "$seconds"
	echo
	echo "sandboxes at the simulator:"
	ctl sandboxes --config "$scratch/config.yaml" || true
	exit 0
fi

show_for 20
cat <<EOF

Everything is still running. In another terminal (spacectl uses the context
"${context:-<none: run with --mongodb-uri $uri>}": MongoDB $uri, providers of $scratch/config.yaml), try:

  export PATH=$bin:\$PATH
  spacectl get userspaces -o wide
  spacectl describe userspace alice
  spacectl events
  spacectl sandboxes
  spacectl plan
  curl -s -XPOST -H "Authorization: Bearer \$(cat $scratch/connect-token)" http://127.0.0.1:$connect_port/v1/userspaces/alice/connect
  curl -s http://127.0.0.1:$keeper_port/metrics | grep reconcile_total
  open http://127.0.0.1:$keeper_port/ in a browser: spaces by phase, drift, each space
  curl -s $sim_url/_sim/sandboxes   # the simulator's own view

Logs: $scratch/spacekeeper.log
Press Ctrl-C to stop the demo (it removes everything it started).
EOF
while keeper_alive; do
	[ -t 1 ] || note_converged
	sleep 1
done
