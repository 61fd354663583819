// The assumed utilizations that time, fit and sweep use when neither the user (--mfu, --mbu,
// --achieved) nor the hardware catalog (gemm_efficiency) gives one: one home, so that they agree.
#pragma once

// Spelled defaults::kMfu at each use, which says where the value comes from.
namespace tally::defaults {

// Model FLOPs utilization of the dense peak (PaLM, Chowdhery et al. 2022, App. B). 0.4 is a
// typical large training run, not a good one: published MFUs sit around 0.4-0.6 (Korthikanti et
// al. 2022, Table 5: 41.5-56.3% on A100; llm-foundry's MPT runs 38-46% on H100, README
// "Validation"), and 0.5 already counts as very good. Inference uses it as each op's compute
// efficiency inside the roofline.
inline constexpr double kMfu = 0.4;

// Memory-bandwidth utilization of the inference roofline (Williams et al. 2009) and of the
// training step's memory-bound ops: the fraction of the datasheet bandwidth a streaming kernel
// sustains. 0.8 is a judgement, not a measurement: the catalog's bandwidths are datasheet peaks
// (configs/hardware/SOURCES.md), which no kernel reaches; the README's NVIDIA NIM decode comparison
// (Llama-3.3-70B on 2 H100) reached 58% of the bandwidth, where tally assumes 0.8.
inline constexpr double kMbu = 0.8;

}  // namespace tally::defaults
