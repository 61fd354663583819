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

exit $failed
