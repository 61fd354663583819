#!/usr/bin/env bash
# Runs one golden CLI case and compares it with its expectations.
#
#   run_case.sh TALLY_BINARY CASE_PREFIX            compare (what ctest runs)
#   run_case.sh --update TALLY_BINARY CASE_PREFIX   rewrite the expectations (scripts/update-golden)
#
# CASE_PREFIX.args    one line of shell words, the arguments after 'tally' (keep quoting simple)
# CASE_PREFIX.stdout  expected stdout, byte for byte (missing: must be empty)
# CASE_PREFIX.stderr  expected stderr, byte for byte (missing: must be empty)
# CASE_PREFIX.exit    expected exit code (missing: 0)
# CASE_PREFIX.skip_if a shell condition; when it holds the case is skipped (exit 77, which ctest
#                     reports as skipped): for cases that assume something of the machine
#
# The binary runs in the current directory (ctest: the repository root), so relative paths in
# .args and in the output are relative to it. On a mismatch this prints a unified diff and exits 1.
set -u
export LC_ALL=C

update=0
if [[ "${1:-}" == "--update" ]]; then
  update=1
  shift
fi
if [[ $# -ne 2 ]]; then
  echo "usage: run_case.sh [--update] TALLY_BINARY CASE_PREFIX" >&2
  exit 2
fi
tally=$1
prefix=$2
name=$(basename "$prefix")

if [[ ! -x "$tally" ]]; then
  echo "run_case.sh: $tally: not an executable file" >&2
  exit 2
fi
if [[ ! -f "$prefix.args" ]]; then
  echo "run_case.sh: $prefix.args: no such file" >&2
  exit 2
fi

if [[ $update -eq 0 && -f "$prefix.skip_if" ]] && bash -c "$(<"$prefix.skip_if")" >/dev/null 2>&1; then
  echo "cli.$name: skipped on this machine: $(<"$prefix.skip_if")"
  exit 77
fi

args_line=$(<"$prefix.args")
eval "set -- $args_line"

work=$(mktemp -d "${TMPDIR:-/tmp}/tally-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$tally" "$@" </dev/null >"$work/stdout" 2>"$work/stderr"
code=$?

if [[ $update -eq 1 ]]; then
  cp "$work/stdout" "$prefix.stdout"
  if [[ -s "$work/stderr" ]]; then cp "$work/stderr" "$prefix.stderr"; else rm -f "$prefix.stderr"; fi
  if [[ $code -ne 0 ]]; then echo "$code" >"$prefix.exit"; else rm -f "$prefix.exit"; fi
  exit 0
fi

expected() {  # the expectation file for a stream, or /dev/null when it is missing
  if [[ -f "$prefix.$1" ]]; then echo "$prefix.$1"; else echo /dev/null; fi
}

failed=0
for stream in stdout stderr; do
  want=$(expected "$stream")
  if ! cmp -s "$want" "$work/$stream"; then
    if [[ "$want" == /dev/null ]]; then what="empty (no $name.$stream)"; else what="$want"; fi
    echo "cli.$name: $stream differs from $what (- expected, + actual):"
    diff -u --label "expected $stream" --label "actual $stream" "$want" "$work/$stream"
    failed=1
  fi
done

want_code=0
if [[ -f "$prefix.exit" ]]; then want_code=$(tr -d '[:space:]' <"$prefix.exit"); fi
if [[ "$code" != "$want_code" ]]; then
  echo "cli.$name: exit code $code, expected $want_code"
  failed=1
fi

if [[ $failed -ne 0 ]]; then
  echo "cli.$name: FAILED: tally $args_line"
  echo "(if the new output is right, run scripts/update-golden and review the diff)"
  exit 1
fi
exit 0
