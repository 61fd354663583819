#include "estimate/activations.h"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "util/checked_math.h"

namespace tally {
namespace {

uint64_t Add(uint64_t a, uint64_t b) { return CheckedAdd(a, b, "activation memory"); }

uint64_t ClassBits(const SavedEntry& t, const ActivationSettings& s) {
  switch (t.cls) {
    case SavedClass::kActivation:
      return BitsPer(s.activation);
    case SavedClass::kAutocastFp32:
      return s.autocast ? 32 : BitsPer(s.activation);
    case SavedClass::kMask:
      return 8;  // PyTorch keeps dropout masks as 1-byte booleans
    case SavedClass::kIndex:
      return 64;  // max-pool indices are int64
    case SavedClass::kFp32:
      return 32;
  }
  return 32;
}

}  // namespace

ActivationSettings ActivationSettingsOf(const Settings& s) {
  return {.micro_batch = s.micro_batch,
          .in_flight = std::min(s.grad_accum(), s.pp),
          .activation = s.dtypes.activation,
          .autocast = s.autocast(),
          .recompute = s.recompute,
          .recompute_layers = s.recompute_layers,
          .tp = s.tp,
          .cp = s.cp,
          .pp = s.pp,
          .sp = s.sp};
}

uint64_t SavedBytes(const SavedEntry& t, const ActivationSettings& s, uint64_t batch) {
  const uint64_t elements = CheckedMul(t.elements, batch, "activation memory");
  const uint64_t shards = (t.tp_sharded ? TpShards(true, t.tp_max_shards, s.tp) : s.sp ? s.tp : 1) * s.cp;
  const uint64_t device = CeilDiv(elements, shards);
  const uint64_t class_bits = ClassBits(t, s);
  uint64_t bytes = 0;
  if (class_bits % 8 == 0 && !__builtin_mul_overflow(device, class_bits / 8, &bytes)) return bytes;
  const u128 bits = static_cast<u128>(device) * class_bits;
  if ((bits + 7) / 8 > UINT64_MAX) throw OverflowError("activation memory");
  return static_cast<uint64_t>((bits + 7) / 8);
}

uint64_t CheckpointBytes(const SavedEntry& t, const ActivationSettings& s, uint64_t batch) {
  SavedEntry input = t;
  input.cls = SavedClass::kAutocastFp32;
  return SavedBytes(input, s, batch);
}

namespace {

// What one block of a distinct type keeps, saves in all, and keeps of its input under full
// recomputation, on one device; under --recompute op also the outputs the policy keeps.
struct BlockBytes {
  uint64_t kept = 0, full = 0, checkpoint = 0, op = 0;
  // What a block the backward reruns holds from its forward until then.
  uint64_t Rerun() const { return CheckedAdd(checkpoint, op, "activation memory"); }
};

// Stage `stage`'s activations from each distinct block's bytes and those of the tensors outside the
// blocks that the stage holds.
ActivationMemory StageActivations(const MemoryModel& model, const ActivationSettings& s, uint64_t stage,
                                  std::span<const BlockBytes> types, uint64_t outside) {
  ActivationMemory m;
  uint64_t blocks = 0, working_set = 0, not_rerun = 0;
  const int first = FirstTypeOnStage(model, stage, s.pp);
  for (size_t type = 0; type < types.size(); ++type) {
    const int t = static_cast<int>(type);
    const uint64_t copies = StageCopies(model, t, false, stage, s.pp);
    // Full recomputation keeps each rerun block's input (and --recompute op the outputs it keeps)
    // and rebuilds one block at a time in backward; the blocks it does not rerun
    // (--recompute-layers) keep all they save.
    const uint64_t rerun = RerunsBlocks(s.recompute)
                               ? RecomputedBlocks(model.runs, model.n_layers, t, s.pp, s.recompute_layers, stage)
                               : 0;
    if (t == first) m.per_layer = RerunsBlocks(s.recompute) ? types[type].Rerun() : types[type].kept;
    if (copies == 0) continue;
    blocks = Add(blocks, CheckedMul(types[type].Rerun(), rerun, "activation memory"));
    const uint64_t kept = CheckedMul(types[type].kept, copies - rerun, "activation memory");
    blocks = Add(blocks, kept);
    not_rerun = Add(not_rerun, kept);
    // The rebuilt block's saved set, less what --recompute op kept of it: the rerun hands those on to
    // the backward or frees them (step_timeline.cc, BackwardBlock).
    const BlockBytes& b = types[type];
    if (rerun > 0) working_set = std::max(working_set, b.full > b.op ? b.full - b.op : 0);
  }
  // 1F1B keeps up to pp - stage micro-batches in flight on a stage (Narayanan et al. 2021, §2.2).
  const uint64_t in_flight = std::min(s.pp - stage, s.in_flight);
  m.total = CheckedMul(Add(blocks, outside), in_flight, "activation memory");
  // The backward reaches the rerun blocks (each stage's first) after the others have freed theirs:
  // the block rebuilt on top of the checkpoints needs only what those freed did not leave.
  m.total = Add(m.total, working_set > not_rerun ? working_set - not_rerun : 0);
  return m;
}

size_t BlockTypes(const MemoryModel& model) {
  size_t n = 0;
  for (const SavedEntry& t : model.saved) n = std::max(n, static_cast<size_t>(t.block_type + 1));
  return n;
}

}  // namespace

ActivationMemory TrainingActivations(const MemoryModel& model, const ActivationSettings& s, uint64_t stage) {
  if (!model.training_refused.empty()) throw InputError(model.training_refused);
  // Most models have one to three distinct blocks: held in place then (a sweep asks at every point).
  const size_t n_types = BlockTypes(model);
  std::array<BlockBytes, 8> few{};
  std::vector<BlockBytes> many(n_types > few.size() ? n_types : 0);
  const std::span<BlockBytes> types =
      many.empty() ? std::span<BlockBytes>(few.data(), n_types) : std::span<BlockBytes>(many);
  uint64_t outside = 0;  // embedding, head, loss, sequential layers
  for (const SavedEntry& t : model.saved) {
    if (t.block_type < 0) {
      if (StageCopies(model, -1, t.after_blocks, stage, s.pp) > 0)
        outside = Add(outside, SavedBytes(t, s, s.micro_batch));
      continue;
    }
    const uint64_t bytes = SavedBytes(t, s, s.micro_batch);
    BlockBytes& b = types[static_cast<size_t>(t.block_type)];
    if (t.op_kept) {
      if (s.recompute == Recompute::kOp && OpKeeps(t, s.sp, s.tp)) b.op = Add(b.op, bytes);
      continue;
    }
    if (t.checkpoint) b.checkpoint = CheckpointBytes(t, s, s.micro_batch);
    b.full = Add(b.full, bytes);
    // Selective recomputation drops the s² attention tensors (Korthikanti et al. 2022, §5).
    if (!(s.recompute == Recompute::kSelective && t.selective)) b.kept = Add(b.kept, bytes);
  }
  return StageActivations(model, s, stage, types, outside);
}

LinearActivations::LinearActivations(const MemoryModel& model) : types_(BlockTypes(model)) {
  for (const SavedEntry& t : model.saved) {
    const auto cls = static_cast<size_t>(t.cls);
    auto add = [&](Sums& sums) { exact_ = exact_ && !__builtin_add_overflow(sums[cls], t.elements, &sums[cls]); };
    if (t.block_type < 0) {
      add(t.after_blocks ? after_ : before_);
      continue;
    }
    Type& type = types_[static_cast<size_t>(t.block_type)];
    if (t.op_kept) {
      if (OpKeeps(t, false, 1)) add(type.op);  // At() answers for tp 1 alone
      continue;
    }
    add(type.full);
    if (!t.selective) add(type.not_selective);
    if (t.checkpoint) {
      type.checkpoint = t.elements;
      type.largest_checkpoint = std::max(type.largest_checkpoint, t.elements);
    }
  }
}

std::optional<ActivationMemory> LinearActivations::At(const MemoryModel& model, const ActivationSettings& s,
                                                      uint64_t stage) const {
  // Only whole bytes per element and no split make each tensor's bytes elements x batch x bytes.
  if (!exact_ || s.tp != 1 || s.cp != 1 || s.micro_batch == 0 || BitsPer(s.activation) % 8 != 0 ||
      !model.training_refused.empty()) {
    return std::nullopt;
  }
  std::array<uint64_t, kClasses> per{};  // bytes per element, by SavedClass
  for (size_t c = 0; c < kClasses; ++c) per[c] = ClassBits({.cls = static_cast<SavedClass>(c)}, s) / 8;
  auto bytes = [&](const Sums& elements) {
    uint64_t total = 0;
    for (size_t c = 0; c < kClasses; ++c) {
      if (elements[c] == 0) continue;  // a block saves two or three of the classes
      total = Add(total,
                  CheckedMul(CheckedMul(elements[c], per[c], "activation memory"), s.micro_batch, "activation memory"));
    }
    return total;
  };
  auto input = [&](uint64_t elements) {  // CheckpointBytes: the autocast class
    const uint64_t b = per[static_cast<size_t>(SavedClass::kAutocastFp32)];
    return CheckedMul(CheckedMul(elements, b, "activation memory"), s.micro_batch, "activation memory");
  };
  std::array<BlockBytes, 8> few{};
  std::vector<BlockBytes> many(types_.size() > few.size() ? types_.size() : 0);
  const std::span<BlockBytes> types =
      many.empty() ? std::span<BlockBytes>(few.data(), types_.size()) : std::span<BlockBytes>(many);
  for (size_t i = 0; i < types_.size(); ++i) {
    input(types_[i].largest_checkpoint);  // overflows where an earlier checkpoint's bytes would
    types[i].checkpoint = input(types_[i].checkpoint);
    types[i].full = bytes(types_[i].full);
    types[i].kept = s.recompute == Recompute::kSelective ? bytes(types_[i].not_selective) : types[i].full;
    if (s.recompute == Recompute::kOp) types[i].op = bytes(types_[i].op);
  }
  // Before the blocks on the first stage, after them on the last (StageCopies).
  uint64_t outside = stage == 0 ? bytes(before_) : 0;
  if (stage == (s.pp == 1 ? 0 : s.pp - 1)) outside = Add(outside, bytes(after_));
  return StageActivations(model, s, stage, types, outside);
}

uint64_t InferenceActivations(const MemoryModel& model, const Settings& s, uint64_t batch) {
  if (s.max_batched_tokens) {
    // Chunked prefill (Agrawal et al. 2024, Sarathi-Serve; vLLM's max_num_batched_tokens): a pass
    // takes at most T tokens of all sequences together, whatever their number, and samples at most
    // one token per sequence in it. Without the s x s scores, every output is linear in the
    // tokens, so the largest per token is the largest output / seq.
    const uint64_t all = CheckedMul(batch, model.seq, "activation memory");
    const uint64_t tokens = std::min(all, *s.max_batched_tokens);
    const uint64_t per_token = CeilDiv(LargestDeviceOutput(model, s.tp, s.sp, false), model.seq);
    const uint64_t live =
        BytesOf(CheckedProduct({2, per_token, tokens}, "activation memory"), s.dtypes.activation, "activation memory");
    const uint64_t sampled = std::min(batch, *s.max_batched_tokens);
    return Add(live, CheckedProduct({sampled, model.vocab, 4}, "activation memory"));
  }
  // Flash attention never materializes the s x s scores.
  const uint64_t largest = LargestDeviceOutput(model, s.tp, s.sp, s.attention != Attention::kFlash);
  const uint64_t live =
      BytesOf(CheckedProduct({2, largest, batch}, "activation memory"), s.dtypes.activation, "activation memory");
  const uint64_t logits = CheckedProduct({batch, model.vocab, 4}, "activation memory");
  return Add(live, logits);
}

}  // namespace tally
