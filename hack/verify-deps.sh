#!/usr/bin/env bash
# verify-deps: dependencies point one way (docs/architecture.md, Packages) and the planner is pure.
#
#   hack/verify-deps.sh [OBJDIR]              OBJDIR holds pkg/*/*.o (default build/rel)
#   hack/verify-deps.sh --self-test [OBJDIR]  shows that both checks fail when
#       they should: on a scratch copy with bad includes, with a plan.o that
#       calls sk_sandbox_get, and with an object holding a static counter
#       (the tree itself is not touched)
#
# (a) Includes. A file of pkg/X may include its own headers, the public
#     headers of a package that the table below lists for X (a package's
#     one X.h, or for api one header per concern: userspace.h, config.h,
#     ...), and the libraries of the second table. Never a private header
#     (*_int.h) of another package, never anything under cmd/.
# (b) The planner links alone. Starting from the planner's objects, the
#     objects of api, util and reconcile that define a symbol they need are
#     pulled in (as a linker pulls archive members); what is still undefined
#     must then be neither an sk_ function of another package (store,
#     sandbox, ...) nor a symbol of a network library: libcurl,
#     libmongoc/libbson, libmicrohttpd. libc, libm, pthread and jansson are
#     fine, and so is libyaml: the spec table (api/schema.c) carries its
#     validators, which report positions through the parsed document (api/doc.c).
# (c) No process-global mutable state: no pkg object holds writable data
#     (objdump: an object symbol in .data or .bss, file-scope or
#     function-static) but the few listed below, each with its reason.
# (d) No decision read from an error's text: in pkg/, no string compare
#     (strstr, strcmp, strncmp, their case-blind kin, memmem, sk_str_eq)
#     takes a message (an argument named *message or *msg) but the few
#     listed below, each with its reason; a caller reads err->code (one
#     classifier: sk_error_retry) or err->domain. Line-based: a call is
#     caught when its name and that argument share a line.
# (e) Comments and documents name what is in the repository: no issue
#     number (an issue is closed and forgotten; the code and docs/ stay) and
#     no document outside it, in the sources, scripts, manifests and docs.
# Prints one line per violation and exits 1; otherwise one summary line.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
mode=check
if [ "${1:-}" = --self-test ]; then
	mode=self-test
	shift
