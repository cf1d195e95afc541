#!/usr/bin/env bash
# make bench: the archive ("Benchmark"). N spaces (default 200) of
# SIZE_MB (default 10) on a sandboxsim, archived into a real S3 server
# (versitygw, POSIX backend, from hack/deps.sh) and restored by the archive
# engine (test/bench/archivebench.c runs the code the controller runs:
# sk_archive_workspace, sk_archive_restore), WORKERS (default 8) at once.
# Prints throughput, the engine's CPU per GB, its peak RSS (target < 64 MB
# whatever the file sizes), then one space of BIG_MB (default 1024): its
# restore time against the provider-to-provider move of the same files
# (the migration engine, to a second sandboxsim). Figures only.
# Env: N, SIZE_MB, WORKERS, BIG_MB, SK_BIN_DIR (default bin/), TOOLS (default build/rel/tools).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bin=${SK_BIN_DIR:-$root/bin}
tools=${TOOLS:-$root/build/rel/tools}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-archive.XXXXXX")
. "$root/hack/lib.sh"
sim_pid= sim2_pid= gw_pid=
cleanup() {
	for p in $sim_pid $sim2_pid $gw_pid; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "${BENCH_KEEP:-}" ] && echo "bench: kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
gw=$root/.deps/bin/versitygw
for b in "$bin/sandboxsim" "$tools/archivebench" "$gw"; do
	[ -x "$b" ] || { echo "bench: $b missing; run 'make' and hack/deps.sh first" >&2; exit 1; }
done

start_sim() { # LOG: prints the URL; the pid in $!
	"$bin/sandboxsim" --listen 127.0.0.1:0 2>"$1" &
}
start_sim "$tmp/sim.log"
sim_pid=$!
sim=$(log_wait "$tmp/sim.log" "$SIM_LISTENING" "$sim_pid")
start_sim "$tmp/sim2.log"
sim2_pid=$!
sim2=$(log_wait "$tmp/sim2.log" "$SIM_LISTENING" "$sim2_pid")

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$tmp/s3/spaces"
secret=bench-secret-$RANDOM$RANDOM
"$gw" --access bench --secret "$secret" --port "127.0.0.1:$port" posix "$tmp/s3" >"$tmp/gw.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do
	curl -s -o /dev/null "http://127.0.0.1:$port/" && break
	sleep 0.1
done

"$tools/archivebench" --sim "$sim" --sim2 "$sim2" --s3 "http://127.0.0.1:$port" \
	--access bench --secret "$secret" -n "${N:-200}" --size-mb "${SIZE_MB:-10}" \
	-w "${WORKERS:-8}" --big-mb "${BIG_MB:-1024}" | sed 's/^archivebench:/bench: archive:/'
hz=$(getconf CLK_TCK)
for p in "sandboxsim:$sim_pid" "sandboxsim2:$sim2_pid" "versitygw:$gw_pid"; do
	ticks=$(sed 's/.*) //' "/proc/${p#*:}/stat" | awk '{ print $12 + $13 }')
	echo "bench: archive: ${p%%:*} CPU $(awk "BEGIN { printf \"%.1f\", $ticks / $hz }")s"
done
