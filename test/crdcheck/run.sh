#!/usr/bin/env bash
# The Kubernetes API server's own validation of crds/ and of the documents
# (test/crdcheck/main.go), each verdict beside spacectl's: manifests/examples,
# test/data/bad and the rows of test/conformance/parity.mjs.
# Needs hack/deps.sh (.deps/bin/crdcheck) and spacectl (SK_BIN_DIR, default
# build/san/bin).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SK_BIN_DIR:-$root/build/san/bin}
deps=${SK_DEPS_DIR:-$root/.deps}
crdcheck=$deps/bin/crdcheck
[ -x "$crdcheck" ] || { echo "crdcheck: $crdcheck missing: run hack/deps.sh" >&2; exit 1; }
# the stamp hack/deps.sh writes: a checker older than its sources would test old code
stamp=$(cd "$root/test/crdcheck" && cat go.mod go.sum ./*.go | sha256sum | cut -d' ' -f1)
[ "$(cat "$crdcheck.version" 2>/dev/null)" = "$stamp" ] ||
	{ echo "crdcheck: $crdcheck is older than test/crdcheck: run hack/deps.sh" >&2; exit 1; }
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
node "$root/test/conformance/parity.mjs" --rows >"$rows"
"$crdcheck" -spacectl "$bin/spacectl" -rows "$rows" "$root"
