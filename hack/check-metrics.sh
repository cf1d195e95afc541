#!/usr/bin/env bash
# check-metrics: what operators look at, checked with Prometheus's own tool
# against a live controller (hack/run-tests.sh runs it in make test):
#   1. FerretDB, sandboxsim and spacekeeper on loopback; manifests/examples/
#      applied; waits until every UserSpace is Ready (erin: Paused); a few
#      connect calls;
#   2. `promtool check metrics` on a /metrics scrape prints nothing;
#   3. `promtool check rules` and `promtool test rules` pass on
#      manifests/monitoring/ (alerts.yaml, alerts_test.yaml);
#   4. every metric name in the Grafana dashboard's queries and in the alert
#      rules is in the scrape (hack/check-monitoring.sh), both in the scrape
#      taken once converged but before any connect (a fresh controller: the
#      families whose labels are known exist at zero before their first
#      event) and in the one after the connects;
#   5. the status page in headless Chromium: it loads with no console message,
#      shows the examples' spaces, and a screenshot is written.
# Prints one line per failure and exits 1; the scrape, the page as Chromium
# rendered it and the screenshot are kept in $SK_TEST_OUT (default
# build/test-out): metrics-fresh.txt (before any connect), metrics.txt,
# status.html, status.png.
#   SK_BIN_DIR=DIR    binaries (default bin/); SK_TOOLS_DIR as for hack/ferretdb.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SK_BIN_DIR:-$root/bin}
mon=$root/manifests/monitoring
out=${SK_TEST_OUT:-$root/build/test-out}
. "$root/hack/lib.sh"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/spacekeeper-metrics.XXXXXX")
sim_pid=
keeper_pid=
failures=0

fail() {
	echo "check-metrics: $*"
	failures=$((failures + 1))
}

cleanup() {
	local pid
	for pid in "$keeper_pid" "$sim_pid"; do
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
		fi
	done
	"$root/hack/ferretdb.sh" stop "$scratch/ferretdb" >/dev/null 2>&1
	rm -rf "$scratch"
}
trap cleanup EXIT

command -v promtool >/dev/null || { echo "check-metrics: promtool missing (hack/deps.sh installs Debian's prometheus)"; exit 1; }

# The sum of the values of the scrape's lines that start with $2.
scrape_sum() {
	awk -v p="$2" 'index($0, p) == 1 { s += $NF } END { print s + 0 }' "$1"
}

start_demo() {
	local uri sim_url port
	uri=$("$root/hack/ferretdb.sh" start "$scratch/ferretdb") || { echo "check-metrics: FerretDB did not start"; return 1; }
	"$bin/sandboxsim" --listen 127.0.0.1:0 >"$scratch/sim.log" 2>&1 &
	sim_pid=$!
	sim_url=$(log_wait "$scratch/sim.log" "$SIM_LISTENING" "$sim_pid") || { echo "check-metrics: sandboxsim did not start"; cat "$scratch/sim.log"; return 1; }
	sed "s#http://127.0.0.1:3000#$sim_url#g" "$root/manifests/config/demo.yaml" >"$scratch/config.yaml"
	E2B_API_KEY=e2b_0000000000000000000000000000000000000000 "$bin/spacekeeper" \
		--config "$scratch/config.yaml" --mongodb-uri "$uri" --listen 127.0.0.1:0 \
		--connect-listen 127.0.0.1:0 --resync 5s --poll 200ms >"$scratch/keeper.log" 2>&1 &
	keeper_pid=$!
	port=$(log_wait "$scratch/keeper.log" "$KEEPER_STARTED" "$keeper_pid") || { echo "check-metrics: spacekeeper did not start"; cat "$scratch/keeper.log"; return 1; }
	base=http://127.0.0.1:$port
	connect=http://127.0.0.1:$(sed -n "$KEEPER_CONNECT" "$scratch/keeper.log")
	"$bin/spacectl" --mongodb-uri "$uri" apply -f "$root/manifests/examples/" >/dev/null || return 1
}

