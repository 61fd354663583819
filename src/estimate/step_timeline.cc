#include "estimate/step_timeline.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "estimate/activations.h"
#include "estimate/context_parallel.h"
#include "estimate/defaults.h"
#include "util/checked_math.h"

namespace tally {
namespace {

constexpr const char* kWhat = "the step's memory";

uint64_t Add(uint64_t a, uint64_t b) { return CheckedAdd(a, b, kWhat); }
uint64_t Sub(uint64_t a, uint64_t b) {
  if (b > a) throw std::logic_error("step timeline: freed more than was live");
  return a - b;
}
uint64_t Times(uint64_t a, uint64_t n) { return CheckedMul(a, n, kWhat); }

// a · num / den, exactly (num <= den).
uint64_t Scale(uint64_t a, uint64_t num, uint64_t den) {
  if (num == den) return a;  // no ZeRO partition: the common case, without a 128-bit division
  return den == 0 ? 0 : static_cast<uint64_t>(static_cast<u128>(a) * num / den);
}

// The dtype a node writes its output in. Autocast runs GEMMs (and what follows them elementwise) in
// the half-precision dtype, and norms, softmax, the loss and the embedding lookup (not an autocast
// op: fp32 weights) in fp32; a residual add of an fp32 stream and a half-precision branch promotes
// to fp32 (torch.amp's op lists, PyTorch's type promotion).
DType OutputDtype(const StepNode& n, const Settings& s) {
  if (!s.autocast()) return s.dtypes.activation;
  switch (n.kind) {
    case LayerKind::kNorm:
    case LayerKind::kSoftmax:
    case LayerKind::kResidualAdd:
    case LayerKind::kEmbedding:
    case LayerKind::kLoss:
      return DType::kFp32;
    default:
      return s.dtypes.activation;
  }
}

// The bytes of one node, for the micro-batch on this device.
struct NodeBytes {
  uint64_t output = 0;      // its output (and, in backward, the gradient of it)
  uint64_t scratch = 0;     // what its backward holds beyond the gradients of its output and input
  uint64_t full = 0;        // everything it saves for backward
  uint64_t kept = 0;        // what the forward keeps of it under the recomputation policy, but
  uint64_t checkpoint = 0;  // a recomputed block's input, kept by the checkpoint
  uint64_t casts = 0;       // autocast's half-precision copies of its weight matrices, saved for dX
  uint64_t grads = 0;       // the gradients of the parameters it owns, before ZeRO
};

// Temporaries of the optimizer step (torch/optim/adamw.py, adam.py, sgd.py, adagrad.py, rmsprop.py
// of PyTorch 2): the for-loop AdamW computes exp_avg_sq.sqrt() and its division by the bias
// correction as two new tensors the size of the parameter; foreach does the same sqrt for every
// parameter at once (_foreach_sqrt) and divides in place; fused kernels allocate nothing. SGD
// updates in place. Returns how many parameter-sized temporaries the largest tensor (for-loop) or
// all of them (foreach) take.
uint64_t OptimizerTemporaries(Optimizer o, OptimizerImpl impl) {
  if (impl == OptimizerImpl::kFused) return 0;
  switch (o) {
    case Optimizer::kSgd:
    case Optimizer::kSgdMomentum:
    case Optimizer::kAdam8bit:  // bitsandbytes' fused 8-bit kernels
      return 0;
    case Optimizer::kAdam:
    case Optimizer::kAdamw:
    case Optimizer::kAdafactor:
      return impl == OptimizerImpl::kForLoop ? 2 : 1;
    case Optimizer::kAdagrad:  // state_sum.sqrt().add_(eps)
    case Optimizer::kRmsprop:  // square_avg.sqrt().add_(eps)
    case Optimizer::kLion:     // the interpolated update before sign_()
      return 1;
  }
  return 1;
}

// The buffers of sharded data parallelism beside this rank's shards, during forward (gather) and
// backward (gather and reduce).
struct ShardBuffers {
  uint64_t gather = 0, reduce = 0;
};

ShardBuffers ShardBuffersOf(const MemoryModel& model, const Settings& settings, uint64_t stage) {
  ShardBuffers b;
  if (settings.zero < 2) return b;
  const ModelStates states = StageModelStates(model, StatesSettingsOf(settings), stage);
  // FSDP (Zhao et al. 2023, §3.2): each layer's weights are all-gathered before it runs and the
  // next layer's are prefetched, so two unsharded blocks are in flight, beyond this rank's shard.
  if (settings.zero >= 3) b.gather = Times(states.largest_block, 2);
  // The unsharded gradients of the block in backward, until the reduce-scatter hands each rank its
  // share: those of its trainable weights in their own dtype (LoRA: the fp32 adapters' alone).
  b.reduce = states.largest_block_gradients;
  return b;
}

// Blocks [first, first + count) of distinct block `type` on a stage, recomputed in backward or not.
struct StageRun {
  int type = 0;
  uint64_t first = 0, count = 0;
  bool rerun = false;
};

class StepWalk {
 public:
  StepWalk(const MemoryModel& model, const Settings& s, const TrainMemory& ledger, bool list)
      : m_(model),
        s_(s),
        ledger_(ledger),
        list_(list),
        frozen_quantized_(FrozenQuantization(model, s).has_value()),
        adapter_(AdapterDtypes(s)),
        shards_(ShardBuffersOf(model, s, ledger.stage)) {
    // Each node's bytes as it runs outside a recomputed block, and inside one (--recompute full or
    // op only: B() reads bytes_[1] for no other).
    bytes_[0].reserve(m_.nodes.size());
    for (const StepNode& n : m_.nodes) bytes_[0].push_back(BytesOf(n, false));
    if (RerunsBlocks(s_.recompute)) {
      bytes_[1].reserve(m_.nodes.size());
      for (const StepNode& n : m_.nodes) bytes_[1].push_back(BytesOf(n, n.block_type >= 0));
    }
    const uint64_t last = s_.pp - 1;
    lo_ = StageFirstBlock(ledger_.stage, m_.n_layers, s_.pp);
    hi_ = StageFirstBlock(ledger_.stage + 1, m_.n_layers, s_.pp);
    first_stage_ = ledger_.stage == 0;
    last_stage_ = ledger_.stage == last;
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const StepNode& n = m_.nodes[i];
      if (n.kind == LayerKind::kLoss && OnStage(n)) loss_ = i;
      if (n.block_type >= 0) {
        const auto type = static_cast<size_t>(n.block_type);
        if (types_.size() <= type) types_.resize(type + 1);
        types_[type].push_back(i);
      }
    }
    shared_.assign(m_.nodes.size(), false);
    runs_ = ClipRuns();
    raw_grads_ = StageRawGradients();
  }

