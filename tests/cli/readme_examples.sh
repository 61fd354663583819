#!/usr/bin/env bash
# The examples of README.md or a docs/ page, run: every `$ scripts/tally ARGS` line in a code block, and every code block
# introduced by a line "`scripts/tally ARGS`:", is run with TALLY_BINARY and compared with the text
# under it: byte for byte, or, for a command marked "# trimmed" and for a block introduced in prose
# (which shows a section), each shown line must appear whole in the output (stdout and stderr).
# "exit N" under a command is its expected exit code.
#
#   readme_examples.sh TALLY_BINARY PAGE            compare (ctest: README.md, and docs/*.md as
#                                                   cli.docs_examples_<page>)
#   readme_examples.sh --update TALLY_BINARY PAGE   print each differing example's current output
set -u
export LC_ALL=C
update=0
if [[ "${1:-}" == "--update" ]]; then
  update=1
  shift
fi
tally=$1
readme=$2
failures=0 checked=0
# Each run's own file for stderr: pages run in parallel under ctest, and a fixed /tmp name left by
# another user is not writable.
errfile=$(mktemp) || exit 2
trap 'rm -f "$errfile"' EXIT

# check LINE ARGS EXPECTED TRIMMED EXIT
check() {
  local line=$1 args=$2 expected=$3 trimmed=$4 want_exit=$5 out code
  out=$(eval "\"$tally\" $args" 2>"$errfile")
  code=$?
  checked=$((checked + 1))
  local ok=1
  if [[ "$code" != "$want_exit" ]]; then ok=0; fi
  if [[ "$trimmed" == 1 ]]; then
    local all
    all="$out"$'\n'"$(cat "$errfile")"
    while IFS= read -r want; do
      [[ -z "$want" ]] && continue
      grep -qxF -- "$want" <<<"$all" || ok=0
    done <<<"$expected"
  elif [[ "$out" != "$expected" ]]; then
    ok=0
  fi
  if [[ "$ok" == 0 ]]; then
    failures=$((failures + 1))
    echo "${readme#"$PWD"/}:$line: scripts/tally $args (exit $code, expected $want_exit)"
    if [[ "$update" == 1 || "$trimmed" == 0 ]]; then diff <(echo "$expected") <(echo "$out") | head -20; fi
  fi
}

in_block=0 pending="" pending_line=0 args="" args_line=0 expected="" trimmed=0 want_exit=0 n=0
flush() {
  if [[ -n "$args" ]]; then check "$args_line" "$args" "$expected" "$trimmed" "$want_exit"; fi
  args="" expected="" trimmed=0 want_exit=0
}
indent=0
while IFS= read -r text; do
  n=$((n + 1))
  # A code block inside a list item is indented with it: its fence's indentation is not the text's.
  stripped=${text#"${text%%[![:space:]]*}"}
  if [[ "$stripped" == '```'* ]]; then
    [[ "$in_block" == 0 ]] && indent=$((${#text} - ${#stripped}))
    text=$stripped
  elif [[ "$in_block" == 1 && "$indent" -gt 0 && "${text:0:indent}" =~ ^\ *$ ]]; then
    text=${text:indent}
  fi
  if [[ "$text" == '```'* ]]; then
    if [[ "$in_block" == 1 ]]; then
      flush
      in_block=0
    else
      in_block=1
      # A block right after "`scripts/tally ARGS`:" is that command's output.
      if [[ -n "$pending" && "$text" == '```' ]]; then
        # Such blocks show a part of the output (a section): each of their lines must appear in it.
        args=$pending args_line=$pending_line expected="" trimmed=1 want_exit=0
        first=1
      fi
    fi
    pending=""
    continue
  fi
  if [[ "$in_block" == 0 ]]; then
    [[ -z "$text" ]] && continue  # a blank line may stand between "`scripts/tally ...`:" and its block
    pending=""
    if [[ "$text" =~ ^\`scripts/tally\ ([^\`]*)\`:?$ ]] && [[ "$text" == *':' ]]; then
      pending=${BASH_REMATCH[1]} pending_line=$n
    fi
    continue
  fi
  if [[ "$text" == '$ scripts/tally '* ]]; then
    flush
    args=${text#'$ scripts/tally '} args_line=$n first=1
    if [[ "$args" == *'# trimmed'* ]]; then trimmed=1; fi
    args=${args%%#*}
    continue
  fi
  if [[ "$text" == '$ '* ]]; then  # another command (echo $?): not checked
    flush
    continue
  fi
  if [[ -n "$args" ]]; then
    if [[ "$text" =~ ^exit\ ([0-9]+)$ ]]; then
      want_exit=${BASH_REMATCH[1]}
      continue
    fi
    if [[ "${first:-0}" == 1 ]]; then
      expected=$text first=0
    else
      expected+=$'\n'"$text"
    fi
  fi
done <"$readme"
echo "readme examples: $checked checked, $failures differ"
[[ "$failures" == 0 ]]
