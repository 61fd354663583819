// The efficiencies a time estimate assumes when neither the user nor the hardware catalog gives one.
#pragma once

#include <cstdint>

namespace tally {

// Model FLOPs utilization when the step is not modelled from its parts, and each op's compute
// efficiency inside the inference roofline: 0.4, a little under what large, tuned dense training
// runs publish (Chowdhery et al. 2022, PaLM 540B: 46.2% MFU; Narayanan et al. 2021: 52% of peak at
// 1T parameters), since most runs are smaller and less tuned.
inline constexpr double kDefaultMfu = 0.4;

// Memory-bandwidth utilization of the inference roofline and of the modelled step's non-GEMM ops:
// what a streaming kernel reaches of the HBM peak. A device-to-device copy on an H100 reached
// 2.97 of the datasheet's 3.35 TB/s, 0.89 (measured 2026-11-25, PyTorch 2.11, CUDA 13.0); 0.8 leaves room
// for kernels less simple than a copy.
inline constexpr double kDefaultMbu = 0.8;

// The device's memory beyond the step's tensors (estimate/step_timeline.h, DeviceOverheads), for a
// CUDA device under PyTorch. The CUDA context with PyTorch's and cuBLAS's kernels loaded (lazily:
// CUDA_MODULE_LOADING=LAZY, PyTorch's default since 2.0): the device's used memory less what the
// caching allocator reserved, 685 MiB after the first matmuls on an H100 80GB HBM3 (PyTorch 2.11,
// CUDA 13.0, driver 580; 619 MiB right after initialization; docs/validation.md).
inline constexpr uint64_t kDefaultCudaContext = uint64_t{685} << 20;
// cuBLAS's workspace: PyTorch sizes it by CUBLAS_WORKSPACE_CONFIG, default ":4096:8" (8 x 4 MiB) on
// Hopper (aten/src/ATen/cuda/CublasHandlePool.cpp).
inline constexpr uint64_t kDefaultCublasWorkspace = uint64_t{32} << 20;
// NCCL's buffers per communicator: NCCL_BUFFSIZE (4 MiB) for each of up to 32 channels, send and
// receive (NCCL's environment-variable documentation), with more than one device.
inline constexpr uint64_t kDefaultNcclBuffers = uint64_t{256} << 20;
// The caching allocator's reserved memory beyond its live tensors at the peak (512 B blocks, 2 MiB
// segments for small tensors, 20 MiB rounding for large ones, split blocks not reused; PyTorch's
// CUDA memory-management notes): max_memory_reserved / max_memory_allocated over one training step
// of 14 Hugging Face models on an H100 ranged 1.005-1.32, median 1.096 (PyTorch 2.11;
// docs/validation.md), so 10% of the peak.
inline constexpr double kDefaultFragmentation = 0.10;

}  // namespace tally
