// The efficiencies a time estimate assumes when neither the user nor the hardware catalog gives one.
#pragma once

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

}  // namespace tally