fi
objdir=${1:-build/rel}
case $objdir in /*) ;; *) objdir=$root/$objdir ;; esac

# Package -> the packages its files may include. The order of the layering:
# util <- api <- {store, sandbox, objstore} <- reconcile <- controller; workqueue,
# metrics and informer sit beside reconcile and know nothing of each other
# (the controller connects the informer to the queue).
declare -A may_include=(
	[util]=""
	[api]="util"
	[store]="util api"
	[sandbox]="util api"
	[objstore]="util"
	[reconcile]="util api store sandbox objstore"
	[workqueue]="util"
	[metrics]="util"
	[informer]="util api store"
	[controller]="util api store sandbox objstore reconcile workqueue informer metrics"
)
# Package -> the external libraries whose headers it may include (jansson
# and libc are everyone's).
declare -A may_use=(
	[api]="yaml"
	[store]="mongoc bson"
	[sandbox]="curl"
	[objstore]="curl" # the S3 client (SigV4 signed by libcurl)
	# curl: forward.c passes a connect on to the replica holding the user's shard
	[controller]="microhttpd curl"
)
planner_roots="plan plan_status plan_deadline action orphans migrate_plan" # in pkg/reconcile
planner_pool="api util reconcile"               # packages the linker may pull from
# object:symbol -> why it may stay process-global.
declare -A global_ok=(
	[store/mongo.o:mongoc_once]="mongoc_init runs once per process (libmongoc's own rule)"
	[store/mongo.o:mongoc_ready]="pairs mongoc_cleanup with that one mongoc_init"
)
forbidden_syms='^(curl_|Curl_|mongoc_|_mongoc_|bson_|_bson_|MHD_)'
# "file:text of the line" -> why a string compare over a message may stay.
declare -A text_ok=(
	["pkg/store/mongo.c:strstr(e->message, \"UNIQUE constraint failed\")"]="FerretDB 1.24 reports a unique-index violation on update only in its text (an internal error, no code of its own): the server's words, not ours"
	["pkg/sandbox/http.c:strstr(msg, secret)"]="redaction: a secret is cut out of a message; nothing is decided"
	["pkg/reconcile/plan_network.c:strncmp(rec->message, prefix"]="the NetworkPolicy condition's message is the planner's own record (\"sandbox ID: POLICY\"), written by plan_network.c, not an error"
)
text_compare='\<(strstr|strcasestr|strcmp|strncmp|strcasecmp|strncasecmp|memmem|sk_str_eq)[[:space:]]*\([^()]*(message|msg)\>'

violations=0
fail() {
	echo "verify-deps: $*"
	violations=$((violations + 1))
}

has_word() { # has_word WORD "LIST"
	case " $2 " in *" $1 "*) return 0 ;; esac
	return 1
}

lib_of_header() {
	case $1 in
	curl/*) echo curl ;;
	mongoc/* | mongoc.h) echo mongoc ;;
	bson/* | bson.h) echo bson ;;
	microhttpd.h) echo microhttpd ;;
	yaml.h) echo yaml ;;
	esac
}

# "../Y/h.h" or "Y/h.h" (through -Ipkg) -> Y; "h.h" -> the file's own package.
check_quoted() { # FILE:LINE PKG PATH
	local where=$1 pkg=$2 path=$3 dep hdr
	case $path in
	*cmd/*)
		fail "$where: includes \"$path\": pkg/ never includes cmd/"
		return
		;;
	../*/*) dep=${path#../} ;;
	*/*) dep=$path ;;
	*) return ;;
	esac
	hdr=${dep#*/}
	dep=${dep%%/*}
	if [ ! -d "pkg/$dep" ] || [ "$dep" = .. ]; then
		fail "$where: includes \"$path\": outside pkg/"
	elif [ "$dep" = "$pkg" ]; then
		return
	elif ! has_word "$dep" "${may_include[$pkg]}"; then
		fail "$where: includes \"$path\": $pkg may include only: ${may_include[$pkg]:-(no other package)}"
	elif [[ $hdr == *_int.h ]]; then
		fail "$where: includes \"$path\": the private header of $dep (use its public headers)"
	fi
}

check_angled() { # FILE:LINE PKG PATH
	local lib
	lib=$(lib_of_header "$3")
	if [ -n "$lib" ] && ! has_word "$lib" "${may_use[$2]:-}"; then
		fail "$1: includes <$3>: $2 may use only: ${may_use[$2]:-libc and jansson}"
	fi
}

check_includes() {
	local f pkg hit text inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*'
	for f in pkg/*/*.c pkg/*/*.h; do
		pkg=${f#pkg/}
		pkg=${pkg%%/*}
		if [ -z "${may_include[$pkg]+set}" ]; then
			fail "$f: package $pkg is not in the layering table of hack/verify-deps.sh (add it)"
			continue
		fi
		while IFS= read -r hit; do
			text=${hit#*:}
			if [[ $text =~ ${inc}\"([^\"]+)\" ]]; then
				check_quoted "$f:${hit%%:*}" "$pkg" "${BASH_REMATCH[1]}"
			elif [[ $text =~ ${inc}\<([^\>]+)\> ]]; then
				check_angled "$f:${hit%%:*}" "$pkg" "${BASH_REMATCH[1]}"
			fi
		done < <(grep -n -E "$inc" "$f")
	done
}

# The objects of pkg/ whose source still exists (a renamed file leaves its
# old object behind in a build tree until `make clean`).
# The self-test's scratch objects have no source: it sets VERIFY_DEPS_ALL=1.
objects() {
	local o src pkgs=${1:-*}
	for o in "$objdir"/pkg/$pkgs/*.o; do
		src=${o#"$objdir"/}
		[ -n "${VERIFY_DEPS_ALL:-}" ] || [ -f "${src%.o}.c" ] && echo "$o"
	done
}

# One line per symbol: "D object symbol" (defined) or "U object symbol".
symbol_table() {
	local o
	for o in $(objects); do
		nm -P -g --defined-only "$o" | awk -v o="$o" '{print "D", o, $1}'
		nm -P -u "$o" | awk -v o="$o" '{print "U", o, $1}'
	done
}

check_planner() {
	local roots="" pool="" r p report
	for r in $planner_roots; do
		if [ ! -f "$objdir/pkg/reconcile/$r.o" ]; then
			fail "$objdir/pkg/reconcile/$r.o: not built (make verify-deps builds it)"
			return
		fi
		roots="$roots $objdir/pkg/reconcile/$r.o"
	done
	for p in $planner_pool; do
		pool="$pool $(objects "$p" | tr '\n' ' ')"
	done
	report=$(symbol_table | awk -v roots="$roots" -v pool="$pool" -v bad="$forbidden_syms" '
		$1 == "D" { if (!($3 in def)) def[$3] = $2; defs[$2, $3] = 1; next }
		{ und[$2] = und[$2] " " $3 }
		END {
			n = split(pool, a, " "); for (i = 1; i <= n; i++) inpool[a[i]] = 1
			n = split(roots, a, " "); for (i = 1; i <= n; i++) { set[a[i]] = 1; order[++k] = a[i] }
			# Pull in pool objects until nothing more resolves (the closure).
			for (changed = 1; changed;) {
				changed = 0
				for (i = 1; i <= k; i++) {
					m = split(und[order[i]], s, " ")
					for (j = 1; j <= m; j++) {
						if (resolved(s[j])) continue
						d = def[s[j]]
						if (d != "" && (d in inpool) && !(d in set)) {
							set[d] = 1; order[++k] = d; changed = 1
						}
					}
				}
			}
			for (i = 1; i <= k; i++) {
				m = split(und[order[i]], s, " ")
				for (j = 1; j <= m; j++) {
					sym = s[j]
					if (resolved(sym)) continue
					if (def[sym] != "")
						print "BAD", order[i], sym, def[sym]
					else if (sym ~ /^sk_/)
						print "BAD", order[i], sym, "none"
					else if (sym ~ bad)
						print "BAD", order[i], sym, "lib"
				}
			}
			for (i = 1; i <= k; i++) print "OBJ", order[i]
		}
		function resolved(sym,   o) {
			for (o in set) if ((o, sym) in defs) return 1
			return 0
		}')
	while read -r kind obj sym where; do
		[ "$kind" = BAD ] || continue
		obj=${obj#"$objdir"/pkg/}
		case $where in
		lib) where="a libcurl/libmongoc/libbson/libmicrohttpd symbol" ;;
		none) where="defined nowhere in pkg/" ;;
		*)
			where=${where#"$objdir"/}
			where="defined in ${where%.o}.c, package $(echo "$where" | cut -d/ -f2)"
			;;
		esac
		fail "the planner needs $sym ($where), referenced by $obj: the planner links only api, util and pure reconcile objects"
	done <<<"$report"
	planner_objs=$(echo "$report" | awk '$1 == "OBJ" {print $2}' | sed "s|^$objdir/pkg/||" | tr '\n' ' ')
}

# Writable data objects: "object symbol section" for .data/.bss (not .rel.ro).
writable_data() {
	local o
	for o in $(objects); do
		objdump -t "$o" | awk -v o="${o#"$objdir"/pkg/}" '{
			for (i = 2; i < NF; i++) if ($i == "O") break
			if (i >= NF) next
			sec = $(i + 1); sym = $NF
			if (sec !~ /^(\.t?data|\.t?bss|\*COM\*)/ || sec ~ /\.rel\.ro/) next
			if (sym ~ /^__(odr_asan|asan|ubsan|sancov)/) next
			print o, sym, sec
		}'
	done
}

check_globals() {
	local obj sym sec
	while read -r obj sym sec; do
		[ -n "$obj" ] || continue
		[ -n "${global_ok[$obj:${sym%.[0-9]*}]+set}" ] && continue
		fail "pkg/${obj%.o}.c: writable static data ${sym%.[0-9]*} ($sec): process-global state; keep it in the object that owns it"
	done < <(writable_data)
}

check_messages() {
	local hit f line text key ok
	while IFS= read -r hit; do
		f=${hit%%:*}
		line=${hit#*:}
		text=${line#*:}
		line=${line%%:*}
		ok=
		for key in "${!text_ok[@]}"; do
			if [ "${key%%:*}" = "$f" ] && [[ $text == *"${key#*:}"* ]]; then
				ok=1
				break
			fi
		done
		[ -n "$ok" ] && continue
		fail "$f:$line: decides from an error's text ($(echo "$text" | sed 's/^[[:space:]]*//')): read err->code (sk_error_retry) or err->domain"
	done < <(grep -rnE "$text_compare" pkg --include='*.c' --include='*.h')
}