  StepTimeline Run() {
    saved_ = 0;
    casts_ = 0;
    // After a warm-up step the optimizer states exist; zero_grad(set_to_none=True) left no gradients,
    // except under gradient accumulation, whose last micro-batch (the fullest) starts with all of them.
    accumulating_ = s_.grad_accum() > 1;
    grads_ = accumulating_ ? raw_grads_ : 0;
    in_flight_ = InFlightSaved();
    Forward();
    Loss();
    Backward();
    Optimizer();
    out_.peak_at = NameOf(peak_where_);
    return std::move(out_);
  }

 private:
  bool OnStage(const StepNode& n) const {
    if (n.block_type >= 0) return true;
    return n.after_blocks ? last_stage_ : first_stage_;
  }
  bool InBlock(size_t i) const { return m_.nodes[i].block_type >= 0; }
  // Node i's output, or the gradient of it: a chunked loss never writes the whole logits.
  uint64_t Output(size_t i) const { return Chunked() && i + 1 == *loss_ ? 0 : bytes_[0][i].output; }
  // Node i's bytes, in a recomputed block or not.
  const NodeBytes& B(size_t i, bool rerun = false) const { return bytes_[rerun && RerunsBlocks(s_.recompute)][i]; }

  NodeBytes BytesOf(const StepNode& n, bool recomputed) const {
    NodeBytes b;
    const uint64_t mb = s_.micro_batch;
    const bool written = !(n.scores && s_.attention == Attention::kFlash);
    // This tensor-parallel rank's share of the output (and of the gradient of it).
    const uint64_t device_output = DeviceOutput(m_, n, s_.tp, s_.sp);
    if (written) b.output = tally::BytesOf(CeilDiv(Times(device_output, mb), s_.cp), OutputDtype(n, s_), kWhat);
    // A backward's scratch is shaped as its node's output and splits as it does.
    const uint64_t scratch =
        n.output == 0
            ? 0
            : static_cast<uint64_t>((static_cast<u128>(n.backward_scratch) * device_output + n.output - 1) / n.output);
    b.scratch = tally::BytesOf(CeilDiv(Times(scratch, mb), s_.cp), OutputDtype(n, s_), kWhat);
    for (uint32_t k = n.saved_begin; k < n.saved_end; ++k) {
      const SavedEntry& e = m_.saved[k];
      const uint64_t bytes = SavedBytes(e, s_, mb);
      if (e.op_kept) {
        // --recompute op keeps it from the forward to the block's rerun, which hands it to the
        // backward's saved tensors or frees it (BackwardBlock).
        if (recomputed && s_.recompute == Recompute::kOp && OpKeeps(e, s_.sp, s_.tp)) b.kept = Add(b.kept, bytes);
        continue;
      }
      b.full = Add(b.full, bytes);
      if (recomputed && e.checkpoint) {
        // The checkpoint keeps the block's input as the stream carries it; the recomputed norm's
        // fp32 copy comes back with the block's other tensors.
        b.checkpoint = CheckpointBytes(e, s_, mb);
      } else if (!recomputed && !(s_.recompute == Recompute::kSelective && e.selective)) {
        b.kept = Add(b.kept, bytes);
      }
    }
    if (s_.autocast()) {
      // Autocast casts each GEMM's weight, this rank's shard of it under --tp, to the half-precision
      // dtype; a quantized frozen base (QLoRA) is dequantized instead (the ledger's dequantization
      // buffer).
      uint64_t cast = 0;
      for (uint32_t k = n.params_begin; k < n.params_end && n.weight_elements > 0; ++k) {
        const ParamEntry& p = m_.params[k];
        if (p.shape.size() < 2 || (frozen_quantized_ && !p.trainable && p.block_matrix && !p.tied_copy)) continue;
        cast = Add(cast, DeviceElements(p, s_.tp));
      }
      b.casts = tally::BytesOf(cast, s_.dtypes.activation, kWhat);
    }
    for (uint32_t k = n.params_begin; k < n.params_end; ++k) {
      const ParamEntry& p = m_.params[k];
      if (!p.trainable || p.tied_copy) continue;
      const DType grad = adapter_ && p.component == Component::kLora ? adapter_->grad : s_.dtypes.grad;
      b.grads = Add(b.grads, tally::BytesOf(DeviceElements(p, s_.tp), grad, kWhat));
    }
    return b;
  }

