#!/usr/bin/env bash
# Outputs all or nothing, from the command line (tools/output_file.hpp): a failed run, a refused
# flag and an interrupted sweep (SIGINT, SIGTERM) leave the earlier files byte for byte, with
# no temporary beside them; two outputs naming one file are refused.
#   test_outputs.sh G5SIM_BINARY
set -euo pipefail
g5sim="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
cd "$dir"
printf 'old json\n' > out.json
printf 'old csv\n' > out.csv
fail() { echo "FAIL: $*" >&2; exit 1; }
same_as_before() {
  [ "$(cat out.json)" = "old json" ] || fail "$1: out.json changed"
  [ "$(cat out.csv)" = "old csv" ] || fail "$1: out.csv changed"
  [ "$(ls -A | wc -l)" = 2 ] || fail "$1: left $(ls -A | tr '\n' ' ')"
}

# A run that fails after its outputs were opened (tp 3 does not divide the model's heads).
set +e; "$g5sim" run --layers 4 --tp 3 --json out.json 2>/dev/null; rc=$?; set -e
[ "$rc" = 2 ] || fail "bad --tp: exit $rc"
same_as_before "bad --tp"

# Two outputs naming one file, however spelt.
set +e; msg="$("$g5sim" run --layers 4 --trace out.json --json ./out.json 2>&1)"; rc=$?; set -e
[ "$rc" = 2 ] || fail "shared output: exit $rc"
[[ "$msg" == *"--trace and --json both name"* ]] || fail "shared output: $msg"
same_as_before "shared output"

# A sweep interrupted mid-grid: 130 for SIGINT, 143 for SIGTERM, at once, the old files kept.
for sig in INT TERM; do
  "$g5sim" sweep --ctx 1024:131072:x2 --batch 1,2,4,8,16,32 --no-replay --jobs 1 --csv out.csv --json out.json \
    > /dev/null 2>&1 &
  pid=$!
  sleep 1.5
  kill -"$sig" "$pid"
  set +e; wait "$pid"; rc=$?; set -e
  expected=$([ "$sig" = INT ] && echo 130 || echo 143)
  [ "$rc" = "$expected" ] || fail "SIG$sig: exit $rc, expected $expected"
  same_as_before "SIG$sig"
done

# A run that succeeds replaces the file whole.
"$g5sim" run --layers 4 --json out.json > /dev/null
grep -q '"schema_version"' out.json || fail "the finished run did not write out.json"
echo "outputs: ok"
