// Context parallelism (--cp): Megatron-Core's ring attention with load-balanced causal chunks. The
// sequence of each micro-batch is split over cp ranks; each rank keeps s/cp tokens' activations and
// runs the GEMMs of its s/cp tokens, and its queries meet every key as the key/value chunks pass
// around the ring (Liu et al. 2023, Ring Attention; NVIDIA Megatron-Core, "context_parallel" docs).
#pragma once

#include <cstdint>

#include "config/model_spec.h"
#include "config/settings.h"

namespace tally {

// Refuses (InputError naming --cp) what context parallelism cannot be modelled for: a seq not a
// multiple of 2·cp, another mode than training, eager attention, models whose blocks are not full
// self-attention (sliding/chunked windows, MLA, cross-attention, state-space mixers), sequential
// models. Needs the resolved settings (their seq).
void CheckContextParallel(const ModelSpec& spec, const Settings& settings);

// The ranks that reduce gradients and that ZeRO shards over: dp · cp. Megatron-Core's
// DistributedDataParallel and distributed optimizer use parallel_state.get_data_parallel_group(
// with_context_parallel=True): context-parallel ranks hold the same weights and different tokens.
uint64_t GradientRanks(const Settings& settings);

// The ring exchange of one micro-batch on one device, per transformer block.
struct RingExchange {
  double hop_bytes = 0;  // one K and V chunk: 2 · (s/cp) · kv_heads/tp-shards · head_dim · act bytes · micro-batch
  double forward_hops = 0;   // cp - 1
  double backward_hops = 0;  // 2 (cp - 1): K and V again, and their gradients
};

// The hops of one block in one micro-batch; none without --cp. Tensor parallelism splits the K/V
// heads (at most one head per rank), so a rank passes its share of them.
RingExchange RingOf(const ModelSpec& spec, const Settings& settings);

}  // namespace tally