  // The blocks' runs clipped to the stage, each cut where the stage's recomputed blocks end.
  std::vector<StageRun> ClipRuns() const {
    std::vector<StageRun> runs;
    const uint64_t rerun_end =
        RerunsBlocks(s_.recompute) ? StageRecomputeEnd(ledger_.stage, m_.n_layers, s_.pp, s_.recompute_layers) : lo_;
    for (const BlockRun& r : m_.runs) {
      for (const bool rerun : {true, false}) {
        const uint64_t from = rerun ? lo_ : rerun_end, to = rerun ? rerun_end : hi_;
        const uint64_t a = std::max(r.first, from), b = std::min(r.first + r.count, to);
        if (a < b) runs.push_back({r.type, a, b - a, rerun});
      }
    }
    return runs;
  }

  uint64_t StageRawGradients() const {
    uint64_t total = 0;
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      if (!InBlock(i) && OnStage(m_.nodes[i])) total = Add(total, B(i).grads);
    }
    for (const StageRun& r : runs_) {
      for (size_t i : types_[static_cast<size_t>(r.type)]) total = Add(total, Times(B(i).grads, r.count));
    }
    return total;
  }

  // 1F1B keeps min(pp - stage, micro-batches) micro-batches in flight on a stage (Narayanan et al.
  // 2021, §2.2): the others' saved tensors stay while this one runs.
  uint64_t InFlightSaved() const {
    const uint64_t in_flight = std::min(s_.pp - ledger_.stage, s_.grad_accum());
    if (in_flight <= 1) return 0;
    uint64_t kept = 0;
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      if (!InBlock(i) && OnStage(m_.nodes[i])) kept = Add(kept, Held(i));
    }
    for (const StageRun& r : runs_) {
      for (size_t i : types_[static_cast<size_t>(r.type)]) {
        const NodeBytes& b = B(i, r.rerun);
        const uint64_t casts = r.rerun ? 0 : b.casts;
        kept = Add(kept, Times(Add(Add(b.kept, b.checkpoint), casts), r.count));
      }
    }
    return Times(kept, in_flight - 1);
  }

  // The gradients live now, at the ledger's bytes (ZeRO partitions them): the raw bytes allocated
  // so far, scaled.
  uint64_t GradientsLive() const { return Scale(grads_, ledger_.gradients, raw_grads_); }

  std::string PathOf(size_t i, int64_t block) const {
    const std::string& path = m_.nodes[i].path;
    if (block < 0) return path;
    const size_t at = path.find("blocks.");
    if (at == std::string::npos) return path;
    const size_t digits = at + 7, end = path.find('.', digits);
    return path.substr(0, digits) + std::to_string(block) + (end == std::string::npos ? "" : path.substr(end));
  }

  // Where an event happens: a node of block `block` (-1 outside the blocks), or a named step
  // ("loss", "optimizer"). Its name is spelled only for a listed event and, once, for the peak.
  struct Where {
    const char* fixed = nullptr;
    size_t node = 0;
    int64_t block = -1;
  };
  std::string NameOf(const Where& w) const { return w.fixed != nullptr ? w.fixed : PathOf(w.node, w.block); }

  void Event(StepPhase phase, size_t node, int64_t block, uint64_t temporaries) {
    Event(phase, Where{.node = node, .block = block}, temporaries);
  }
  void Event(StepPhase phase, const char* name, uint64_t temporaries) {
    Event(phase, Where{.fixed = name}, temporaries);
  }
  void Event(StepPhase phase, const Where& where, uint64_t temporaries) {
    LiveBytes live;
    live[LiveCategory::kWeights] = Add(ledger_.weights, ledger_.master_weights);
    live[LiveCategory::kGradients] = GradientsLive();
    live[LiveCategory::kOptimizer] = ledger_.optimizer;
    live[LiveCategory::kActivations] = Add(Add(saved_, casts_), in_flight_);
    live[LiveCategory::kTemporaries] = Add(Add(temporaries, held_), Add(sharded_buffers_, pending_));
    const uint64_t total = live.Total();
    if (total > out_.peak || !peaked_) {
      peaked_ = true;
      out_.peak = total;
      out_.peak_phase = phase;
      out_.at_peak = live;
      peak_where_ = where;
    }
    if (!list_) return;
    if (!condensed_) {
      out_.events.push_back({phase, NameOf(where), live});
    } else if (!block_best_ || total > block_best_->live.Total()) {
      block_best_ = StepEvent{phase, NameOf(where), live};
    }
  }

  // Listing every event of a deep model would take memory with its depth: past the first and the
  // last kListedBlocks blocks of a run, a block lists only its event of the most bytes.
  static constexpr uint64_t kListedBlocks = 32;
  template <typename Walk>
  void Condense(uint64_t k, uint64_t count, const Walk& walk) {
    condensed_ = list_ && k >= kListedBlocks && k + kListedBlocks < count;
    walk();
    if (condensed_ && block_best_) out_.events.push_back(std::move(*block_best_));
    block_best_.reset();
    condensed_ = false;
  }

  // --- forward ---------------------------------------------------------------------------------

  // What node i leaves saved after the forward: its kept tensors, a checkpoint, its casts.
  uint64_t Held(size_t i) const { return Add(Add(B(i).kept, B(i).checkpoint), B(i).casts); }

  void ForwardNode(size_t i, int64_t block, bool rerun = false) {
    const NodeBytes& b = B(i, rerun);
    saved_ = Add(saved_, Add(b.kept, b.checkpoint));
    // Inside a recomputed block the forward runs without autograd: its casts die with it.
    if (!rerun) casts_ = Add(casts_, b.casts);
    Event(StepPhase::kForward, i, block, Output(i));
    // The model's output (the logits) stays referenced by the training loop (`outputs = model(...)`)
    // through backward and the optimizer step. (Hugging Face's Trainer drops it after the loss.)
    if (loss_ && i + 1 == *loss_ && !Chunked()) held_ = b.output;
  }

  // The change of the saved bytes and casts a whole block of `type` leaves in the forward.
  uint64_t BlockForwardDelta(size_t type, bool rerun) const {
    uint64_t delta = 0;
    for (size_t i : types_[type]) {
      delta = Add(delta, Add(B(i, rerun).kept, B(i, rerun).checkpoint));
      if (!rerun) delta = Add(delta, B(i).casts);
    }
    return delta;
  }

  void Forward() {
    sharded_buffers_ = shards_.gather;
    for (size_t i = 0; i < m_.nodes.size() && first_stage_; ++i) {
      if (InBlock(i) || m_.nodes[i].after_blocks) continue;
      ForwardNode(i, -1);
    }
    for (const StageRun& r : runs_) {
      const auto type = static_cast<size_t>(r.type);
      const uint64_t delta = BlockForwardDelta(type, r.rerun);
      for (uint64_t k = 0; k < r.count; ++k) {
        // Live bytes grow by the same delta each block: the first and the last bound the run.
        if (!list_ && k > 0 && k + 1 < r.count) {
          saved_ = Add(saved_, Times(delta, r.count - 2));
          k = r.count - 2;
          continue;
        }
        Condense(k, r.count, [&] {
          for (size_t i : types_[type]) ForwardNode(i, static_cast<int64_t>(r.first + k), r.rerun);
        });
      }
    }
    for (size_t i = 0; i < m_.nodes.size() && last_stage_; ++i) {
      if (!m_.nodes[i].after_blocks || (loss_ && i >= *loss_)) continue;
      ForwardNode(i, -1);
    }
  }

  // --- loss ------------------------------------------------------------------------------------

  bool Chunked() const { return s_.loss_kernel == LossKernel::kChunked && LmHead(); }
  bool LmHead() const { return loss_ && *loss_ > 0 && m_.nodes[*loss_ - 1].component == Component::kLmHead; }

  // The logits' elements on this device (vocabulary-parallel under --tp).
  uint64_t LogitElements() const {
    const StepNode& head = m_.nodes[*loss_ - 1];
    return CeilDiv(Times(head.output, s_.micro_batch), Times(s_.cp, LmHead() ? s_.tp : 1));
  }

  void Loss() {
    if (!loss_) return;
    const size_t i = *loss_;
    const uint64_t logits = LogitElements();
    const uint64_t fp32 = tally::BytesOf(logits, DType::kFp32, kWhat);
    if (Chunked()) {
      // A chunked kernel (Liger's fused linear cross-entropy) runs the head and the loss chunk by
      // chunk in the forward and writes the gradient of the hidden states as it goes. Chunks take
      // next_pow2(⌈tokens / ⌈V/h⌉⌉) tokens, so a chunk's logits are about as many as the hidden
      // states' elements (liger_kernel/ops/fused_linear_cross_entropy.py); the kernel turns them into
      // their gradient in place.
      const uint64_t vocab = std::max<uint64_t>(1, m_.vocab);
      const uint64_t tokens = std::max<uint64_t>(1, logits / vocab);
      const uint64_t width = std::max<uint64_t>(1, m_.nodes[i - 1].weight_elements / vocab);
      uint64_t chunk = 1;
      while (chunk < CeilDiv(tokens, CeilDiv(vocab, width))) chunk *= 2;
      const uint64_t hidden = tally::BytesOf(Times(tokens, width), s_.dtypes.activation, kWhat);
      const uint64_t working = tally::BytesOf(Times(std::min(chunk, tokens), vocab), s_.dtypes.activation, kWhat);
      Event(StepPhase::kLoss, "loss", Add(working, hidden));
      return;
    }
    if (s_.loss_kernel == LossKernel::kFused) {
      // One kernel reads the logits in their dtype and keeps an fp32 log-sum-exp a row (the loss
      // node's saved tensor); its backward writes the logits' gradient in their dtype (Inductor's
      // kernels for torchtitan's compiled loss; Transformer Engine's writes it over the logits).
      saved_ = Add(saved_, B(i).kept);
      Event(StepPhase::kLoss, "loss", 0);
      Event(StepPhase::kLoss, "loss.backward", tally::BytesOf(logits, s_.dtypes.activation, kWhat));
      saved_ = Sub(saved_, B(i).kept);
      return;
    }
    // Hugging Face's causal-LM loss upcasts the logits to fp32, then cross_entropy keeps the fp32
    // log-softmax for backward (the loss node's saved tensor); the upcast copy dies with the call.
    const uint64_t upcast = s_.dtypes.activation == DType::kFp32 || !LmHead() ? 0 : fp32;
    saved_ = Add(saved_, B(i).kept);
    Event(StepPhase::kLoss, "loss", upcast);
    // Backward of the loss: nll_loss writes the gradient of the log-probabilities, log_softmax's
    // backward the gradient of the logits, both fp32, while the log-probabilities are still held.
    const uint64_t log_probs_grad = LmHead() ? fp32 : B(i).full;
    Event(StepPhase::kLoss, "loss.backward", Add(log_probs_grad, log_probs_grad));
    saved_ = Sub(saved_, B(i).kept);
    if (upcast > 0) {
      // The upcast's backward casts the fp32 gradient down to the logits' dtype.
      const uint64_t down = tally::BytesOf(logits, s_.dtypes.activation, kWhat);
      Event(StepPhase::kLoss, "loss.backward", Add(fp32, down));
    }
  }

  // --- backward --------------------------------------------------------------------------------

  // The gradient of node i's input: the output of the node before it.
  uint64_t InputGradient(size_t i) const { return i == 0 || InBlock(i) != InBlock(i - 1) ? 0 : B(i - 1).output; }

  void BackwardNode(size_t i, int64_t block, uint64_t input_gradient, bool rerun = false) {
    const NodeBytes& b = B(i, rerun);
    const uint64_t grads = Scale(b.grads, ledger_.gradients, raw_grads_);
    uint64_t temporaries = Add(Add(Output(i), input_gradient), b.scratch);
    const StepNode& n = m_.nodes[i];
    bool allocates = !accumulating_;
    if (n.shares_weight_of) {
      // A tied weight's first gradient (the head's, in backward) waits in autograd's input buffer
      // until its other use (the embedding) adds to it; the sum then becomes .grad, or is added
      // into it under accumulation.
      const size_t owner = *n.shares_weight_of;
      const uint64_t owned = Scale(B(owner).grads, ledger_.gradients, raw_grads_);
      if (accumulating_) {
        pending_ = Add(pending_, owned);
      } else {
        grads_ = Add(grads_, B(owner).grads);
      }
      shared_[owner] = true;
    }
    if (shared_[i]) {
      // The embedding's dense gradient and its sum with the pending one: two more of the table.
      temporaries = Add(temporaries, Times(grads, 2));
      allocates = false;
    } else if (accumulating_) {
      // Each micro-batch's gradient is a new tensor, then added into .grad in place.
      temporaries = Add(temporaries, grads);
    }
    if (allocates) grads_ = Add(grads_, b.grads);
    Event(StepPhase::kBackward, i, block, temporaries);
    if (shared_[i] && accumulating_) pending_ = Sub(pending_, grads);
    saved_ = Sub(saved_, Add(b.full, b.checkpoint));
    casts_ = Sub(casts_, b.casts);
  }

  void BackwardBlock(size_t type, int64_t block, bool rerun) {
    const std::vector<size_t>& nodes = types_[type];
    // Recomputation first runs the block's forward again, with autograd: what the forward dropped
    // (and autocast's casts, in a block rerun whole) is back for the block's backward.
    // Over the whole block: a node's kept output under --recompute op may be another's saved input.
    uint64_t full = 0, kept = 0;
    for (size_t i : nodes) {
      full = Add(full, B(i, rerun).full);
      kept = Add(kept, B(i, rerun).kept);
      if (rerun) casts_ = Add(casts_, B(i).casts);
    }
    saved_ = Sub(Add(saved_, full), kept);
    // Inside a residual branch the skip path's gradient waits in autograd's input buffer until the
    // branch's gradient is added to it: one residual stream (the block's output) beside the branch.
    const uint64_t stream = B(nodes.back()).output;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const size_t i = *it;
      const uint64_t input = it + 1 == nodes.rend() ? 0 : B(*(it + 1)).output;
      BackwardNode(i, block, m_.nodes[i].kind == LayerKind::kResidualAdd ? input : Add(input, stream), rerun);
    }
  }

  void Backward() {
    sharded_buffers_ = Add(shards_.gather, shards_.reduce);
    for (size_t i = m_.nodes.size(); i-- > 0;) {
      if (!last_stage_ || !m_.nodes[i].after_blocks || (loss_ && i >= *loss_)) continue;
      BackwardNode(i, -1, InputGradient(i));
    }
    for (auto r = runs_.rbegin(); r != runs_.rend(); ++r) {
      const auto type = static_cast<size_t>(r->type);
      uint64_t grads = 0, freed = BlockForwardDelta(type, r->rerun);
      for (size_t i : types_[type]) grads = Add(grads, B(i).grads);
      for (uint64_t k = r->count; k-- > 0;) {
        if (!list_ && k + 1 < r->count && k > 0) {
          // The blocks between the last and the first: each frees `freed` and allocates `grads`.
          saved_ = Sub(saved_, Times(freed, r->count - 2));
          if (!accumulating_) grads_ = Add(grads_, Times(grads, r->count - 2));
          k = 1;
          continue;
        }
        Condense(k, r->count, [&] { BackwardBlock(type, static_cast<int64_t>(r->first + k), r->rerun); });
      }
    }
    for (size_t i = m_.nodes.size(); i-- > 0;) {
      if (!first_stage_ || InBlock(i) || m_.nodes[i].after_blocks) continue;
      BackwardNode(i, -1, InputGradient(i));
    }
    sharded_buffers_ = 0;
  }

  // --- optimizer -------------------------------------------------------------------------------

  void Optimizer() {
    saved_ = 0;
    casts_ = 0;
    in_flight_ = 0;
    grads_ = raw_grads_;
    // for-loop: the largest count · P(i) + P(i - 1), the previous parameter's temporary (AdamW's
    // denom) living until the next reassigns it (measured on torch 1.13, scripts/step_peaks_cpu).
    // A block's first parameter follows the previous block's last.
    uint64_t largest = 0, all = 0, previous = 0;
    std::vector<uint64_t> last_of_type;
    const uint64_t count = OptimizerTemporaries(s_.optimizer, s_.optimizer_impl);
    std::vector<uint64_t> blocks_of_type(types_.size(), 0);  // this stage's blocks of each type
    for (const StageRun& r : runs_) blocks_of_type[static_cast<size_t>(r.type)] += r.count;
    for (const ParamEntry& p : m_.params) {
      if (count == 0) break;  // nothing to size
      const uint64_t copies = p.block_type >= 0 ? blocks_of_type[static_cast<size_t>(p.block_type)]
                              : (p.after_blocks ? last_stage_ : first_stage_) ? 1
                                                                              : 0;
      if (!p.trainable || p.tied_copy || copies == 0) continue;
      const uint64_t n = DeviceElements(p, s_.tp);
      uint64_t before = previous;
      if (p.block_type >= 0) {
        const auto type = static_cast<size_t>(p.block_type);
        if (last_of_type.size() <= type) last_of_type.resize(type + 1, 0);
        if (copies > 1) before = std::max(before, last_of_type[type]);
      }
      largest = std::max(largest, Add(Times(n, count), count > 0 ? before : 0));
      previous = n;
      if (p.block_type >= 0) last_of_type[static_cast<size_t>(p.block_type)] = n;
      all = Add(all, Times(n, copies));
    }
    // ZeRO-1 and up: each rank updates its own partition.
    if (s_.zero >= 1) all = CeilDiv(all, GradientRanks(s_));
    // Under LoRA only the adapters train: in their own dtypes (AdapterDtypes), their temporaries too.
    const DType state = adapter_ ? adapter_->state : s_.dtypes.state;
    const DType dtype = state == DType::kInt8 ? DType::kFp32 : state;
    const uint64_t elements = s_.optimizer_impl == OptimizerImpl::kForLoop ? largest : Times(all, count);
    Event(StepPhase::kOptimizer, "optimizer", tally::BytesOf(elements, dtype, kWhat));
  }

  const MemoryModel& m_;
  const Settings& s_;
  const TrainMemory& ledger_;
  const bool list_;
  const bool frozen_quantized_;                  // frozen block matrices are stored quantized (QLoRA)
  const std::optional<Precisions> adapter_;      // LoRA's fp32 adapters' dtypes (AdapterDtypes)
  std::array<std::vector<NodeBytes>, 2> bytes_;  // [rerun]: outside a recomputed block, inside one
  std::vector<std::vector<size_t>> types_;
  std::vector<bool> shared_;    // a node whose weight another node shares: its gradient is a sum
  std::vector<StageRun> runs_;  // the blocks' runs, clipped to this stage
  std::optional<size_t> loss_;
  uint64_t lo_ = 0, hi_ = 0;
  bool first_stage_ = true, last_stage_ = true;
  bool accumulating_ = false;
  uint64_t raw_grads_ = 0;
  uint64_t saved_ = 0, casts_ = 0, grads_ = 0, held_ = 0, in_flight_ = 0, pending_ = 0;
  bool condensed_ = false;
  std::optional<StepEvent> block_best_;
  bool peaked_ = false;
  Where peak_where_;

  const ShardBuffers shards_;
  uint64_t sharded_buffers_ = 0;  // the shard buffers live in the phase running
  StepTimeline out_;
};

}  // namespace

