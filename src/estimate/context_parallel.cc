#include "estimate/context_parallel.h"

#include <string>

#include "estimate/roofline.h"
#include "graph/layer.h"
#include "util/error.h"
#include "util/text.h"

namespace tally {
namespace {

// The attention kind of every block, whether the config spells them out or not.
const char* Unmodelled(const TransformerSpec& t) {
  if (t.encoder_layers > 0) return "an encoder-decoder's cross-attention";
  if (HasSsmBlocks(t)) return "state-space (Mamba) mixers";
  if (t.mla.kv_lora_rank > 0) return "multi-head latent attention";
  if (t.layer_specs.empty()) return t.sliding_window > 0 ? "sliding-window attention" : nullptr;
  for (const LayerSpec& l : t.layer_specs) {
    if (l.cross_attention || l.attention == AttentionKind::kCross) return "an encoder-decoder's cross-attention";
    if (l.attention == AttentionKind::kSliding) return "sliding-window attention";
    if (l.attention == AttentionKind::kChunked) return "chunked attention";
    if (l.attention == AttentionKind::kLatent) return "multi-head latent attention";
  }
  return nullptr;
}

}  // namespace

void CheckContextParallel(const ModelSpec& spec, const Settings& s) {
  if (s.cp <= 1) return;
  if (spec.family != Family::kTransformer) {
    throw InputError("--cp: '" + spec.name + "' is not a transformer; context parallelism splits a token sequence");
  }
  // Ring attention skips the key chunks outside a window and MLA passes a latent, not K and V: their
  // ring traffic and balance differ from the full-attention ring modelled here.
  if (const char* what = Unmodelled(spec.transformer)) {
    throw InputError("--cp: context parallelism is modelled for full self-attention only, not the " +
                     std::string(what) + " of '" + spec.name + "'");
  }
  if (s.mode != Mode::kTrain) {
    throw InputError("--cp: context parallelism is modelled for training only; give --mode train");
  }
  // Megatron-Core runs context parallelism inside Transformer Engine's fused attention (flash or
  // cuDNN), never the unfused core attention.
  if (s.attention != Attention::kFlash) {
    throw InputError(
        "--cp: Megatron-Core's context parallelism runs in fused (flash) attention; drop --attention eager");
  }
  // Load balancing cuts the sequence into 2·cp chunks and gives rank r chunks r and 2cp-1-r
  // (Megatron-Core get_batch_on_this_cp_rank), so seq must be a multiple of 2·cp.
  const uint64_t seq = s.seq.value();  // resolved (config/resolve.cc)
  if (seq % (2 * s.cp) != 0) {
    throw InputError("--cp: " + N(s.cp) + " ranks split the sequence into " + N(2 * s.cp) +
                     " load-balanced chunks; --seq " + N(seq) + " is not a multiple of " + N(2 * s.cp));
  }
}

uint64_t GradientRanks(const Settings& s) { return s.dp() * s.cp; }

RingExchange RingOf(const ModelSpec& spec, const Settings& s) {
  RingExchange r;
  if (s.cp <= 1) return r;
  const TransformerSpec& t = spec.transformer;
  const double cp = static_cast<double>(s.cp);
  const double local_tokens = static_cast<double>(s.seq.value()) / cp * static_cast<double>(s.micro_batch);
  const uint64_t kv_heads = t.n_kv_heads / TpShards(true, t.n_kv_heads, s.tp);
  const double kv_width = static_cast<double>(kv_heads * t.head_dim);
  r.hop_bytes = 2 * local_tokens * kv_width * BytesPerElement(s.dtypes.activation);
  // Forward: each rank sends its K,V chunk on and receives the next, cp - 1 times, until its queries
  // have met every chunk (Liu et al. 2023, §3). Backward: "each GPU only stores the KV of a sequence
  // chunk in forward and gathers KV again in backward", and the KV gradients are reduce-scattered,
  // both as ring point-to-point (Megatron-LM docs, api-guide/context_parallel.rst): K,V again for
  // cp - 1 hops and dK,dV (the same shape) for cp - 1 more.
  r.forward_hops = cp - 1;
  r.backward_hops = 2 * (cp - 1);
  return r;
}

}  // namespace tally
