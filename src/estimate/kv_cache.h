// The KV cache: the one rule for what attention layers keep per sequence, read from the graph's
// attention nodes (their kind, span and K/V elements per token). Memory, time and fit all ask here.
#pragma once

#include <cstdint>

#include "config/settings.h"
#include "estimate/memory_model.h"

namespace tally {

// Tokens of a `context`-token sequence that one layer keeps: all of them (full attention, and MLA's
// latent), the last `span` (a sliding window), or at most one `span`-token chunk (chunked attention;
// vLLM allocates min(context, chunk) for it); an encoder–decoder's cross-attention keeps the `span`
// source tokens whatever the context.
uint64_t KvTokens(AttentionKind kind, uint64_t span, uint64_t context);

// The token slots `tokens` kept tokens take: whole pages of --kv-block tokens (vLLM's PagedAttention,
// Kwon et al. 2023, §4.1: a sequence's last page is partly empty), or `tokens` without paging.
uint64_t PagedTokens(uint64_t tokens, const Settings& settings);

// The KV cache dtype: --kv-dtype, else the activation dtype.
DType KvDtype(const Settings& settings);

// Bytes the KV cache of `batch` sequences of `context` tokens takes on one device of pipeline stage
// `stage`: per attention layer, its elements per token split over the tensor-parallel ranks (K/V
// heads over at most their number; a latent cache is not split) times the tokens it keeps, in
// whole pages. `cross_only`: the cross-attention layers' share alone.
uint64_t KvCacheBytes(const MemoryModel& model, uint64_t context, uint64_t batch, const Settings& settings,
                      uint64_t stage, bool cross_only = false);

// Bytes one token adds to the cache across all layers of the whole model (no parallelism): every
// layer's K and V (or latent), as long as the context is within every window. Once the context
// passes a window, sliding and chunked layers stop growing: KvCacheBytes has the exact figure.
// Cross-attention caches do not grow with the tokens and are left out.
uint64_t KvBytesPerToken(const MemoryModel& model, DType kv);

// The recurrent state state-space layers (Mamba) keep instead of a KV cache: per layer and sequence
// a constant, the convolution's last inputs and the SSM state, whatever the context. transformers
// (MambaCache, Mamba2Cache) and mamba_ssm allocate it at the model's dtype: the activation dtype
// here. Bytes of `batch` sequences on one device of pipeline stage `stage`.
uint64_t SsmStateBytes(const MemoryModel& model, uint64_t batch, const Settings& settings, uint64_t stage);

}  // namespace tally
