#!/usr/bin/env bash
# Runs every test suite of a build (default build/san/test), keeps going
# after a failure, and prints one closing line: "N passed, N failed".
set -u
dir=${1:-build/san/test}
root=$(cd "$(dirname "$0")/.." && pwd)
export SK_ROOT=${SK_ROOT:-$root}
passed=0
failed=0
failed_names=()

run() {
	local name=$1
	shift
	echo "=== $name"
	if "$@"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failed_names+=("$name")
	fi
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
# the API server's answers on the inputs of issue 10, against the CRD and spacectl
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
[ ${#failed_names[@]} -gt 0 ] && echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
