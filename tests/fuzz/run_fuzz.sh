#!/usr/bin/env bash
# Runs the libFuzzer harnesses of a tree configured with -DG5SIM_FUZZ=ON (see CMakeLists.txt here;
# $G5SIM_FUZZ_TREE, default build-fuzz/) on seed corpora made from the shipped and golden configs,
# in a scratch directory (the CLI harness may write output files there), as many harnesses at once
# as the machine has cores.
#   bash tests/fuzz/run_fuzz.sh smoke                   # a fixed number of executions per harness (CI)
#   bash tests/fuzz/run_fuzz.sh campaign 600            # 600 s per harness; findings in build-fuzz/findings
#   bash tests/fuzz/run_fuzz.sh campaign 600 chip cli   # only these harnesses (chip model expert_load
#                                                       # pipeline cli run_json sequences serve_trace
#                                                       # length_histogram measured_table chip_fields runtime
#                                                       # step_entry kv_tiers), e.g. two at a time
# Exits non-zero on any crash, leak, timeout or out-of-memory.
set -euo pipefail
mode="${1:-smoke}"
seconds="${2:-600}"
shift $(( $# > 2 ? 2 : $# ))
selected=("$@")
[ "${#selected[@]}" -gt 0 ] || selected=(chip model expert_load pipeline cli run_json sequences serve_trace length_histogram measured_table chip_fields runtime step_entry kv_tiers)
root="$(cd "$(dirname "$0")/../.." && pwd)"
tree="${G5SIM_FUZZ_TREE:-$root/build-fuzz}"
bin="$tree/tests/fuzz"
work="$tree/fuzz-work/$mode-$(IFS=-; echo "${selected[*]}")"
rm -rf "$work" && mkdir -p "$work"/{chip,model,expert_load,pipeline,cli,run_json,sequences,serve_trace,length_histogram,measured_table,chip_fields,runtime,step_entry,kv_tiers} "$tree/findings"
cp "$root"/configs/chips/*.yaml "$root"/tests/golden/chip*.yaml "$work/chip/"
cp "$root"/configs/chips/*.yaml "$root"/tests/golden/chip*.yaml "$work/chip_fields/"
cp "$root"/configs/models/*.yaml "$root"/tests/golden/model*.yaml "$root"/tests/golden/*.json "$work/model/"
printf '\x07layer,expert,tokens\n3,5,3\n3,17,5\n' > "$work/expert_load/seed.csv"
printf '\x00layer,expert,tokens\n3,0,8\n4,255,8\n' > "$work/expert_load/seed2.csv"
printf '\x03layer,expert,share\n3,0,0.5\n3,9,0.25\n4,255,7\n' > "$work/expert_load/seed3.csv"
i=0
for m in "$root"/configs/models/*.yaml; do
  { printf '\x01\x01\x10\x00'; cat "$root/tests/golden/chip.yaml"; printf '\n@@@@\n'; cat "$m"; } > "$work/pipeline/seed$i"
  { printf '\x00\x00\x20\x05'; cat "$root/tests/golden/chip.yaml"; printf '\n@@@@\n'; cat "$m"; } > "$work/pipeline/seedp$i"
  { printf '\x01\x01\x10\x28'; cat "$root/tests/golden/chip.yaml"; printf '\n@@@@\n'; cat "$m"; } > "$work/pipeline/seedr$i"
  i=$((i + 1))
done
# Two runs of identical layers (a dense layer in the middle), and units of two (dense, MoE) layers.
for rule in 'mlp_only_layers: [6]' 'decoder_sparse_step: 2'; do
  { printf '\x01\x01\x10\x28'; cat "$root/tests/golden/chip.yaml"; printf '\n@@@@\n'
    sed -e "s/^${rule%%:*}:.*/$rule/" "$root/configs/models/qwen3-30b-a3b.yaml"; } > "$work/pipeline/seedr-${rule%%:*}"
done
# Groups of sequences: a mix (second byte even) and a --seqs file (odd), over dp 1 and 3.
printf '\x07\x0064x1@4096,1x2048@0,4x2@1000' > "$work/sequences/mix"
printf '\x07\x05count,q_len,history\n3,1,4096\n1,512,1024\n1,256,0\n' > "$work/sequences/csv"
# Serve traces: CSV (first byte even) and JSON lines (odd); the second byte sizes the engine.
{ printf '\x00\x31'; cat "$root/tests/golden/serve-trace.csv"; } > "$work/serve_trace/csv"
printf '\x03\x10{"id": "a", "arrival_s": 0, "input_tokens": 300, "output_tokens": 5}\n{"arrival_s": 0.001, "input_tokens": 40, "output_tokens": 9}\n' > "$work/serve_trace/jsonl"
# Two conversations sharing a system prompt, the second turns reusing their first (prefix caching on).
printf '\x00\x21arrival_s,input_tokens,output_tokens,id,session,shared_prefix\n0,100,10,a1,A,64\n0,100,10,b1,B,64\n0.01,150,10,a2,A,110\n0.01,130,10,b2,B,70\n' > "$work/serve_trace/sessions"
printf '\x01\x21{"arrival_s": 0, "input_tokens": 80, "output_tokens": 4, "session": "x", "shared_prefix": 16}\n{"arrival_s": 0.002, "input_tokens": 120, "output_tokens": 3, "session": "x", "shared_prefix": 84}\n' > "$work/serve_trace/sessions_jsonl"
# Step cache entries: a step of two ops, with a band and without.
printf 'g5sim-step 1\nkey fuzz\ntime 47283418826 0 0 0 6.4982760819435 1\nband 0 none: not calibrated\nops 0 1 8 64 2\n3 1000 0 500 0\n5 2000 4096 0 1\nend\n' > "$work/step_entry/plain"
printf 'g5sim-step 1\nkey fuzz\ntime 1000 1 900 1100 0.5 61\nband 0.8 held-out rows (2 folds)\nops 1 0 1 1 0\nend\n' > "$work/step_entry/banded"
# Runtime configs: the shipped ones.
cp "$root"/configs/runtimes/*.yaml "$work/runtime/"
cp "$root"/configs/hosts/*.yaml "$work/kv_tiers/"
# Length histograms: the shipped ones (the first byte seeds the draws).
for h in "$root"/configs/loads/*.csv; do { printf '\x05'; cat "$h"; } > "$work/length_histogram/$(basename "$h")"; done
# Measurement tables: the shipped one's header with a serve row, a step row and an op row each.
for kind in serve step matmul; do
  { head -n 1 "$root/validation/measured.csv"; grep -m 1 ",$kind," "$root/validation/measured.csv"; } \
    > "$work/measured_table/$kind.csv"
done
printf 'serve\n--layers\n1\n--concurrency\n2\n--requests\n3\n--input-len\n16\n--output-len\n2\n' > "$work/cli/serve"
printf 'check\n' > "$work/cli/check"
printf 'sensitivity\n--layers\n1\n--fields\nddr.latency_ns,cores\n' > "$work/cli/sensitivity"
printf 'run\n--scope\nblock\n--dp\n1\n--ctx\n1024\n' > "$work/cli/block"
printf 'op\nmatmul\n--m\n64\n--n\n64\n--k\n64\n' > "$work/cli/matmul"
printf 'sweep\n--scope\nblock\n--dp\n1\n--ctx\n512,1024\n' > "$work/cli/sweep"
printf 'run\n--batch\n-1\n' > "$work/cli/negative"
printf 'validate\n--chip\nbm1688\n' > "$work/cli/validate"
# Run JSON files, alone and in pairs (a decode block against a 4-layer step).
cp "$root"/tests/golden/decode_json.stdout "$root"/tests/golden/step_json.stdout "$work/run_json/"
{ cat "$root/tests/golden/decode_json.stdout"; printf '@@@@'; cat "$root/tests/golden/step_json.stdout"; } \
  > "$work/run_json/pair"

common=(-rss_limit_mb=2048 -timeout=20 -dict="$root/tests/fuzz/config.dict" -artifact_prefix="$tree/findings/"
        -print_final_stats=1)
cd "$work"
status=0
# Every finding of a campaign is kept under tests/fuzz/regressions/<harness>-<what> and replayed.
for input in "$root"/tests/fuzz/regressions/*; do
  [ -e "$input" ] || continue
  harness="fuzz_$(basename "$input" | cut -d- -f1)"
  if ! "$bin/$harness" "$input" > "$work/regression.log" 2>&1; then
    echo "fuzz: regression $(basename "$input") FAILED:" >&2
    tail -n 20 "$work/regression.log" >&2
    status=1
  fi
done
# One harness: its run, then its log's last lines (the log's verdict is its exit status).
fuzz_one() {
  local corpus="$1" harness="fuzz_$1" limit
  if [ "$mode" = smoke ]; then
    local runs=4000
    [ "$harness" = fuzz_pipeline ] && runs=300
    [ "$harness" = fuzz_chip_fields ] && runs=1000  # a run reads the chip once per field it rewrites
    [ "$harness" = fuzz_cli ] && runs=300
    limit=(-runs="$runs" -seed=1)  # a fixed seed: the same executions on every CI run
  else
    limit=(-max_total_time="$seconds")
  fi
  if ! "$bin/$harness" "${common[@]}" "${limit[@]}" "$corpus" > "$work/$harness.log" 2>&1; then
    echo "fuzz: $harness ${limit[*]} FAILED; its log:" >&2
    tail -n 40 "$work/$harness.log" >&2
    return 1
  fi
  echo "fuzz: $harness ${limit[*]}: $(grep -E "stat::number_of_executed_units" "$work/$harness.log" | tail -n 1)"
}
parallel="$(nproc)"
running=0
for corpus in "${selected[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$corpus" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
