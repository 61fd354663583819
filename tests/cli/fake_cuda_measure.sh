#!/usr/bin/env bash
# `tally measure --device cuda` through the whole command, on the fake CUDA stack of tests/fake_cuda
# found by the loader under the real library names (LD_LIBRARY_PATH), as a GPU machine's would be.
# Timings are the fake's and not asserted; what is asserted: exit codes, one row per result, the
# catalog peak found by the device's name, and the messages of the failure paths.
#
#   fake_cuda_measure.sh TALLY_BINARY FAKE_CUDA_DIR
set -u
tally=$1
export LD_LIBRARY_PATH=$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
failed=0

fail() {
  echo "FAIL: $*"
  failed=1
}

# expect CODE PATTERN ARGS...: exit code CODE, and PATTERN (grep -E) in stdout + stderr.
expect() {
  local code=$1 pattern=$2
  shift 2
  local out
  out=$("$tally" "$@" 2>&1)
  local got=$?
  [[ $got == "$code" ]] || fail "tally $*: exit $got, expected $code; output: $out"
  grep -qE -- "$pattern" <<<"$out" || fail "tally $*: no /$pattern/ in: $out"
}

quick=(--budget 0.005)

# Six dtypes x two layouts: a header and twelve rows, each on the GPU.
csv=$("$tally" measure --device cuda --dtype fp32,tf32,fp16,bf16,fp64,fp8 --shapes 64x48x32,64x48x32:NT \
  "${quick[@]}" --format csv)
[[ $? == 0 ]] || fail "the six-dtype sweep failed: $csv"
[[ $(wc -l <<<"$csv") == 13 ]] || fail "expected 13 CSV lines, got: $csv"
[[ $(grep -c ',cuda,' <<<"$csv") == 12 ]] || fail "expected 12 rows on cuda: $csv"
for dtype in fp32 tf32 fp16 bf16 fp64 fp8; do
  [[ $(grep -c ",NT,$dtype,cuda," <<<"$csv") == 1 ]] || fail "no NT $dtype row: $csv"
done

# The fake calls itself an H100 SXM: its bf16 dense peak comes from the hardware catalog.
expect 0 '^9.895e\+14$' measure --device cuda --dtype bf16 --sizes 64 "${quick[@]}" \
  --get measure.peak_flop_per_s
expect 0 '^NVIDIA H100 80GB HBM3$' measure --device cuda --sizes 64 "${quick[@]}" --get measure.gpu.name

# A model's training-step GEMMs on the GPU: the seed MLP has 8 distinct (shape, layout) pairs.
expect 0 '^8$' measure --device cuda --model seed-mlp --batch 32 --dtype bf16 "${quick[@]}" \
  --get measure.model.distinct_shapes

# Failure paths, each one line and exit 3.
FAKE_CUDA_DEVICES=0 expect 3 '^tally: error: no CUDA device found: the driver sees no GPU$' \
  measure --device cuda --sizes 64
FAKE_CUDA_WRONG=1 expect 3 'cuda fp32 GEMM 3x5x7 is wrong at element \(0, 0\).*refusing to time' \
  measure --device cuda --dtype fp32 --sizes 64
FAKE_CUDA_CC=8.0 expect 3 'fp8 GEMMs need compute capability 8.9' measure --device cuda --dtype fp8 --sizes 64
# An unsupported dtype beside a supported one is a warning, and the other is measured.
FAKE_CUDA_CC=8.0 expect 0 'warning: .*fp8 GEMMs need compute capability 8.9' \
  measure --device cuda --dtype fp8,bf16 --sizes 64 "${quick[@]}"

# fp8 under cuBLASLt's rules (issue 31): the fake refuses what an H200's cuBLASLt refused (non-TN,
# dimensions off 16, scale pointers 4 bytes apart), and tally's calls pass it. A shape off 16 runs
# padded, and its row says the shape run and that shape's rate.
csv=$("$tally" measure --device cuda --dtype fp8 --shapes 16x32x50 "${quick[@]}" --format csv 2>/dev/null)
[[ $? == 0 ]] || fail "fp8 16x32x50 failed: $csv"
grep -q 'padded_to,run_flop_per_s' <<<"$csv" || fail "no padded_to, run_flop_per_s columns: $csv"
grep -qE '^16,32,50,NN,fp8,cuda,1,[0-9].*,16x32x64,[0-9]' <<<"$csv" || fail "no padded 16x32x50 row: $csv"
# The heuristic's first algorithms refused by cublasLtMatmul: the next one runs.
FAKE_CUDA_LT_REFUSE_ALGOS=3 expect 0 '^fp8$' measure --device cuda --dtype fp8 --shapes 64x48x32 "${quick[@]}" \
  --get measure.best.dtype
# Every algorithm refused, the check's shapes too: fp8 is not measured (said, with the status), bf16 still is.
FAKE_CUDA_LT_REFUSE_ALGOS=9 expect 0 'warning: fp8 not measured: refused by cuBLASLt: status 15' \
  measure --device cuda --dtype fp8,bf16 --sizes 64 "${quick[@]}"
# fp8 alone and refused even on the check's shapes: nothing is measured, a runtime failure (exit 3).
FAKE_CUDA_LT_REFUSE_ALGOS=9 expect 3 '^tally: error: nothing to measure: fp8: refused by cuBLASLt: status 15' \
  measure --device cuda --dtype fp8 --sizes 64 "${quick[@]}"
# A shape with no kernel is a row with a skip_reason and exit 0 (DESIGN.md has no code for partial
# results: what was refused is a result), and the other shapes and dtypes run: 128³ = 2,097,152 >
# 300,000 multiply-adds, refused in fp8 only.
csv=$(FAKE_CUDA_LT_REFUSE_ABOVE=300000 "$tally" measure --device cuda --dtype fp8,bf16 --sizes 64,128 "${quick[@]}" \
  --format csv 2>/dev/null)
[[ $? == 0 ]] || fail "a refused fp8 shape failed the run: $csv"
grep -q '^128,128,128,NN,fp8,cuda,1,,.*,refused by cuBLASLt: status 15 (not supported) from cublasLtMatmulAlgoGetHeuristic for fp8 128x128x128$' \
  <<<"$csv" || fail "no refused row: $csv"
grep -q '^64,64,64,NN,fp8,cuda,1,[0-9]' <<<"$csv" || fail "the 64³ fp8 row was not timed: $csv"
grep -q '^128,128,128,NN,bf16,cuda,1,[0-9]' <<<"$csv" || fail "the 128³ bf16 row was not timed: $csv"
# A model shape that is not a multiple of 16 is padded, and the run says so (batch 30: m = 30 → 32).
expect 0 'warning: [0-9]+ shapes? (was|were) padded with zeros to multiples of 16' \
  measure --device cuda --model seed-mlp --batch 30 --dtype fp8 "${quick[@]}"
# An output path that cannot be written fails before anything is timed (issue 28).
expect 2 "^tally: error: --plot: cannot write '/nonexistent-tally-dir/r.svg': No such file or directory$" \
  measure --device cuda --sizes 64 --plot /nonexistent-tally-dir/r.svg

exit $failed
