#!/usr/bin/env bash
# Succeeds when the dynamic loader can find an NVIDIA driver (libcuda.so.1), as tally's dlopen
# would: in LD_LIBRARY_PATH or in ldconfig's cache. Golden cases that expect "no CUDA driver found"
# skip themselves with it (their .skip_if).
IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
for dir in "${dirs[@]}"; do
  [[ -n "$dir" && -e "$dir/libcuda.so.1" ]] && exit 0
done
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
"$ldconfig" -p 2>/dev/null | grep -q 'libcuda\.so\.1 '
