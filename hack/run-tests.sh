#!/usr/bin/env bash
# Runs every test suite of a build (default build/san/test), keeps going
# after a failure, and prints one closing line: "N passed, N failed".
# A failed suite's failing checks are repeated at the end (a CI log is often
# read from its tail) and its whole output is kept in $SK_TEST_LOG_DIR.
set -u
dir=${1:-build/san/test}
root=$(cd "$(dirname "$0")/.." && pwd)
export SK_ROOT=${SK_ROOT:-$root}
log_dir=${SK_TEST_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/sk-suites.XXXXXX")}
mkdir -p "$log_dir"
passed=0
failed=0
failed_names=()

run() {
	local name=$1
	shift
	echo "=== $name"
	if "$@" 2>&1 | tee "$log_dir/$name.log"; [ "${PIPESTATUS[0]}" -eq 0 ]; then
		passed=$((passed + 1))
		rm -f "$log_dir/$name.log"
	else
		failed=$((failed + 1))
		failed_names+=("$name")
	fi
}

# The lines that name a failure: Check's "file:line:F|E:suite:case:", node's
# "not ok", pytest's "FAILED", and the readme checker's "differ" lines.
summarize_failures() {
	local name
	for name in "${failed_names[@]}"; do
		echo "--- $name failed; whole output: $log_dir/$name.log"
		grep -E '^[^ ]+:[0-9]+:[EF]:|^not ok |^FAILED |^ERROR |differs?:|FAIL' \
			"$log_dir/$name.log" | cut -c1-400 | tail -n 40
	done
}

run unit "$dir/unit_tests"
SK_TEST_NEEDS_MONGO=1 run integration "$dir/integration_tests"
SK_TEST_NEEDS_MONGO=1 run e2e "$dir/e2e_tests"
# the marked examples of README.md and docs/*.md, run and compared; usage blocks
# against --help; relative links (test/e2e/check_readme.py)
run readme python3 "$root/test/e2e/check_readme.py"
# make demo's spacectl context: get, sandboxes and plan through it; nothing left after
run demo python3 "$root/test/e2e/check_demo.py"
if [ -f "$root/test/conformance/e2b_sdk.mjs" ]; then
	run conformance node "$root/test/conformance/e2b_sdk.mjs"
fi
# promtool on a live controller's /metrics, the dashboard and the alert rules
run metrics bash "$root/hack/check-metrics.sh"
run daytona-sdk node "$root/test/conformance/daytona_sdk.mjs"
run crd node "$root/test/conformance/crd_schema.mjs"
# the API server's answers on the inputs where spacectl and the API server once disagreed, against the CRD and spacectl
run parity node "$root/test/conformance/parity.mjs"
run deploy "$root/test/deploy/check.sh"
# docs/cli and docs/man are what the binaries' --help says (make docs), mandoc-lint clean
run docs bash -c '"$1" --self-test && "$1"' - "$root/hack/check-docs.sh"
# the Python client (clients/python) with the e2b SDK against the real binaries, and
# every answer it receives against docs/connect-api.openapi.yaml (test/client)
run client "$root/test/client/run.sh"
# the TypeScript client (clients/typescript) with the e2b JS SDK, node's test runner
run client-ts node --test "$root/test/client/typescript.test.mjs"

echo
if [ ${#failed_names[@]} -gt 0 ]; then
	summarize_failures
	echo "failed suites: ${failed_names[*]}"
else
	rmdir "$log_dir" 2>/dev/null
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
