#include "graph/build_graph.h"

#include <algorithm>
#include <functional>
#include <string>

#include "config/resolve.h"
#include "graph/op_checkpoint.h"
#include "util/checked_math.h"

namespace tally {
namespace {

// Frozen weights get no gradient: their GEMMs skip dW, and they carry no gradient or optimizer
// state. LoRA freezes every base weight and trains only the adapters.
void ApplyTrainability(const GraphSettings& settings, LayerGraph& g) {
  const auto& frozen = settings.frozen;
  for (Layer& l : g.layers) {
    bool listed = std::find(frozen.begin(), frozen.end(), ComponentName(l.component)) != frozen.end();
    // A node the builder froze stays frozen (Whisper's sinusoidal positions: requires_grad False).
    l.trainable = l.trainable && (settings.lora_rank > 0 ? l.component == Component::kLora : !listed);
  }
  for (Layer& l : g.layers) {
    const bool weight_trainable = l.weights_of ? g.layers[*l.weights_of].trainable : l.trainable;
    const bool weighted_gemms = l.kind == LayerKind::kLinear || l.kind == LayerKind::kConv2d ||
                                l.kind == LayerKind::kConv1d || l.kind == LayerKind::kLru;
    if (!weighted_gemms) continue;
    for (Gemm& gemm : l.gemms) gemm.grad_b = gemm.grad_b && weight_trainable;
  }
}

}  // namespace

// Megatron-LM splits attention by heads, pipelines by blocks.
void CheckParallelism(const ModelSpec& spec, const Settings& s) {
  if (spec.family == Family::kSequential) {
    if (s.tp > 1 || s.pp > 1) {
      throw InputError("--tp/--pp: '" + spec.name +
                       "' is a sequential model; tensor and pipeline parallelism "
                       "are modelled for transformers only");
    }
    if (s.lora_rank > 0) throw InputError("--lora: LoRA adapters are modelled for transformers only");
    return;
  }
  if (!s.input.empty()) {
    throw InputError("--input: '" + spec.name + "' is a transformer; its input is set by --batch and --seq");
  }
  const TransformerSpec& t = spec.transformer;
  if (s.tp > 1 && HasSsmBlocks(t)) {
    throw InputError("--tp: tensor parallelism is not modelled for the state-space (Mamba) mixers of '" + spec.name +
                     "'");
  }
  if (t.n_heads % s.tp != 0) {
    throw InputError("--tp: " + std::to_string(s.tp) + " does not divide the " + std::to_string(t.n_heads) +
                     " attention heads of '" + spec.name + "'");
  }
  // Ranks split the K/V heads evenly, or each holds one and replicates it (vLLM; Megatron-Core
  // training requires the former).
  if (t.n_kv_heads % s.tp != 0 && s.tp % t.n_kv_heads != 0) {
    throw InputError("--tp: " + std::to_string(s.tp) + " ranks cannot share the " + std::to_string(t.n_kv_heads) +
                     " key/value heads of '" + spec.name + "' (one must divide the other)");
  }
  if (s.pp > t.n_layers) {
    throw InputError("--pp: " + std::to_string(s.pp) + " stages for " + std::to_string(t.n_layers) + " blocks");
  }
  if (s.pp > 1 && t.zamba.shared_blocks > 0) {
    // A shared block used on several stages would be held (and its gradient reduced) on each: not modelled.
    throw InputError("--pp: pipeline stages of '" + spec.name + "' (shared transformer blocks) are not modelled");
  }
  if (s.pp > 1 && t.encoder_layers > 0) {
    // The shared embedding is read at both ends of the pipeline and the encoder's output by every
    // decoder stage: not modelled.
    throw InputError("--pp: pipeline stages of an encoder-decoder ('" + spec.name + "') are not modelled yet");
  }
}

namespace {

// Every LoRA target must exist in the model: an adapter on nothing would train nothing.
void CheckLoraTargets(const ModelSpec& spec, const GraphSettings& s, const LayerGraph& g) {
  if (s.lora_rank == 0) return;
  for (const std::string& target : s.lora_targets) {
    std::vector<std::string> suffixes = {(target == "qkv" || target == "out" ? ".attn." : ".") + target + ".lora"};
    // Multi-head latent attention's q and k/v up-projections (graph/build_attention.cc).
    // q, k and v stored apart: an adapter on each (graph/transformer_context.cc).
    if (target == "qkv") {
      suffixes.insert(suffixes.end(), {".attn.q.lora", ".attn.q_b.lora", ".attn.kv_b.lora", ".attn.qkv.q.lora",
                                       ".cross.q.lora", ".cross.kv.lora", ".cross.kv.k.lora"});
    }
    bool found = false;
    for (const Layer& l : g.layers) {
      for (const std::string& suffix : suffixes) {
        found = found || (l.path.size() >= suffix.size() &&
                          l.path.compare(l.path.size() - suffix.size(), suffix.size(), suffix) == 0);
      }
    }
    if (!found) {
      throw InputError("--lora-targets: '" + spec.name + "' has no '" + target + "' projection" +
                       (target == "gate" ? " (its MLP is not gated)" : ""));
    }
  }
}

}  // namespace

GraphSettings GraphSettingsOf(const Settings& s) {
  return {.batch = s.batch,
          .seq = s.seq,
          .target_seq = s.target_seq,
          .context = s.context,
          .images = s.images,
          .causal = s.causal,
          .attention = s.attention,
          .mlp_kernel = s.mlp_kernel,
          .loss_kernel = s.loss_kernel,
          .dropout = s.dropout,
          .frozen = s.frozen,
          .lora_rank = s.lora_rank,
          // The targets matter only with adapters: without, every point shares one key (and no copy).
          .lora_targets = s.lora_rank > 0 ? LoraTargets(s) : std::vector<std::string>{},
          .lora_fp32 = LoraAdaptersInFp32(s),
          .dropout_mask = s.dropout_mask,
          .input = s.input};
}

size_t GraphSettingsHash::operator()(const GraphSettings& s) const {
  // FNV-1a's xor-multiply step (Fowler, Noll, Vo), over whole fields instead of bytes.
  uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  auto optional = [&mix](const std::optional<uint64_t>& v) { mix(v ? *v + 1 : 0); };
  mix(s.batch);
  optional(s.seq);
  optional(s.target_seq);
  optional(s.context);
  optional(s.images);
  mix(static_cast<uint64_t>(s.causal) | static_cast<uint64_t>(s.attention) << 1 |
      static_cast<uint64_t>(s.mlp_kernel) << 8 | static_cast<uint64_t>(s.dropout_mask) << 16 |
      static_cast<uint64_t>(s.loss_kernel) << 24);
  mix(s.dropout ? std::hash<double>{}(*s.dropout) + 1 : 0);
  for (const std::string& f : s.frozen) mix(std::hash<std::string>{}(f));
  mix(s.lora_rank << 1 | static_cast<uint64_t>(s.lora_fp32));
  for (const std::string& t : s.lora_targets) mix(std::hash<std::string>{}(t));
  for (uint64_t d : s.input) mix(d);
  return static_cast<size_t>(h ^ (h >> 32));
}

LayerGraph BuildGraph(const ModelSpec& spec, const GraphSettings& given) {
  GraphSettings settings = given;
  // The target follows the seq of this graph: fit and time change seq after ResolveSettings.
  const bool enc_dec = spec.family == Family::kTransformer && spec.transformer.encoder_layers > 0;
  if (enc_dec && settings.seq && !settings.target_seq) {
    settings.target_seq = DefaultTargetSeq(spec.transformer, *settings.seq);
  }
  LayerGraph g = BlameOverflowOn(spec.source, [&] {
    return spec.family == Family::kTransformer ? BuildTransformerGraph(spec, settings)
                                               : BuildSequentialGraph(spec, settings);
  });
  CheckLoraTargets(spec, settings, g);
  ApplyTrainability(settings, g);
  MarkOpCheckpoint(g, settings.attention == Attention::kFlash);
  g.Validate();
  return g;
}

}  // namespace tally
