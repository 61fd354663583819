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
    const uint64_t tokens = KvTokens(e.kind, e.span, context);
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

}  // namespace tally
