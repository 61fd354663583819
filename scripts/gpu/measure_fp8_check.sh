#!/usr/bin/env bash
# Issue 31 on a real GPU: does `tally measure --device cuda --dtype fp8` run under cuBLASLt's fp8
# rules? Run from a checkout on an H100/H200 machine (about 1 minute of GPU time):
#
#   scripts/gpu/measure_fp8_check.sh [OUT_DIR]
#
# tally loads CUDA with dlopen, so the ordinary build suffices (no CUDA at build time); set
# TALLY=/path/to/tally to use a binary built elsewhere. Prints the versions (nvidia-smi, the driver,
# runtime, cuBLAS and cuBLASLt tally loaded), then runs, each under a 90 s timeout:
#   1. measure --device cuda --dtype fp8,bf16 --budget 0.1      (the default square sizes)
#   2. measure --device cuda --model llama-3-8b --dtype fp8 --batch 1 --seq 4096 --budget 0.1
#   3. scripts/gpu/fp8_probe.cc, where g++ and the CUDA headers are present: the raw cuBLASLt
#      statuses for tally's fp8 call and for the calls it must not make (non-TN, k = 50, ...).
# Each run's output is kept in OUT_DIR (default: a new folder under /tmp). Exit 0 when both tally
# runs exit 0 with fp8 rows timed; 1 otherwise.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$(mktemp -d /tmp/tally-fp8-check.XXXXXX)}
mkdir -p "$out"

if [[ -z "${TALLY:-}" ]]; then
  source "$root/scripts/bootstrap.sh"
  tally_install_deps
  tally_build tally
  TALLY=$TALLY_BUILD/tally
fi

# cuBLAS from the toolkit or from the nvidia-cublas wheel, when the loader does not find it.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so'; then
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib \
    "$(python3 -c 'import nvidia.cublas, os; print(os.path.join(nvidia.cublas.__path__[0], "lib"))' 2>/dev/null)"; do
    [[ -n "$dir" && -d "$dir" ]] && export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  done
fi

echo "== versions"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*'
"$TALLY" --version
"$TALLY" measure --device cuda --dtype bf16 --sizes 256 --budget 0.01 --format json 2>&1 |
  grep -E '"(gpu|compute_capability|driver|runtime|library|fp8_library)": "' | sed 's/^ */  /'

status=0
# run NAME ARGS...: tally with a timeout; output in $out/NAME.txt (stdout, then stderr).
run() {
  local name=$1
  shift
  echo
  echo "== tally $*"
  timeout 90 "$TALLY" "$@" >"$out/$name.txt" 2>"$out/$name.err"
  local code=$?
  cat "$out/$name.txt" "$out/$name.err"
  echo "exit $code"
  [[ $code == 0 ]] || status=1
  # A timed fp8 row has a median time after its thread count; a refused one has '-' and says why.
  grep -qE ' fp8 +1 +[0-9.]+ [mun]?s ' "$out/$name.txt" || { echo "FAIL: no fp8 row timed"; status=1; }
}
run sweep measure --device cuda --dtype fp8,bf16 --budget 0.1
run model measure --device cuda --model llama-3-8b --dtype fp8 --batch 1 --seq 4096 --budget 0.1

echo
echo "== cuBLASLt fp8 probe (scripts/gpu/fp8_probe.cc): status per algorithm, 0 = ran, 15 = not supported"
inc=$(ls -d /usr/local/cuda/include 2>/dev/null)
if command -v g++ >/dev/null && [[ -n "$inc" && -f "$inc/cublasLt.h" ]]; then
  lib=$(dirname "$(ldconfig -p | grep -o '/[^ ]*libcublasLt\.so\b' | head -1)" 2>/dev/null)
  for d in /usr/local/cuda/lib64 ${LD_LIBRARY_PATH//:/ }; do [[ -f $d/libcublasLt.so ]] && lib=$d && break; done
  if g++ -std=c++17 -O1 -I"$inc" "$root/scripts/gpu/fp8_probe.cc" -L"$lib" -lcublasLt -lcudart -o "$out/fp8_probe"; then
    timeout 60 "$out/fp8_probe" | tee "$out/probe.txt"
  fi
else
  echo "skipped: no g++ or no CUDA headers in /usr/local/cuda/include"
fi
echo
echo "outputs in $out; exit $status"
exit $status
