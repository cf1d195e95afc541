#!/usr/bin/env bash
# Runs every test suite of a build (default build/san/test), keeps going
# after a failure, and prints each suite's time and one closing line:
# "N passed, N failed".
#
#   hack/run-tests.sh [DIR [SUITE...]]   SUITE: a name of the table at the end
#                                        (e2e/controller, readme, ...): those only
#
# The suites run SK_TEST_JOBS at a time (default the CPUs plus one): most of an
# end-to-end test is waiting for a controller, a simulator or a timeout, so
# suites side by side use the machine that one alone leaves idle. Each Check
# suite of the unit, integration and e2e binaries is a process of its own
# (CK_RUN_SUITE=NAME, the names from `BINARY --list`), the integration and e2e
# ones each with its own FerretDB; with its own temporary directory and free
# ports, as every other suite has: nothing is shared between two suites. The longest start first (slow_first below).
# A suite's output is printed whole when it ends (never interleaved). A failed
# suite's failing checks are repeated at the end (a CI log is often read from
# its tail) and its whole output is kept in $SK_TEST_LOG_DIR.
set -u
dir=${1:-build/san/test}
shift $(($# > 0 ? 1 : 0))
root=$(cd "$(dirname "$0")/.." && pwd)
export SK_ROOT=${SK_ROOT:-$root}
log_dir=${SK_TEST_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sk-suites.XXXXXX")}
mkdir -p "$log_dir"
# (Twice the CPUs was faster by a minute on 2 cores but starved the timing of
# e2e/controller_archive's interrupted-archive case once in a quiet run.)
max_jobs=${SK_TEST_JOBS:-$(($(nproc 2>/dev/null || echo 1) + 1))}
only=" $* "

# The suites that take longest (on 2 cores, under ASan), started first so
# that the run does not end waiting for one of them; the others follow in
# the order of the table below.
slow_first="e2e/controller e2e/controller_archive e2e/clock e2e/clock_jump client unit/input
	e2e/spacectl_kubectl readme e2e/capacity e2e/capacity_archive e2e/replicas deploy
	e2e/spacectl_records e2e/migrate_e2e e2e/spacectl_ops e2e/platform e2e/shutdown unit/util docs
	unit/schema e2e/quota_e2e e2e/guard"

names=()
cmds=()
# add NAME CMD...: a suite of the run (unless SUITE arguments leave it out).
add() {
	local name=$1
	shift
	[ "$only" = "  " ] || [[ $only == *" $name "* ]] || return 0
	names+=("$name")
	cmds+=("$(printf '%q ' "$@")")
}

# add_check KIND [ENV...]: each suite of DIR/KIND_tests as its own process.
add_check() {
	local kind=$1 suite list
	shift
	if ! list=$("$dir/${kind}_tests" --list); then
		add "$kind" "$dir/${kind}_tests" --list # fails again, its error in the log
		return
	fi
	for suite in $list; do
		add "$kind/$suite" env "$@" CK_RUN_SUITE="$suite" "$dir/${kind}_tests"
	done
}

add_check unit
add_check integration SK_TEST_NEEDS_MONGO=1
add_check e2e SK_TEST_NEEDS_MONGO=1
# the marked examples of README.md and docs/*.md, run and compared; usage blocks
# against --help; relative links (test/e2e/check_readme.py)
add readme python3 "$root/test/e2e/check_readme.py"
# make demo's spacectl context: get, sandboxes and plan through it; nothing left after
add demo python3 "$root/test/e2e/check_demo.py"
if [ -f "$root/test/conformance/e2b_sdk.mjs" ]; then
	add conformance node "$root/test/conformance/e2b_sdk.mjs"
fi
# the e2b Python SDK against the simulator's volumes, snapshots, fork and metrics
add conformance-py "$root/.deps/pyclient/bin/python" "$root/test/conformance/e2b_sdk.py"
# promtool on a live controller's /metrics, the dashboard and the alert rules
add metrics bash "$root/hack/check-metrics.sh"
add daytona-sdk node "$root/test/conformance/daytona_sdk.mjs"
add crd node "$root/test/conformance/crd_schema.mjs"
# the API server's answers on the inputs where spacectl and the API server once disagreed, against the CRD and spacectl
add parity node "$root/test/conformance/parity.mjs"
# the Kubernetes API server's own code (k8s.io/apiextensions-apiserver) on crds/: accepted
# on create, CEL cost included; every example, bad document and parity row through a
# custom resource create, with spacectl's verdict beside it (test/crdcheck)
add crdcheck "$root/test/crdcheck/run.sh"
add deploy "$root/test/deploy/check.sh"
# docs/cli and docs/man are what the binaries' --help says (make docs), mandoc-lint clean
add docs bash -c '"$1" --self-test && "$1"' - "$root/hack/check-docs.sh"
# the Python client (clients/python) with the e2b SDK against the real binaries, and
# every answer it receives against docs/connect-api.openapi.yaml (test/client)
add client "$root/test/client/run.sh"
# the TypeScript client (clients/typescript) with the e2b JS SDK, node's test runner
add client-ts node --test "$root/test/client/typescript.test.mjs"

if [ ${#names[@]} -eq 0 ]; then
	echo "run-tests: no suite named:$only" >&2
	exit 2
fi

# The order of the run: the slow ones first, then the rest as added.
order=()
for slow in $slow_first; do
	for i in "${!names[@]}"; do
		[ "${names[i]}" = "$slow" ] && order+=("$i")
	done
done
for i in "${!names[@]}"; do
	[[ " $slow_first " == *[[:space:]]"${names[i]}"[[:space:]]* ]] || order+=("$i")
done

log_of() { echo "$log_dir/${1//\//.}.log"; }

# start I: suite I in the background; its output and its times go to files.
start() {
	local i=$1 log
	log=$(log_of "${names[i]}")
	(
		TIMEFORMAT='%R %U %S'
		rc=0
		{ time { eval "${cmds[i]}" >"$log" 2>&1 </dev/null || rc=$?; }; } 2>"$log.time"
		exit "$rc"
	) &
	pids[i]=$!
}

# finish I STATUS: prints suite I's output whole, counts it, keeps a failed one's log.
finish() {
	local i=$1 rc=$2 name=${names[$1]} log wall user sys
	log=$(log_of "$name")
	read -r wall user sys <"$log.time" 2>/dev/null || wall=0 user=0 sys=0
	rm -f "$log.time"
	echo "=== $name (${wall%.*} s)"
	cat "$log"
	times_lines+=("$(printf '%-32s %6.0f s wall %6.0f s CPU  %s' "$name" "$wall" \
		"$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" "$([ "$rc" -eq 0 ] && echo ok || echo FAILED)")")
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
		rm -f "$log"
	else
		failed=$((failed + 1))
		failed_names+=("$name")
	fi
}

passed=0
failed=0
failed_names=()
times_lines=()
pids=()
t0=$SECONDS
next=0
running=0
while [ "$next" -lt ${#order[@]} ] || [ "$running" -gt 0 ]; do
	while [ "$running" -lt "$max_jobs" ] && [ "$next" -lt ${#order[@]} ]; do
		start "${order[next]}"
		next=$((next + 1))
		running=$((running + 1))
	done
	wait -n -p done_pid
	rc=$?
	for i in "${!pids[@]}"; do
		if [ "${pids[i]}" = "$done_pid" ]; then
			unset 'pids[i]'
			finish "$i" "$rc"
			running=$((running - 1))
			break
		fi
	done
done

# The lines that name a failure: Check's "file:line:F|E:suite:case:", node's
# "not ok", pytest's "FAILED", and the readme checker's "differ" lines.
summarize_failures() {
	local name
	for name in "${failed_names[@]}"; do
		echo "--- $name failed; whole output: $(log_of "$name")"
		grep -E '^[^ ]+:[0-9]+:[EF]:|^not ok |^FAILED |^ERROR |differs?:|FAIL|no test ran' \
			"$(log_of "$name")" | cut -c1-400 | tail -n 40
	done
}

echo
echo "suite times ($max_jobs at a time; CPU: user + sys of the suite's processes):"
printf '%s\n' "${times_lines[@]}" | sort -k2,2 -n -r
echo "all suites: $((SECONDS - t0)) s"
if [ ${#failed_names[@]} -gt 0 ]; then
	summarize_failures
	echo "failed suites: ${failed_names[*]}"
else
	rmdir "$log_dir" 2>/dev/null
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
