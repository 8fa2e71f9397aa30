#!/usr/bin/env bash
# Outputs all or nothing, from the command line (tools/output_file.hpp): a failed run, a refused
# flag and an interrupted sweep (SIGINT, SIGTERM) leave the earlier files byte for byte, with
# no temporary beside them (a sweep's rows so far go to PATH.partial, and --resume finishes the
# grid into the bytes of an uninterrupted run); two outputs naming one file are refused.
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

# Two outputs naming one file, however spelt, in every command that writes two: exit 2 before
# anything runs, the file untouched. (The chips and loads are small: a refusal comes first.)
mkdir sub && ln -s out.json alias.json
small=(--chip h100 --model qwen2.5-1.5b --layers 1)
load=(--concurrency 1 --requests 1 --input-len 8 --output-len 2)
while IFS='|' read -r name command; do
  for second in ./out.json sub/../out.json alias.json "$dir/out.json"; do
    # shellcheck disable=SC2086
    set +e; msg="$("$g5sim" ${command//SECOND/$second} 2>&1)"; rc=$?; set -e
    [ "$rc" = 2 ] || fail "$name with $second: exit $rc: $msg"
    [[ "$msg" == *" both name '$second': give each output its own file" ]] || fail "$name with $second: $msg"
    [ "$(cat out.json)" = "old json" ] || fail "$name with $second: out.json changed"
  done
done <<EOF_COMMANDS
run trace/json|run ${small[*]} --trace out.json --json SECOND
serve csv/json|serve ${small[*]} ${load[*]} --csv out.json --json SECOND
serve json/perfetto|serve ${small[*]} ${load[*]} --json out.json --perfetto SECOND
search csv/json|search --chip h100 --model qwen2.5-1.5b --layers 1 ${load[*]} --csv out.json --json SECOND
sensitivity csv/json|sensitivity ${small[*]} --fields ddr.latency_ns --csv out.json --json SECOND
solve csv/json|solve ${small[*]} --target total_ms<=1 --vary ddr.bandwidth_gb_per_s --csv out.json --json SECOND
sweep csv/json|sweep ${small[*]} --ctx 1024 --csv out.json --json SECOND
validate csv/json|validate --chip bm1688 --csv out.json --json SECOND
EOF_COMMANDS
rm -r sub alias.json
same_as_before "shared output"
# Two on standard output.
set +e; msg="$("$g5sim" serve "${small[@]}" "${load[@]}" --csv - --perfetto - 2>&1)"; rc=$?; set -e
[ "$rc" = 2 ] && [ "$msg" = "g5sim: error: --csv - and --perfetto - both want standard output: give one of them a PATH" ] ||
  fail "two on stdout: $rc $msg"

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
  # The rows so far are kept beside the CSV for --resume, under the grid line.
  [ -f out.csv.partial ] || fail "SIG$sig: no out.csv.partial"
  head -n 1 out.csv.partial | grep -q '^# g5sim .* sweep grid 48 points sha256 ' || fail "SIG$sig: partial's grid line"
  rm out.csv.partial
  same_as_before "SIG$sig"
done

# --resume after an interrupt: the kept rows and the rest are the uninterrupted run's bytes.
grid=(--ctx 1024:65536:x2 --batch 1,2,4 --no-replay --jobs 1)
"$g5sim" sweep "${grid[@]}" --csv whole.csv 2>/dev/null
"$g5sim" sweep "${grid[@]}" --csv part.csv > /dev/null 2>&1 &
pid=$!
sleep 1
kill -INT "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" = 130 ] || fail "resume: exit $rc"
[ ! -e part.csv ] || fail "resume: the interrupted sweep wrote part.csv"
msg="$("$g5sim" sweep "${grid[@]}" --csv part.csv --resume 2>&1 >/dev/null)"
cmp -s part.csv whole.csv || fail "resume: part.csv differs from the uninterrupted run"
[ ! -e part.csv.partial ] || fail "resume: part.csv.partial left behind"
[[ "$msg" == *"g5sim: resumed: "*" of 21 points kept from part.csv.partial"* ]] || fail "resume: $msg"
# Resuming a whole file runs nothing; resuming another grid's file is refused.
msg="$("$g5sim" sweep "${grid[@]}" --csv part.csv --resume 2>&1 >/dev/null)"
[[ "$msg" == *"resumed: 21 of 21 points kept from part.csv, 0 run"* ]] || fail "resume whole: $msg"
set +e; msg="$("$g5sim" sweep --ctx 1024 --no-replay --csv part.csv --resume 2>&1)"; rc=$?; set -e
[ "$rc" = 2 ] && [[ "$msg" == *"--resume: part.csv is of another grid or shard"* ]] || fail "resume other: $rc $msg"
rm part.csv whole.csv

# --keep-going: a bad point (ctx 1 leaves decode no history) gets an error cell, the others their
# figures, and the exit status is 3.
set +e; "$g5sim" sweep --scope block --dp 1 --ctx 1,4096 --keep-going --csv kg.csv 2>/dev/null; rc=$?; set -e
[ "$rc" = 3 ] || fail "keep-going: exit $rc"
head -n 2 kg.csv | tail -n 1 | grep -q ',regime,bound_by,fits,bytes_per_chip,error$' || fail "keep-going: no error column"
sed -n 3p kg.csv | grep -q '^0,SG2262,DeepSeek-V3,decode,,1,.*,"--q-len: decode needs 1 <= q_len < kv_len' ||
  fail "keep-going: point 0's row: $(sed -n 3p kg.csv)"
sed -n 4p kg.csv | grep -q '^1,SG2262,DeepSeek-V3,decode,1,4096,.*,memory,GDMA,false,673438386528,$' || fail "keep-going: point 1's row"
rm kg.csv

# A run that succeeds replaces the file whole.
"$g5sim" run --layers 4 --json out.json > /dev/null
grep -q '"schema_version"' out.json || fail "the finished run did not write out.json"
echo "outputs: ok"
