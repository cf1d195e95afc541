#!/usr/bin/env bash
# The Python client suite (test/client, pytest) with the pinned e2b SDK, pytest and
# schema validators of .deps/pyclient (hack/deps.sh), against the real spacekeeper,
# FerretDB and sandboxsim of $SK_BIN_DIR (default bin/). Arguments go to pytest
# (e.g. -k busy). pytest's exit 5, "no tests collected", is a failure here.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
py=$root/.deps/pyclient/bin/python
if [ ! -x "$py" ]; then
	echo "client: $py missing; run hack/deps.sh" >&2
	exit 1
fi
cd "$root/test/client" || exit 1
"$py" -m pytest -q -p no:cacheprovider -rs "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
	echo "client: pytest ran no test" >&2
	exit 1
fi
exit "$rc"
