#!/usr/bin/env bash
# check-monitoring: the Grafana dashboard and the alert rules of
# manifests/monitoring/ against a /metrics scrape of a live controller
# (hack/check-metrics.sh passes its scrape):
#   - promtool check rules alerts.yaml; promtool test rules alerts_test.yaml;
#   - the dashboard is JSON whose panels each have an id, a gridPos and
#     queries (node parses it);
#   - every metric name in the dashboard's queries and in the rules (names
#     under spacekeeper_, controller_runtime_, workqueue_, process_) is a
#     series of the scrape, and the check itself reports a name that is not;
#   - every alert has its runbook section in docs/operations.md, and its
#     runbook annotation links there.
#   hack/check-monitoring.sh METRICS.txt
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mon=$root/manifests/monitoring
scrape=${1:?usage: hack/check-monitoring.sh METRICS.txt}
failures=0

fail() {
	echo "check-monitoring: $*"
	failures=$((failures + 1))
}

# The queries of the dashboard, one a line (and its template variable queries).
dashboard_queries() {
	node -e '
		const fs = require("fs");
		const file = process.argv[1];
		const d = JSON.parse(fs.readFileSync(file, "utf8"));
		const ids = new Set();
		let bad = 0;
		const say = (m) => { console.error(file + ": " + m); bad++; };
		for (const p of d.panels || []) {
			if (typeof p.id !== "number" || ids.has(p.id)) say(`panel "${p.title}": missing or repeated id`);
			ids.add(p.id);
			if (!p.gridPos) say(`panel "${p.title}": no gridPos`);
			if (p.type === "row") continue;
			if (!p.targets || p.targets.length === 0) say(`panel "${p.title}": no queries`);
			for (const t of p.targets || []) {
				if (!t.expr) say(`panel "${p.title}" query ${t.refId}: empty expr`);
				else console.log(t.expr);
			}
		}
		for (const v of (d.templating || {}).list || [])
			if (v.definition) console.log(v.definition);
		if (!d.panels || d.panels.length === 0) say("no panels");
		process.exit(bad ? 1 : 0);
	' "$1"
}

# Metric names (under our prefixes) in stdin that the scrape has no series of.
unknown_names() {
	grep -v '^[[:space:]]*#' | grep -oE '\b(spacekeeper|controller_runtime|workqueue|process)_[a-zA-Z0-9_]+' |
		sort -u | while read -r name; do
		grep -qE "^$name[{ ]" "$scrape" || echo "$name"
	done
}

check_names() { # LABEL < text
	local label=$1 name n=0
	while read -r name; do
		fail "$label uses $name: not in the controller's /metrics ($scrape)"
		n=$((n + 1))
	done < <(unknown_names)
	return 0
}

out=$(promtool check rules "$mon/alerts.yaml" 2>&1) || fail "promtool check rules: $out"
out=$(cd "$mon" && promtool test rules alerts_test.yaml 2>&1) || fail "promtool test rules: $out"

queries=$(dashboard_queries "$mon/grafana-dashboard.json") || fail "$mon/grafana-dashboard.json: not a valid dashboard"
check_names "manifests/monitoring/grafana-dashboard.json" <<<"$queries"
check_names "manifests/monitoring/alerts.yaml" <"$mon/alerts.yaml"
# The check can fail: a name the controller does not export is reported.
[ "$(echo 'rate(spacekeeper_no_such_metric_total[5m])' | unknown_names)" = spacekeeper_no_such_metric_total ] ||
	fail "the name check does not report spacekeeper_no_such_metric_total"

# Every alert has its runbook: a "### NAME" section of docs/operations.md that
# its runbook annotation links to.
ops=$root/docs/operations.md
for alert in $(sed -n 's/^[[:space:]]*- alert:[[:space:]]*\([A-Za-z0-9]*\).*/\1/p' "$mon/alerts.yaml"); do
	grep -q "^### $alert\$" "$ops" || fail "docs/operations.md: no runbook section \"### $alert\" (Alerts and runbooks)"
	anchor=docs/operations.md#$(tr '[:upper:]' '[:lower:]' <<<"$alert")
	grep -A12 -- "- alert: $alert\$" "$mon/alerts.yaml" | grep -q "runbook: \"$anchor\"" ||
		fail "alerts.yaml: $alert has no runbook annotation \"$anchor\""
done

[ "$failures" -eq 0 ] || exit 1
echo "check-monitoring: rules check and unit-test clean; $(wc -l <<<"$queries") dashboard queries and $(grep -c -- '- alert:' "$mon/alerts.yaml") alerts use only exported metrics"
