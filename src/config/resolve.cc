#include "config/resolve.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "util/error.h"

namespace tally {

Settings ResolveSettings(Settings s, const ModelSpec& spec) {
  if (spec.family == Family::kTransformer && !s.seq) {
    const TransformerSpec& t = spec.transformer;
    // The context a model was trained at, not the one RoPE scaling stretched it to afterwards.
    const uint64_t trained = t.pretrain_context > 0 ? std::min(t.pretrain_context, t.context_length) : t.context_length;
    s.seq = std::min(trained, kDefaultSeqCap);
    if (trained > kDefaultSeqCap) {
      s.notes.push_back("--seq: defaulting to " + std::to_string(kDefaultSeqCap) + " tokens; '" + spec.name +
                        "' takes up to " + std::to_string(t.context_length) + " (give --seq for a longer context)");
    }
  }
  if (!s.reserve) s.reserve = kDefaultReserve;
  // Settings built in code (tests, budget files) name a device without reading it.
  if (!s.hardware.empty() && s.device == nullptr) {
    s.device = std::make_shared<const HardwareSpec>(ResolveHardware(s.hardware));
  }
  // Chunked prefill splits a decoder's prompt tokens; a sequential model or an encoder runs whole samples.
  const bool decoder = spec.family == Family::kTransformer && !spec.transformer.encoder;
  // PEFT adapts the modules a checkpoint holds: one adapter on a fused gate_up_proj, where tally's
  // gate and up targets put one on each.
  if (s.lora_rank > 0 && spec.family == Family::kTransformer && spec.transformer.gate_up_fused) {
    const std::vector<std::string>& targets = LoraTargets(s);
    if (std::find(targets.begin(), targets.end(), "gate") != targets.end() ||
        std::find(targets.begin(), targets.end(), "up") != targets.end()) {
      s.notes.push_back("--lora-targets: '" + spec.name +
                        "' stores gate and up as one gate_up_proj, which PEFT adapts with one adapter; tally puts "
                        "one on each of gate and up (one more d_model x r matrix a block)");
    }
  }
  // torchtitan builds decoder-only transformers; its policy on anything else counts the matmuls as
  // tally's graph orders them, which no run of it has.
  if (s.recompute == Recompute::kOp && spec.family == Family::kTransformer) {
    const TransformerSpec& t = spec.transformer;
    const char* what = t.encoder              ? "an encoder"
                       : t.encoder_layers > 0 ? "an encoder-decoder"
                       : HasSsmBlocks(t)      ? "a model with state-space blocks"
                                              : nullptr;
    if (what != nullptr) {
      s.notes.push_back(
          std::string("--recompute op: torchtitan's per-op policy, on ") + what +
          ", which torchtitan does not build: its matmuls are counted in the order tally's graph runs them");
    }
  }
  if (s.max_batched_tokens && !decoder) {
    throw InputError("--max-batched-tokens: chunked prefill splits a decoder's tokens; '" + spec.name + "' is " +
                     (spec.family == Family::kTransformer ? "an encoder" : "sequential"));
  }
  return s;
}

// A careful default: give --target-seq for a shorter target.
uint64_t DefaultTargetSeq(const TransformerSpec& t, uint64_t seq) {
  const uint64_t target_limit = t.target_context > 0 ? t.target_context : t.context_length;
  return t.position == PositionKind::kLearned ? std::min(seq, target_limit) : seq;
}

uint64_t ClaimedMemory(uint64_t memory, const Settings& s) {
  if (!s.gpu_memory_utilization) return memory;
  return static_cast<uint64_t>(std::floor(*s.gpu_memory_utilization * static_cast<double>(memory)));
}

uint64_t UsableMemory(const HardwareSpec& hw, const Settings& s) {
  const uint64_t reserve = s.reserve.value_or(kDefaultReserve);
  const uint64_t claimed = ClaimedMemory(hw.memory_bytes, s);
  return claimed > reserve ? claimed - reserve : 0;
}

}  // namespace tally