# (e): what a citation of an issue or an outside document looks like, and
# where it is looked for (generated and installed trees left out).
citation='\b[Ii]ssues? #?[0-9]+\b|\bDESIGN( §|\.md)|\b(style|peers|e2b-api)\.md\b|shared/refer[e]nce'
cited_paths="pkg cmd test hack clients crds manifests docs Makefile README.md Containerfile"

check_citations() {
	local hit paths=() p
	for p in $cited_paths; do
		[ -e "$p" ] && paths+=("$p")
	done
	[ ${#paths[@]} -eq 0 ] && return
	while IFS= read -r hit; do
		fail "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): cites an issue or a document outside the repository ($(cut -d: -f3- <<<"$hit" | sed 's/^[[:space:]]*//' | cut -c1-100)): name the code or the repository's document"
	done < <(grep -rnE "$citation" "${paths[@]}" --exclude-dir=node_modules --exclude-dir=build \
		--exclude-dir=dist --exclude-dir=__pycache__ --exclude-dir=.deps)
}

# expect_fail NAME PATTERN... -- CMD...: CMD exits 1 and prints every PATTERN.
expect_fail() {
	local name=$1 out rc pat
	shift
	local pats=()
	while [ "$1" != -- ]; do
		pats+=("$1")
		shift
	done
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 1 ]; then
		echo "verify-deps self-test: $name: exit $rc, want 1; output:"
		echo "$out"
		return 1
	fi
	for pat in "${pats[@]}"; do
		if ! grep -qF -- "$pat" <<<"$out"; then
			echo "verify-deps self-test: $name: no line with \"$pat\"; output:"
			echo "$out"
			return 1
		fi
	done
}

self_test() {
	local tmp o rc=0
	tmp=$(mktemp -d) || return 2
	# (a) a copy of pkg/ with one bad include of each kind.
	mkdir -p "$tmp/src/hack" "$tmp/src/pkg/httpd"
	cp "$root/hack/verify-deps.sh" "$tmp/src/hack/"
	cp -r pkg/. "$tmp/src/pkg/"
	echo '#include "../store/store.h"' >>"$tmp/src/pkg/util/buf.c"
	echo '#include "../../cmd/spacectl/spacectl.h"' >>"$tmp/src/pkg/api/kvlist.c"
	echo '#include <curl/curl.h>' >>"$tmp/src/pkg/api/kvlist.c"
	echo '#include "store/store_int.h"' >>"$tmp/src/pkg/reconcile/orphans.c"
	echo '#include "../util/util.h"' >"$tmp/src/pkg/httpd/httpd.h"
	# (d) a decision from a message, and a listed text read copied elsewhere
	printf '%s\n' 'static int' 'by_text(const sk_error *err)' '{' \
		'	return strstr(err->message, "MongoDB") != NULL;' '}' >>"$tmp/src/pkg/controller/worker.c"
	echo '/* strstr(e->message, "UNIQUE constraint failed") */' >>"$tmp/src/pkg/store/mongo_lease.c"
	# (e) a comment that cites an issue, one that cites an outside document,
	# each put together from two halves so that this file cites neither
	local cited_issue="/* the fast path (is""sue 22) */" cited_doc="/* see DES""IGN §5 */"
	echo "$cited_issue" >>"$tmp/src/pkg/util/buf.c"
	echo "$cited_doc" >>"$tmp/src/pkg/api/kvlist.c"
	expect_fail includes-and-messages \
		'pkg/util/buf.c:' 'util may include only: (no other package)' \
		'pkg/api/kvlist.c:' 'pkg/ never includes cmd/' '<curl/curl.h>: api may use only: yaml' \
		'the private header of store' 'package httpd is not in the layering table' \
		'pkg/controller/worker.c:' 'decides from an error'"'"'s text (return strstr(err->message, "MongoDB") != NULL;)' \
		'pkg/store/mongo_lease.c:' \
		"cites an issue or a document outside the repository ($cited_issue)" \
		"cites an issue or a document outside the repository ($cited_doc)" \
		-- bash "$tmp/src/hack/verify-deps.sh" "$objdir" || rc=1
	if grep -q 'pkg/store/mongo.c:\|pkg/sandbox/http.c:' <<<"$(bash "$tmp/src/hack/verify-deps.sh" "$objdir" 2>&1)"; then
		echo "verify-deps self-test: a listed text read (store/mongo.c, sandbox/http.c) was reported"
		rc=1
	fi
	# (b) the built objects, but a plan.o that also calls the provider.
	for o in "$objdir"/pkg/*/*.o; do
		mkdir -p "$tmp/obj/$(dirname "${o#"$objdir"/}")"
		ln -s "$o" "$tmp/obj/${o#"$objdir"/}"
	done
	rm "$tmp/obj/pkg/reconcile/plan.o"
	cat "$root/pkg/reconcile/plan.c" - >"$tmp/plan.c" <<'C'
void sk_verify_deps_probe(void);
void
sk_verify_deps_probe(void)
{
	sk_sandbox_get(NULL, "x", NULL, NULL);
}
C
	# shellcheck disable=SC2046
	if ! ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -I"$root/pkg/reconcile" -I"$root/pkg" \
		$(${PKG_CONFIG:-pkg-config} --cflags jansson) -c -o "$tmp/obj/pkg/reconcile/plan.o" \
		"$tmp/plan.c"; then
		echo "verify-deps self-test: could not compile the scratch plan.c"
		rc=1
	fi
	# (c) and an object with a function-static counter.
	printf '%s\n' 'int sk_verify_deps_next(void);' 'int' 'sk_verify_deps_next(void)' \
		'{' '	static int counter;' '	return ++counter;' '}' >"$tmp/counter.c"
	if ! ${CC:-cc} -c -o "$tmp/obj/pkg/util/counter.o" "$tmp/counter.c"; then
		echo "verify-deps self-test: could not compile the scratch counter.c"
		rc=1
	fi
	expect_fail planner-and-globals \
		'the planner needs sk_sandbox_get (defined in pkg/sandbox/provider.c, package sandbox), referenced by reconcile/plan.o' \
		'pkg/util/counter.c: writable static data counter (.bss)' \
		-- env VERIFY_DEPS_ALL=1 bash "$root/hack/verify-deps.sh" "$tmp/obj" || rc=1
	rm -rf "$tmp"
	[ "$rc" -eq 0 ] && echo "verify-deps self-test: bad includes, a decision from an error's text, a cited issue, a planner calling the provider and a static counter are caught"
	return "$rc"
}

if [ "$mode" = self-test ]; then
	self_test
	exit
fi
check_includes
planner_objs=""
check_planner
check_globals
check_messages
check_citations
if [ "$violations" -gt 0 ]; then
	echo "verify-deps: $violations violation(s) (tables in hack/verify-deps.sh)"
	exit 1
fi
echo "verify-deps: includes follow the layering; no process-global state but ${#global_ok[@]} listed; no decision from an error's text but ${#text_ok[@]} listed; no cited issue; the planner links from: $planner_objs"
