#!/usr/bin/env bash
# make bench, "application" run: client.sandbox(user) + a command per request with the
# Python client and the e2b SDK of .deps/pyclient. test/bench/application.py: the fast
# path and a day of use; test/bench/application_phases.py: the slowest requests (cold,
# warm with out-of-band pauses, dead data planes under Replace). Each file says what it
# prints and its environment.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=$root/.deps/pyclient/bin/python
[ -x "$py" ] || { echo "bench: $py missing; run hack/deps.sh" >&2; exit 1; }
"$py" "$root/test/bench/application.py"
exec "$py" "$root/test/bench/application_phases.py"