# Waits (60 s at most) until the informer holds the examples and every one
# the controller reconciles is Ready (the paused annotation stops it: erin).
wait_converged() {
	local n ready paused
	paused=$(grep -l 'spacekeeper.dev/paused: "true"' "$root"/manifests/examples/* | wc -l)
	for _ in $(seq 1 300); do
		curl -sf "$base/metrics" >"$scratch/m.txt" || return 1
		n=$(scrape_sum "$scratch/m.txt" 'spacekeeper_informer_objects ')
		ready=$(awk '/^spacekeeper_userspaces\{.*ready="true"/ { s += $NF } END { print s + 0 }' \
			"$scratch/m.txt")
		[ "$n" -gt "$paused" ] && [ "$ready" -eq $((n - paused)) ] && return 0
		sleep 0.2
	done
	echo "check-metrics: not converged after 60 s ($ready of $n Ready, $paused paused):"
	grep "^spacekeeper_userspaces{" "$scratch/m.txt" | grep -v " 0$"
	echo "spacekeeper's log:"
	tail -20 "$scratch/keeper.log"
	return 1
}

scrape() {
	curl -s -XPOST "$connect/v1/userspaces/alice/connect" >/dev/null
	curl -s -XPOST "$connect/v1/userspaces/nobody/connect" >/dev/null
	mkdir -p "$out"
	curl -sf "$base/metrics" >"$out/metrics.txt" || { fail "GET $base/metrics failed"; return 1; }
}

check_exposition() {
	local msg
	msg=$(promtool check metrics <"$out/metrics.txt" 2>&1)
	[ -z "$msg" ] || fail "promtool check metrics on $out/metrics.txt: $msg"
	# The families the issue asks for, each present once converged.
	for name in process_cpu_seconds_total process_resident_memory_bytes \
		process_virtual_memory_bytes process_start_time_seconds process_open_fds \
		process_max_fds controller_runtime_reconcile_time_seconds_bucket \
		controller_runtime_reconcile_panics_total workqueue_queue_duration_seconds_bucket \
		workqueue_work_duration_seconds_bucket workqueue_unfinished_work_seconds \
		workqueue_longest_running_processor_seconds spacekeeper_provider_requests_total \
		spacekeeper_provider_request_duration_seconds_bucket \
		spacekeeper_connect_duration_seconds_bucket; do
		grep -q "^$name[{ ]" "$out/metrics.txt" || fail "$out/metrics.txt: no $name series"
	done
	grep -q '^workqueue_depth{name="userspace",controller="userspace"} ' "$out/metrics.txt" ||
		fail "$out/metrics.txt: workqueue_depth has no {name,controller} series"
	[ "$(scrape_sum "$out/metrics.txt" 'workqueue_work_duration_seconds_count')" != 0 ] ||
		fail "$out/metrics.txt: workqueue_work_duration_seconds counted no work"
	grep -q '^spacekeeper_provider_requests_total{provider="[^"]*",endpoint="POST /sandboxes",code="201"}' "$out/metrics.txt" ||
		fail "$out/metrics.txt: no provider request POST /sandboxes with code 201"
}

# Headless Chromium on URL ($2) with its console on stderr ($1: a file);
# further arguments are Chromium's.
browse() {
	local log=$1 url=$2
	shift 2
	timeout 90 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--no-first-run --user-data-dir="$scratch/chromium" --enable-logging=stderr --v=0 \
		"$@" "$url" 2>"$log"
}

# Console messages of a page (Chromium logs them as CONSOLE lines).
console_of() {
	grep -E ':CONSOLE[^]]*\]' "${1:--}"
}

check_page() {
	local bad
	browser=$(command -v chromium || command -v chromium-browser) ||
		{ fail "chromium missing (hack/deps.sh installs Debian's chromium)"; return; }
	# The console check can fail: a page with a script error is caught.
	browse "$scratch/self.log" "data:text/html,<script>no_such_function()</script>" \
		--dump-dom >/dev/null
	console_of "$scratch/self.log" | grep -q no_such_function ||
		fail "Chromium's console is not captured (a script error went unseen)"
	browse "$scratch/dom.log" "$base/" --dump-dom >"$out/status.html" ||
		fail "chromium --dump-dom $base/ failed: $(tail -3 "$scratch/dom.log")"
	for name in alice bob carol dave erin frank; do
		grep -q "<a href=\"/spaces/$name\">$name</a>" "$out/status.html" ||
			fail "$out/status.html: no link to space $name"
	done
	grep -q '<h2>Reconcile time, last hour</h2><svg' "$out/status.html" ||
		fail "$out/status.html: no reconcile time chart"
	rm -f "$out/status.png"
	browse "$scratch/shot.log" "$base/" --window-size=1280,1600 \
		--screenshot="$out/status.png" >/dev/null
	[ -s "$out/status.png" ] || fail "no screenshot of $base/ ($(tail -3 "$scratch/shot.log"))"
	browse "$scratch/space.log" "$base/spaces/bob" --dump-dom >"$scratch/bob.html"
	grep -q '<h2>Conditions</h2>' "$scratch/bob.html" || fail "$base/spaces/bob: no conditions"
	bad=$(cat "$scratch/dom.log" "$scratch/shot.log" "$scratch/space.log" | console_of)
	[ -z "$bad" ] || fail "the status page logged to the console: $bad"
}

# The last scrape of wait_converged, before any connect: what a fresh
# controller shows the dashboard and the alert rules.
check_fresh() {
	local msg
	mkdir -p "$out"
	cp "$scratch/m.txt" "$out/metrics-fresh.txt"
	[ "$(scrape_sum "$out/metrics-fresh.txt" 'spacekeeper_connect_total')" = 0 ] ||
		fail "$out/metrics-fresh.txt: taken after a connect (spacekeeper_connect_total is not 0)"
	msg=$(bash "$root/hack/check-monitoring.sh" "$out/metrics-fresh.txt" 2>&1) ||
		fail "before any connect: $msg"
}

if start_demo && wait_converged && check_fresh && scrape; then
	check_exposition
	check_page
	if [ -f "$root/hack/check-monitoring.sh" ]; then
		bash "$root/hack/check-monitoring.sh" "$out/metrics.txt" || failures=$((failures + 1))
	fi
else
	failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] || exit 1
echo "check-metrics: promtool check metrics is clean on a converged controller ($(grep -c '^# TYPE' "$out/metrics.txt") families); the status page renders in headless Chromium with no console message ($out/status.png)"
