#include "estimate/kv_cache.h"

#include <algorithm>

#include "util/checked_math.h"

namespace tally {

uint64_t KvTokens(AttentionKind kind, uint64_t span, uint64_t context) {
  switch (kind) {
    case AttentionKind::kFull:
    case AttentionKind::kLatent:
      return context;
    case AttentionKind::kSliding:
    case AttentionKind::kChunked:
      return span > 0 ? std::min(context, span) : context;
    case AttentionKind::kCross:
      return span;  // the encoder's source tokens, however many the decoder has generated
  }
  return context;
}

uint64_t PagedTokens(uint64_t tokens, const Settings& s) {
  const uint64_t block = s.kv_block.value_or(1);
  return CheckedMul(CeilDiv(tokens, block), block, "the KV cache");
}

DType KvDtype(const Settings& settings) { return settings.kv_dtype.value_or(settings.dtypes.activation); }

uint64_t KvCacheBytes(const MemoryModel& model, uint64_t context, uint64_t batch, const Settings& s, uint64_t stage,
                      bool cross_only) {
  constexpr std::string_view what = "the KV cache";
  uint64_t elements = 0;
  for (const KvEntry& e : model.kv) {
    if (cross_only && e.kind != AttentionKind::kCross) continue;
    const uint64_t layers = StageCopies(model, e.block_type, false, stage, s.pp);
    if (layers == 0) continue;
    // 2 · g · d per token for K and V (formulas.md), g split over the tensor-parallel ranks.
    const uint64_t per_token = CeilDiv(e.elements_per_token, TpShards(true, e.tp_max_shards, s.tp));
    const uint64_t tokens = PagedTokens(KvTokens(e.kind, e.span, context), s);
    elements = CheckedAdd(elements, CheckedProduct({per_token, tokens, layers, batch}, what), what);
  }
  return BytesOf(elements, KvDtype(s), what);
}

uint64_t KvBytesPerToken(const MemoryModel& model, DType kv) {
  constexpr std::string_view what = "the KV cache";
  uint64_t elements = 0;
  for (const KvEntry& e : model.kv) {
    if (e.kind == AttentionKind::kCross) continue;  // fixed at the source length: it does not grow
    const uint64_t layers = StageCopies(model, e.block_type, false, 0, 1);
    elements = CheckedAdd(elements, CheckedMul(e.elements_per_token, layers, what), what);
  }
  return BytesOf(elements, kv, what);
}

uint64_t SsmStateBytes(const MemoryModel& model, uint64_t batch, const Settings& s, uint64_t stage) {
  constexpr std::string_view what = "the SSM state";
  uint64_t elements = 0;
  for (const StateEntry& e : model.states) {
    const uint64_t layers = StageCopies(model, e.block_type, false, stage, s.pp);
    elements = CheckedAdd(elements, CheckedProduct({e.elements_per_sequence, layers, batch}, what), what);
  }
  return BytesOf(elements, s.dtypes.activation, what);
}

}  // namespace tally