uint64_t DeviceOverheads::Total() const {
  return CheckedAdd(CheckedAdd(cuda_context, cublas_workspace, kWhat), CheckedAdd(nccl, fragmentation, kWhat), kWhat);
}

StepTimeline TrainingTimeline(const MemoryModel& model, const Settings& settings, const TrainMemory& ledger,
                              bool events) {
  if (!model.training_refused.empty()) throw InputError(model.training_refused);
  return StepWalk(model, settings, ledger, events).Run();
}

DeviceOverheads Overheads(const Settings& s, uint64_t peak) {
  DeviceOverheads o;
  o.cuda_context = s.cuda_context.value_or(kDefaultCudaContext);
  o.cublas_workspace = s.cublas_workspace.value_or(kDefaultCublasWorkspace);
  o.nccl = s.gpus > 1 ? s.nccl_buffers.value_or(kDefaultNcclBuffers) : 0;
  o.fragmentation = static_cast<uint64_t>(static_cast<double>(peak) * s.fragmentation.value_or(kDefaultFragmentation));
  return o;
}

DeviceOverheads InferenceOverheads(const Settings& s, uint64_t total) {
  DeviceOverheads o = Overheads(s, total);
  // A server allocates its KV cache once, in one block: no fragmentation to speak of.
  if (s.gpu_memory_utilization) o.fragmentation = 0;
  return o;
}

StepMemory TrainingStepMemory(const MemoryModel& model, const Settings& settings, const TrainMemory& ledger,
                              bool events) {
  StepMemory m;
  m.step = TrainingTimeline(model, settings, ledger, events);
  const uint64_t peak = Add(m.step.peak, ledger.overhead);
  m.overheads = Overheads(settings, peak);
  m.device = Add(peak, m.overheads.Total());
  return m;
}

}  // namespace tally
