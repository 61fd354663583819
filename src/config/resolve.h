// The settings of a run, made whole once per model: what the flags left to the model is filled in
// here, so that every estimator reads the same resolved values.
#pragma once

#include <cstdint>

#include "config/hardware.h"
#include "config/model_spec.h"
#include "config/settings.h"

namespace tally {

// The longest default sequence: past it a run must ask for a long context (--seq), since memory
// and time grow with it and most training runs use 4k-8k tokens.
inline constexpr uint64_t kDefaultSeqCap = 8192;
// Device memory kept from the model beyond what tally models (--reserve). The CUDA context, cuBLAS
// workspace, NCCL buffers and the allocator's fragmentation are modelled lines of the device
// figure (estimate/step_timeline.h, DeviceOverheads), so by default nothing more is kept.
inline constexpr uint64_t kDefaultReserve = 0;

// The bytes a device named by --hardware leaves for the model: its memory less --reserve (0 when
// the reserve takes it all). Needs ResolveSettings first.
uint64_t UsableMemory(const HardwareSpec& hw, const Settings& settings);

// The part of `memory` bytes a server claims under --gpu-memory-utilization F: ⌊F x memory⌋ (vLLM's
// gpu_memory_utilization; the runtime's own memory, tally's --reserve, counts inside it), or all.
uint64_t ClaimedMemory(uint64_t memory, const Settings& settings);

// Fills in the sequence length (transformers: the pre-training context, capped at kDefaultSeqCap
// with a note) and the memory reserve; notes go to settings.notes. The one place a default --seq is
// chosen: the graph builders take settings.seq as given and refuse to build without it.
Settings ResolveSettings(Settings settings, const ModelSpec& spec);

// An encoder–decoder's target (decoder) tokens when --target-seq is not given, for a source of
// `seq` tokens: as many as the source, or the decoder's learned positions when it has fewer
// (Whisper). The one rule for the default target; graph/build_graph.cc applies it per graph, since
// the target follows a seq that fit and time change after ResolveSettings, and Settings::target_seq
// stays what the user gave (the inference time refuses --target-seq).
uint64_t DefaultTargetSeq(const TransformerSpec& t, uint64_t seq);

}  // namespace tally
