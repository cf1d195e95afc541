#!/usr/bin/env bash
# Offline checks of the deployment files, one line per check and a
# closing "deploy: N passed, N failed":
#   - manifests/deploy: the base and every overlay render with kustomize and every object
#     validates (test/deploy/validate.py: strict Kubernetes schemas of kubernetes-validate,
#     our ServiceMonitor schema, the hardening rules); each fixture in test/deploy/bad/ is
#     rejected by the same check, with the error its `expect` file names;
#     test/deploy/wiring.py checks that the controller's --config, apiKeyFile, MongoDB URI
#     env and ports meet their ConfigMap, Secret mounts and probes;
#   - the ControllerConfigs of the ConfigMap and of the systemd example parse with spacectl;
#   - run here: the Deployment's command line and ConfigMap config (provider: a local
#     sandboxsim) against a real FerretDB answer /readyz and /metrics; the CronJob's
#     spacectl command line applies and prunes a checkout; the controller converges it;
#   - Containerfile: RUNTIME_LIBS is exactly the Debian packages of the libraries that
#     bin/spacekeeper and bin/spacectl link (readelf NEEDED, resolved by ldd, dpkg -S);
#   - manifests/systemd/spacekeeper.service passes `systemd-analyze verify` without a
#     warning and scores at most 2.0 in `systemd-analyze security` (skipped, with a message,
#     where systemd-analyze is missing).
# Needs hack/deps.sh (kustomize in .deps/bin, the validator's venv in .deps/python) and the
# binaries in $SK_BIN_DIR (default bin/).
set -u
root=${SK_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin_dir=${SK_BIN_DIR:-$root/bin}
kustomize=$root/.deps/bin/kustomize
python=$root/.deps/python/bin/python
# The oldest Kubernetes release still commonly run and the newest the package ships.
k8s_versions=(-k 1.33.0 -k 1.37.0)
tmp=$(mktemp -d)
sk_pid=
sim_pid=
trap cleanup EXIT
passed=0
failed=0

pass() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# render DIR OUT: kustomize build, errors shown.
render() { "$kustomize" build "$1" >"$2" 2>"$tmp/kustomize.err" || { cat "$tmp/kustomize.err"; return 1; }; }

# manifest_check FILE: validate.py, then (when it passes) wiring.py; output in $tmp/v.out.
manifest_check() {
	mkdir -p "$tmp/wiring"
	"$python" "$root/test/deploy/validate.py" "${k8s_versions[@]}" "$1" >"$tmp/v.out" &&
		"$python" "$root/test/deploy/wiring.py" "$1" "$tmp/wiring" http://127.0.0.1:1 \
			127.0.0.1:1 mongodb://127.0.0.1:1 >>"$tmp/v.out"
}

check_good() {
	local dir=$1 out=$tmp/good.yaml
	rm -f "$tmp/v.out"
	if render "$root/$dir" "$out" && manifest_check "$out"; then
		pass "$dir renders, validates and is wired ($(tail -1 "$tmp/v.out"))"
	else
		grep -v '^ok' "$tmp/v.out" 2>/dev/null
		fail "$dir"
	fi
}

# A bad fixture: renders, then the manifest check fails with what its expect file says;
# when validate.py rejects it, it rejects exactly one object.
check_bad() {
	local dir=$1 out=$tmp/bad.yaml expect
	expect=$(cat "$root/$dir/expect")
	render "$root/$dir" "$out" || { fail "$dir does not render"; return; }
	if manifest_check "$out"; then
		cat "$tmp/v.out"
		fail "$dir: accepted, want \"$expect\""
	elif grep '^FAIL' "$tmp/v.out" | grep -qF -- "$expect" &&
		! grep -Eq ', ([2-9]|[1-9][0-9]+) invalid ' "$tmp/v.out"; then
		pass "$dir rejected: $expect"
	else
		cat "$tmp/v.out"
		fail "$dir: want one invalid object and \"$expect\""
	fi
}

# check_config NAME FILE: spacectl parses the ControllerConfig strictly; asking it for a
# provider that no config has stops right after the parse, without any network.
check_config() {
	local name=$1 file=$2 out
	out=$("$bin_dir/spacectl" sandboxes --config "$file" --provider x-config-check 2>&1)
	# (grep: libmongoc may add a warning line of its own)
	if grep -qxF "spacectl: no provider \"x-config-check\" in $file" <<<"$out"; then
		pass "$name is a valid ControllerConfig"
	else
		echo "$out"
		fail "$name is not a valid ControllerConfig"
	fi
}

configmap_config() {
	"$python" - "$1" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "ConfigMap" and "spacekeeper.yaml" in d.get("data", {}):
        sys.stdout.write(d["data"]["spacekeeper.yaml"])
PY
}

# containerfile_libs FILE: the words of its ARG RUNTIME_LIBS="...", one per line, sorted.
containerfile_libs() {
	sed -n 's/^ARG RUNTIME_LIBS="\(.*\)"$/\1/p' "$1" | tr ' ' '\n' | sed '/^$/d' | sort -u
}

# pkg_of PATH: the Debian package that owns a library (usrmerge: /lib is /usr/lib).
pkg_of() {
	local p
	for p in "$1" "/usr$1" "$(readlink -f "$1")"; do
		dpkg -S "$p" 2>/dev/null | sed -n '1s/:.*//p' | grep . && return 0
	done
	return 1
}

# The packages of the binaries' own NEEDED libraries, sorted; libc6 (in every Debian image)
# and the sanitizer runtimes (of `make SANITIZE=1` only) left out.
needed_packages() {
	local so path
	ldd "$bin_dir/spacekeeper" "$bin_dir/spacectl" | awk '$2 == "=>" { print $1, $3 }' |
		sort -u >"$tmp/ldd.map"
	readelf -d "$bin_dir/spacekeeper" "$bin_dir/spacectl" |
		sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | sort -u |
		grep -Ev '^lib(asan|ubsan|lsan|tsan|hwasan)\.so' | while read -r so; do
		path=$(awk -v so="$so" '$1 == so { print $2; exit }' "$tmp/ldd.map")
		[ -n "$path" ] || { echo "UNRESOLVED:$so"; continue; }
		pkg_of "$path" || echo "NO-PACKAGE:$path"
	done | grep -vx 'libc6' | sort -u
}

# dep_closure PKG...: the installed packages PKG... depend on (Depends, Pre-Depends),
# recursively, from dpkg's database (no apt lists needed); one per line, sorted.
dep_closure() {
	local -A seen=()
	local queue=("$@") p d
	while [ ${#queue[@]} -gt 0 ]; do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		[ -n "${seen[$p]:-}" ] && continue
		seen[$p]=1
		for d in $(dpkg-query -W -f='${Depends}, ${Pre-Depends}' "$p" 2>/dev/null |
			tr ',|' '\n\n' | sed 's/([^)]*)//; s/:any//; s/[[:space:]]//g' | sort -u); do
			[ -z "${seen[$d]:-}" ] && dpkg-query -W "$d" >/dev/null 2>&1 && queue+=("$d")
		done
	done
	printf '%s\n' "${!seen[@]}" | sort
}

# The packages of every library ldd resolves for the two binaries (the whole closure).
ldd_packages() {
	local path
	ldd "$bin_dir/spacekeeper" "$bin_dir/spacectl" | awk '$2 == "=>" { print $3 }' | sort -u |
		grep -Ev '/lib(asan|ubsan|lsan|tsan|hwasan)\.so' | while read -r path; do
		pkg_of "$path" || echo "NO-PACKAGE:$path"
	done | sort -u
}

# containerfile_matches FILE: RUNTIME_LIBS equals needed_packages; prints the difference.
containerfile_matches() {
	containerfile_libs "$1" >"$tmp/listed"
	needed_packages >"$tmp/needed"
	if [ ! -s "$tmp/needed" ]; then
		echo "no library packages found for $bin_dir/spacekeeper $bin_dir/spacectl"
		return 1
	fi
	diff "$tmp/needed" "$tmp/listed" >"$tmp/diff" && return 0
	sed -n 's/^< /  missing from RUNTIME_LIBS: /p; s/^> /  not needed by the binaries: /p' "$tmp/diff"
	return 1
}

# unit_clean FILE: systemd-analyze verify passes and prints nothing (it exits 0 on unknown
# keys and bad values, which it only reports). ExecStart must exist: point it at $bin_dir.
unit_clean() {
	local unit=$tmp/spacekeeper.service
	sed "s|/usr/local/bin/spacekeeper|$bin_dir/spacekeeper|" "$1" >"$unit"
	systemd-analyze verify "$unit" >"$tmp/verify.out" 2>&1 && [ ! -s "$tmp/verify.out" ]
}

# A free loopback port below the ephemeral range (as hack/ferretdb.sh picks them).
free_port() {
	local port
	for _ in $(seq 1 100); do
		port=$((20000 + RANDOM % 12000))
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return 0; }
	done
	return 1
}

# wait_http URL CODE SECONDS: until URL answers CODE.
wait_http() {
	local i
	for i in $(seq 1 $(($3 * 5))); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# The CronJob's command line, one word a line, its checkout directory replaced by $2.
cronjob_command() {
	"$python" - "$1" "$2" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "CronJob":
        c = d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        for w in c.get("command", []) + c.get("args", []):
            print(w.replace("/git/current", sys.argv[2]))
PY
}

# smoke_run: the Deployment's own command line and ConfigMap config (provider pointed at a
# local sandboxsim, the key file and the config at temporary paths) against a real FerretDB;
# the GitOps CronJob's command line applies a labelled UserSpace, the controller makes it
# Ready, and a second run without the file prunes it. SIGTERM ends the controller with 0.
smoke_run() {
	local run=$tmp/run sim_port port uri cmd
	mkdir -p "$run/git/userspaces"
	uri=$("$root/hack/ferretdb.sh" start "$run/ferretdb") || { fail "FerretDB did not start"; return; }
	sim_port=$(free_port) && port=$(free_port)
	"$bin_dir/sandboxsim" --listen "127.0.0.1:$sim_port" >"$run/sim.log" 2>&1 &
	sim_pid=$!
	"$python" "$root/test/deploy/wiring.py" "$tmp/base.yaml" "$run" "http://127.0.0.1:$sim_port" \
		"127.0.0.1:$port" "$uri" || { fail "wiring.py"; return; }
	echo e2b_0123456789abcdef >"$run/api-key"
	mapfile -t args <"$run/args"
	"$bin_dir/spacekeeper" "${args[@]}" >"$run/spacekeeper.log" 2>&1 &
	sk_pid=$!
	if wait_http "http://127.0.0.1:$port/readyz" 200 30 &&
		curl -s "http://127.0.0.1:$port/metrics" | grep -q '^spacekeeper_'; then
		pass "the Deployment's command line serves /readyz 200 and /metrics: ${args[*]}"
	else
		tail -5 "$run/spacekeeper.log"
		fail "the Deployment's command line: no /readyz 200 within 30 s"
	fi
	printf 'apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: gitops-alice\n  labels: {managed-by: gitops}\nspec:\n  userID: gitops-alice\n' \
		>"$run/git/userspaces/alice.yaml"
	render "$root/manifests/deploy/overlays/example" "$tmp/overlay.yaml"
	mapfile -t cmd < <(cronjob_command "$tmp/overlay.yaml" "$run/git")
	if [ "${cmd[0]:-}" = spacectl ] &&
		SPACEKEEPER_MONGODB_URI=$uri "$bin_dir/spacectl" "${cmd[@]:1}" >"$run/apply.out" 2>&1 &&
		grep -qx 'userspace/gitops-alice created' "$run/apply.out" &&
		SPACEKEEPER_MONGODB_URI=$uri "$bin_dir/spacectl" wait us gitops-alice \
			--for=condition=Ready --timeout 60s >/dev/null; then
		pass "the CronJob's command line applies from the checkout; the controller makes it Ready"
	else
		cat "$run/apply.out"
		fail "the CronJob's command line (${cmd[*]}) or the controller"
	fi
	rm "$run/git/userspaces/alice.yaml"
	printf 'apiVersion: spacekeeper.dev/v1alpha1\nkind: UserSpace\nmetadata:\n  name: gitops-bob\n  labels: {managed-by: gitops}\nspec:\n  userID: gitops-bob\n' \
		>"$run/git/userspaces/bob.yaml"
	if SPACEKEEPER_MONGODB_URI=$uri "$bin_dir/spacectl" "${cmd[@]:1}" >"$run/apply.out" 2>&1 &&
		grep -qx 'userspace/gitops-alice pruned' "$run/apply.out"; then
		pass "a UserSpace removed from the checkout is pruned"
	else
		cat "$run/apply.out"
		fail "a UserSpace removed from the checkout was not pruned"
	fi
	kill -TERM "$sk_pid"
	if wait "$sk_pid"; then
		pass "SIGTERM: the controller exits 0"
	else
		tail -5 "$run/spacekeeper.log"
		fail "SIGTERM: the controller did not exit 0"
	fi
	sk_pid=
}

cleanup() {
	[ -n "${sk_pid:-}" ] && kill "$sk_pid" 2>/dev/null
	[ -n "${sim_pid:-}" ] && kill "$sim_pid" 2>/dev/null
	[ -d "$tmp/run/ferretdb" ] && "$root/hack/ferretdb.sh" stop "$tmp/run/ferretdb" >/dev/null 2>&1
	rm -rf "$tmp"
}

for tool in "$kustomize" "$python"; do
	[ -x "$tool" ] || { echo "FAIL $tool missing: run hack/deps.sh"; echo "deploy: 0 passed, 1 failed"; exit 1; }
done

echo "--- manifests/deploy"
check_good manifests/deploy/base
for o in "$root"/manifests/deploy/overlays/*/; do
	check_good "manifests/deploy/overlays/$(basename "$o")"
done
for b in "$root"/test/deploy/bad/*/; do
	check_bad "test/deploy/bad/$(basename "$b")"
done

echo "--- ControllerConfigs"
if render "$root/manifests/deploy/base" "$tmp/base.yaml" && configmap_config "$tmp/base.yaml" >"$tmp/configmap.yaml" &&
	[ -s "$tmp/configmap.yaml" ]; then
	check_config "the ConfigMap's spacekeeper.yaml" "$tmp/configmap.yaml"
else
	fail "no spacekeeper.yaml in the base's ConfigMap"
fi
check_config manifests/systemd/spacekeeper.yaml "$root/manifests/systemd/spacekeeper.yaml"
printf 'apiVersion: spacekeeper.dev/v1alpha1\nkind: ControllerConfig\ncontroller: {workerz: 1}\n' >"$tmp/bad-config.yaml"
if "$bin_dir/spacectl" sandboxes --config "$tmp/bad-config.yaml" --provider x-config-check 2>&1 |
	grep -q 'controller.workerz: unknown field'; then
	pass "a config with an unknown field is rejected"
else
	fail "a config with an unknown field was not rejected"
fi

echo "--- the Deployment and the CronJob, run here"
smoke_run

echo "--- Containerfile"
if containerfile_matches "$root/Containerfile"; then
	pass "Containerfile RUNTIME_LIBS = packages of ldd bin/spacekeeper bin/spacectl: $(tr '\n' ' ' <"$tmp/listed")"
else
	fail "Containerfile RUNTIME_LIBS differs from what the binaries link"
fi
ldd_packages >"$tmp/ldd.pkgs"
dep_closure libc6 $(containerfile_libs "$root/Containerfile") >"$tmp/closure"
missing=$(comm -23 "$tmp/ldd.pkgs" "$tmp/closure" | tr '\n' ' ')
if [ -s "$tmp/ldd.pkgs" ] && [ -z "$missing" ]; then
	pass "all $(wc -l <"$tmp/ldd.pkgs") packages of the ldd closure come with RUNTIME_LIBS and libc6 (dpkg Depends)"
else
	fail "libraries ldd resolves that RUNTIME_LIBS does not bring: ${missing:-none found}"
fi
sed 's/ libyaml-0-2//' "$root/Containerfile" >"$tmp/Containerfile.bad"
if containerfile_matches "$tmp/Containerfile.bad" >/dev/null; then
	fail "a Containerfile without libyaml-0-2 was not caught"
else
	pass "a Containerfile without libyaml-0-2 is caught"
fi

echo "--- manifests/systemd"
unit=$root/manifests/systemd/spacekeeper.service
if ! command -v systemd-analyze >/dev/null; then
	echo "skip systemd-analyze is not installed: spacekeeper.service not verified"
else
	if unit_clean "$unit"; then
		pass "systemd-analyze verify spacekeeper.service: no warning"
	else
		cat "$tmp/verify.out"
		fail "systemd-analyze verify spacekeeper.service"
	fi
	sed 's/^ProtectSystem=strict/ProtectSystm=strict/' "$unit" >"$tmp/typo.service"
	if unit_clean "$tmp/typo.service"; then
		fail "a unit with a misspelt key passed verify"
	else
		pass "a unit with a misspelt key is caught"
	fi
	sed "s|/usr/local/bin/spacekeeper|$bin_dir/spacekeeper|" "$unit" >"$tmp/spacekeeper.service"
	if systemd-analyze security --offline=yes --threshold=20 "$tmp/spacekeeper.service" >"$tmp/sec.out" 2>&1; then
		pass "systemd-analyze security: $(grep -o 'exposure level.*' "$tmp/sec.out" | sed 's/for [^:]*: //')"
	else
		tail -1 "$tmp/sec.out"
		fail "systemd-analyze security: exposure above 2.0"
	fi
	for key in DynamicUser=yes ProtectSystem=strict Restart=on-failure \
		'LoadCredential=e2b-api-key:'; do
		grep -q "^$key" "$unit" || fail "spacekeeper.service lacks $key"
	done
fi

echo
echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
