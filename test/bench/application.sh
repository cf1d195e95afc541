#!/usr/bin/env bash
# make bench, "application" run: client.sandbox(user) + commands.run("true")
# per request with the Python client and the e2b SDK of .deps/pyclient; see
# test/bench/application.py for what it prints and its environment.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=$root/.deps/pyclient/bin/python
[ -x "$py" ] || { echo "bench: $py missing; run hack/deps.sh" >&2; exit 1; }
exec "$py" "$root/test/bench/application.py"
