#!/usr/bin/env bash
# The command-line reference (docs/cli/*.md, docs/man/*.1) is generated from
# each binary's --help (`PROG __gen-docs markdown|man DIR`, pkg/util/clidoc.h).
#   hack/check-docs.sh              the pages are current, the man pages pass
#                                   mandoc -Tlint and render with man -l, each
#                                   spacectl page names every flag its command
#                                   accepts, and every long flag in an option
#                                   table of cmd/ is named in its program's pages
#   hack/check-docs.sh --write      regenerate them (make docs)
#   hack/check-docs.sh --self-test  show that the check catches an edited,
#                                   missing or extra page, a page without one
#                                   of its flags and a lint error
# env: SK_BIN_DIR (default bin/), SK_DOCS_DIR (default docs/, for the self-test)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SK_BIN_DIR:-$root/bin}
docs=${SK_DOCS_DIR:-$root/docs}
progs=(spacectl spacekeeper sandboxsim)

fail() {
	echo "check-docs: $*" >&2
	exit 1
}

# Writes every page into $1/cli and $1/man.
generate() {
	mkdir -p "$1/cli" "$1/man"
	for p in "${progs[@]}"; do
		[ -x "$bin/$p" ] || fail "$bin/$p is missing (make, or set SK_BIN_DIR)"
		"$bin/$p" __gen-docs markdown "$1/cli" || fail "$p __gen-docs markdown failed"
		"$bin/$p" __gen-docs man "$1/man" || fail "$p __gen-docs man failed"
	done
}

# mandoc -Tlint: any warning or error fails; man -l must render each page.
lint() {
	local out page
	command -v mandoc >/dev/null || fail "mandoc is required (hack/deps.sh installs it)"
	out=$(mandoc -Tlint -W warning "$1"/*.1 2>&1) || true
	[ -z "$out" ] || fail "mandoc -Tlint:"$'\n'"$out"
	if command -v man >/dev/null; then
		for page in "$1"/*.1; do
			out=$(MANWIDTH=80 man -l "$page" 2>&1) || fail "man -l $page failed: $out"
			[[ $out == *SYNOPSIS* ]] || fail "man -l $page rendered no SYNOPSIS"
		done
	fi
}

# Every long flag an option table of cmd/PROG/ lists is named in PROG's pages
# (the generator checks the table each command's --help parses with; this
# catches a table it did not see).
flags_named() {
	local p name
	for p in "${progs[@]}"; do
		for name in $(grep -ohE '\{ *"[a-z][a-z0-9-]*", *(no_argument|required_argument|optional_argument|[012]) *,' \
			"$root/cmd/$p"/*.c | sed -E 's/^\{ *"([^"]*)".*/\1/' | sort -u); do
			grep -qE -- "--$name([^a-z0-9-]|\$)" "$1/cli/$p"*.md ||
				fail "--$name (an option of cmd/$p/) is named in none of docs/cli/$p*.md"
		done
	done
}

# Each spacectl command's page names every flag the command accepts: the
# completion script lists them from the option table the command parses with.
flags_per_page() {
	local cmd flags f page
	while read -r cmd flags; do
		page=$1/cli/spacectl-$cmd.md
		[ -f "$page" ] || fail "spacectl $cmd has no page ${page#"$root"/}"
		for f in $flags; do
			grep -qE -- "^- \`([^\`]* )?$f[ ,=[\`]" "$page" ||
				fail "${page#"$root"/} names no $f, a flag spacectl $cmd accepts"
		done
	done < <("$bin/spacectl" completion bash | sed -n 's/^\t\([a-z]*\)) flags="\(.*\)" ;;$/\1 \2/p')
}

check() {
	local dir=$1 tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	generate "$tmp"
	if ! diff -ru "$dir/cli" "$tmp/cli" >"$tmp/diff" 2>&1 ||
		! diff -ru "$dir/man" "$tmp/man" >>"$tmp/diff" 2>&1; then
		head -40 "$tmp/diff" >&2
		fail "the generated pages in ${dir#"$root"/}/cli and ${dir#"$root"/}/man are stale: run make docs"
	fi
	lint "$dir/man"
	flags_named "$dir"
	flags_per_page "$dir"
}

write() {
	local tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	generate "$tmp"
	lint "$tmp/man"
	mkdir -p "$docs/cli" "$docs/man"
	rm -f "$docs"/cli/*.md "$docs"/man/*.1
	cp "$tmp"/cli/*.md "$docs/cli/"
	cp "$tmp"/man/*.1 "$docs/man/"
	echo "docs: wrote $(ls "$docs"/cli/*.md | wc -l) pages in docs/cli, $(ls "$docs"/man/*.1 | wc -l) in docs/man"
}

# Runs the check on a copy of the docs changed by $1 (a command run in the
# copy); it must fail and say what $2 says.
expect_caught() {
	local change=$1 want=$2 copy out
	copy=$(mktemp -d)
	cp -r "$docs/cli" "$docs/man" "$copy/"
	(cd "$copy" && eval "$change")
	if out=$(SK_DOCS_DIR=$copy "$0" 2>&1); then
		rm -rf "$copy"
		fail "self-test: the check passed after: $change"
	fi
	rm -rf "$copy"
	[[ $out == *"$want"* ]] || fail "self-test: after \"$change\" the check said: $out"
}

self_test() {
	local copy
	copy=$(mktemp -d)
	cp -r "$docs/cli" "$docs/man" "$copy/"
	SK_DOCS_DIR=$copy "$0" >/dev/null 2>&1 || {
		rm -rf "$copy"
		fail "self-test: the check fails on an unchanged copy of docs/ (run make docs first)"
	}
	rm -rf "$copy"
	expect_caught 'echo "hand edit" >>cli/spacectl-get.md' "run make docs"
	expect_caught 'sed -i "s/^Prints/Writes/" man/spacectl-version.1' "run make docs"
	expect_caught 'rm cli/spacectl-wait.md' "run make docs"
	expect_caught 'cp cli/spacectl-get.md cli/spacectl-gone.md' "run make docs"
	# the flag check on its own: a page without one of its flags' rows
	copy=$(mktemp -d)
	cp -r "$docs/cli" "$copy/"
	sed -i '/`--prune`/d' "$copy/cli/spacectl-apply.md"
	if (flags_per_page "$copy") 2>/dev/null; then
		rm -rf "$copy"
		fail "self-test: the flag check passed a page without --prune"
	fi
	rm -rf "$copy"
	# lint on its own: a page with an unknown macro
	copy=$(mktemp -d)
	printf '.TH X 1 2026-12-01\n.SH NAME\nx \\- y\n.XX bogus\n' >"$copy/x.1"
	if (lint "$copy") 2>/dev/null; then
		rm -rf "$copy"
		fail "self-test: mandoc -Tlint passed a page with an unknown macro"
	fi
	rm -rf "$copy"
	echo "check-docs self-test: an edited, changed, missing and extra page, a page without a flag and a lint error are caught"
}

case "${1:-}" in
--write) write ;;
--self-test) self_test ;;
"")
	check "$docs"
	echo "check-docs: docs/cli and docs/man are current; mandoc -Tlint clean"
	;;
*) fail "usage: hack/check-docs.sh [--write | --self-test]" ;;
esac
