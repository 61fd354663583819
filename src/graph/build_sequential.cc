// Sequential models (MLPs, CNNs) as nodes, following PyTorch's layer semantics: Linear acts on the
// last dimension, Conv2d and pooling on [channels, height, width], Flatten keeps the batch.
#include <algorithm>
#include <map>
#include <numeric>

#include "graph/build_graph.h"
#include "graph/node_costs.h"

namespace tally {
namespace {

std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Output size of a sliding window (PyTorch's conv_output_size and pooling_output_shape):
// floor((in + 2p - d(k-1) - 1) / s) + 1, rounded up instead under ceil_mode, where a last window
// starting in the right padding is dropped.
uint64_t WindowOut(const SeqLayerSpec& l, uint64_t in, uint64_t kernel, uint64_t pad, uint64_t stride,
                   uint64_t dilation, const char* op) {
  uint64_t padded = CheckedAdd(in, CheckedMul(2, pad, "padding"), "padded input");
  uint64_t span = CheckedAdd(CheckedMul(dilation, kernel - 1, "dilated kernel"), 1, "dilated kernel");
  if (span > padded) {
    throw InputError(l.loc, std::string(op) + " kernel " + std::to_string(span) + " is larger than its padded input " +
                                std::to_string(padded));
  }
  if (l.ceil_mode && l.op == SeqOp::kPool) {
    uint64_t out = (padded - span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= in + pad) --out;
    return out;
  }
  return (padded - span) / stride + 1;
}

// BatchNorm in training, as DeepSpeed's flops profiler counts it: 5 FLOPs per element with affine
// weights (deepspeed/profiling/flops_profiler/profiler.py, _batch_norm_flops_compute).
constexpr uint64_t kFlopsPerBatchNormElement = 5;

class SequentialBuilder {
 public:
  SequentialBuilder(const SequentialSpec& spec, const GraphSettings& settings)
      : spec_(spec), settings_(settings), b_(settings.batch), shape_(spec.input) {}

  std::vector<Layer> Build() {
    for (size_t i = 0; i < spec_.layers.size(); ++i) AddLayer(spec_.layers[i], "layers." + std::to_string(i));
    const bool classifier = shape_.size() == 1 && shape_[0] >= 2;  // a vector of classes, not a regressor
    if (spec_.loss == LossKind::kCrossEntropy || (spec_.loss == LossKind::kAuto && classifier)) AddLoss();
    return std::move(layers_);
  }

 private:
  uint64_t Elements(const std::string& path) const {
    uint64_t n = b_;
    for (uint64_t d : shape_) n = Count(path, {n, d});
    return n;
  }

  void RequireImage(const SeqLayerSpec& l, const char* op) const {
    if (shape_.size() != 3) {
      throw InputError(l.loc, std::string(op) +
                                  " needs a [channels, height, width] input, but the previous "
                                  "layer gives " +
                                  ShapeText(shape_));
    }
  }

  void CheckExpectedIn(const SeqLayerSpec& l, uint64_t actual, const char* op) const {
    if (l.expected_in != 0 && l.expected_in != actual) {
      throw InputError(l.expected_in_loc, std::string(op) + " 'in' is " + std::to_string(l.expected_in) +
                                              " but its input gives " + std::to_string(actual) + " (input shape " +
                                              ShapeText(shape_) + ")");
    }
  }

  void AddLayer(const SeqLayerSpec& l, const std::string& path) {
    if (l.op == SeqOp::kParallel) return AddParallel(l, path);
    if (l.op == SeqOp::kPatchEmbed) return AddPatchEmbed(l, path);
    if (l.op == SeqOp::kEncoder) return AddEncoder(l, path);
    Layer node;
    std::string out_id = path;  // the id of the tensor this layer outputs
    switch (l.op) {
      case SeqOp::kParallel:
      case SeqOp::kPatchEmbed:
      case SeqOp::kEncoder:
        break;
      case SeqOp::kClassToken: {
        if (shape_.size() != 2) {
          throw InputError(
              l.loc, "class_token needs a [tokens, width] input, but the previous layer gives " + ShapeText(shape_));
        }
        // x[:, 0] is a view: whoever saves it keeps the whole sequence's storage alive.
        storage_elements_[cur_] = Elements(path);
        node.path = path;
        node.kind = LayerKind::kFlatten;
        shape_ = {shape_[1]};
        out_id = cur_;
        break;
      }
      case SeqOp::kLinear:
        node = Linear(l, path);
        break;
      case SeqOp::kConv2d:
        node = Conv(l, path);
        break;
      case SeqOp::kPool:
      case SeqOp::kAdaptivePool:
        node = Pool(l, path);
        break;
      case SeqOp::kFlatten:
        node.path = path;
        node.kind = LayerKind::kFlatten;
        shape_ = {std::accumulate(shape_.begin(), shape_.end(), uint64_t{1}, [&](uint64_t a, uint64_t d) {
          return Count(path, {a, d});
        })};
        out_id = cur_;  // a view: the same storage as its input
        break;
      case SeqOp::kActivation: {
        node =
            MakeElementwise(path, LayerKind::kActivation, Component::kActivation, Elements(path), kFlopsPerElementwise);
        // PyTorch's backward of relu, tanh and sigmoid uses their output; gelu, silu, hardswish and
        // hardsigmoid their input (tools/autograd/derivatives.yaml). ReLU6 is hardtanh, whose backward
        // reads its input: torchvision runs it in place, and hardtanh_ then saves a copy of the input
        // (PyTorch 1.13, seen with saved-tensor hooks), a tensor of its own.
        const ActivationKind a = l.activation;
        const bool saves_output =
            a == ActivationKind::kRelu || a == ActivationKind::kTanh || a == ActivationKind::kSigmoid;
        const std::string id = a == ActivationKind::kRelu6 ? path + ":input" : saves_output ? path : cur_;
        node.saved.push_back({.id = id, .elements = Elements(path)});
        break;
      }
      case SeqOp::kLayerNorm:
        node = MakeElementwise(path, LayerKind::kNorm, Component::kNorm, Elements(path), kFlopsPerLayerNormElement);
        AddParamTensor(node, {shape_.back()}, false);  // weight
        AddParamTensor(node, {shape_.back()}, false);  // bias
        node.saved.push_back({cur_, Elements(path)});
        // native_layer_norm also saves the fp32 mean and reciprocal deviation of every row.
        node.saved.push_back({path + ":mean", Elements(path) / shape_.back(), SavedClass::kFp32});
        node.saved.push_back({path + ":rstd", Elements(path) / shape_.back(), SavedClass::kFp32});
        break;
      case SeqOp::kBatchNorm: {
        // Training: native_batch_norm saves its input (and per-channel save_mean and save_invstd,
        // 8 bytes a channel whatever the batch: left out, see docs/memory.md). Eval folds into the
        // previous layer and saves nothing. The running mean and variance are buffers, not parameters.
        const uint64_t channels = shape_.front();
        node = MakeElementwise(path, LayerKind::kNorm, Component::kNorm, Elements(path), kFlopsPerBatchNormElement);
        AddParamTensor(node, {channels}, false);  // weight
        AddParamTensor(node, {channels}, false);  // bias
        node.saved.push_back({cur_, Elements(path)});
        break;
      }
      case SeqOp::kDropout: {
        node = MakeElementwise(path, LayerKind::kDropout, Component::kOther, Elements(path), kFlopsPerElementwise);
        const bool cpu = settings_.dropout_mask == DropoutMask::kCpu;
        node.saved.push_back({path + ":mask", Elements(path), cpu ? SavedClass::kActivation : SavedClass::kMask});
        break;
      }
    }
    if (node.params > 0) input_needs_grad_ = true;
    node.shape = {b_};
    node.shape.insert(node.shape.end(), shape_.begin(), shape_.end());
    cur_ = out_id;
    layers_.push_back(std::move(node));
  }

  // Runs every branch on the same input, then joins their outputs: add (a residual block), concat
  // along the channels, or an elementwise multiply that broadcasts size-1 dimensions.
  void AddParallel(const SeqLayerSpec& l, const std::string& path) {
    const std::vector<uint64_t> in_shape = shape_;
    const std::string in_id = cur_;
    const bool in_grad = input_needs_grad_;
    std::vector<std::vector<uint64_t>> shapes;
    std::vector<std::string> ids;
    bool any_grad = false;
    for (size_t i = 0; i < l.branches.size(); ++i) {
      shape_ = in_shape;
      cur_ = in_id;
      input_needs_grad_ = in_grad;
      const std::string prefix = path + ".branch" + std::to_string(i) + ".";
      for (size_t j = 0; j < l.branches[i].size(); ++j) AddLayer(l.branches[i][j], prefix + std::to_string(j));
      shapes.push_back(shape_);
      ids.push_back(cur_);
      any_grad = any_grad || input_needs_grad_;
    }
    input_needs_grad_ = any_grad;
    std::vector<uint64_t> out = shapes[0];
    for (size_t i = 1; i < shapes.size(); ++i) {
      const std::vector<uint64_t>& s = shapes[i];
      bool fits = s.size() == out.size();
      for (size_t d = 0; fits && d < s.size(); ++d) {
        if (l.join == JoinKind::kConcat && d == 0) continue;
        if (l.join == JoinKind::kMul && (s[d] == 1 || out[d] == 1)) continue;
        fits = s[d] == out[d];
      }
      if (!fits) {
        static const char* kJoins[] = {"add", "concat", "mul"};
        throw InputError(l.loc, std::string("cannot ") + kJoins[static_cast<int>(l.join)] + " branch 0's output " +
                                    ShapeText(shapes[0]) + " and branch " + std::to_string(i) + "'s " + ShapeText(s));
      }
      for (size_t d = 0; d < s.size(); ++d) {
        out[d] = l.join == JoinKind::kConcat && d == 0 ? CheckedAdd(out[d], s[d], "concatenated channels")
                                                       : std::max(out[d], s[d]);
      }
    }
    shape_ = out;
    const uint64_t joins = l.branches.size() - 1;
    Layer node;
    switch (l.join) {
      case JoinKind::kAdd:  // one FLOP per element per add; add saves nothing
        node = MakeElementwise(path, LayerKind::kResidualAdd, Component::kOther, Count(path, {Elements(path), joins}),
                               kFlopsPerElementwise);
        break;
      case JoinKind::kConcat:  // a copy: no FLOPs, and its backward only slices
        node = MakeElementwise(path, LayerKind::kConcat, Component::kOther, 0, 0);
        break;
      case JoinKind::kMul:  // each operand is saved for the other's gradient
        node = MakeElementwise(path, LayerKind::kMultiply, Component::kOther, Count(path, {Elements(path), joins}),
                               kFlopsPerElementwise);
        for (size_t i = 0; i < ids.size(); ++i) {
          uint64_t n = b_;
          for (uint64_t d : shapes[i]) n = Count(path, {n, d});
          node.saved.push_back({ids[i], n});
        }
        break;
    }
    node.shape = {b_};
    node.shape.insert(node.shape.end(), shape_.begin(), shape_.end());
    cur_ = path;
    layers_.push_back(std::move(node));
  }

  // Appends a node of the current sample shape `shape`, whose output becomes the current tensor.
  void Push(Layer node, std::vector<uint64_t> shape) {
    shape_ = std::move(shape);
    node.shape = {b_};
    node.shape.insert(node.shape.end(), shape_.begin(), shape_.end());
    if (node.params > 0) input_needs_grad_ = true;
    cur_ = node.path;
    layers_.push_back(std::move(node));
  }

  // ViT's patch embedding (torchvision's VisionTransformer._process_input): a size x size conv with
  // stride size to `dim` channels, the patches as tokens, a learned class token in front and learned
  // positions added. The cat and the add save nothing.
  void AddPatchEmbed(const SeqLayerSpec& l, const std::string& path) {
    RequireImage(l, "patch_embed");
    const uint64_t c = shape_[0], p = l.kernel_h, d = l.out;
    if (l.kernel_h != l.kernel_w || shape_[1] % p != 0 || shape_[2] % p != 0) {
      throw InputError(l.loc, "patch_embed: the " + std::to_string(shape_[1]) + "x" + std::to_string(shape_[2]) +
                                  " input does not divide into square patches of " + std::to_string(p));
    }
    const uint64_t patches = Count(path, {shape_[1] / p, shape_[2] / p});
    Layer proj;
    proj.path = path + ".proj";
    proj.kind = LayerKind::kConv2d;
    proj.component = Component::kConv2d;
    AddParamTensor(proj, {d, c, p, p}, false);
    AddParamTensor(proj, {d}, false);
    proj.gemms.push_back(
        {.m = Count(path, {b_, patches}), .n = d, .k = Count(path, {c, p, p}), .grad_a = input_needs_grad_});
    proj.non_matmul_flops = Count(path, {b_, patches, d});
    proj.saved.push_back({cur_, Elements(path)});
    Push(std::move(proj), {patches, d});
    const uint64_t tokens = CheckedAdd(patches, 1, "tokens");
    Layer pos = MakeElementwise(path + ".tokens", LayerKind::kEmbedding, Component::kEmbedding,
                                Count(path, {b_, tokens, d}), kFlopsPerElementwise);
    AddParamTensor(pos, {d}, false);          // class token
    AddParamTensor(pos, {tokens, d}, false);  // positions
    Push(std::move(pos), {tokens, d});
  }

  // A pre-norm encoder layer as torchvision's EncoderBlock runs it in PyTorch 1.13, eager:
  // x + attn(ln_1(x)), then + mlp(ln_2(.)), attention by nn.MultiheadAttention (batch_first); post-norm
  // as nn.TransformerEncoderLayer(norm_first=False): ln_1(x + attn(x)), then ln_2(. + mlp(.)). What
  // autograd saves there, seen with saved-tensor hooks: each LayerNorm its input and fp32 mean and
  // rstd; the packed q/k/v projection a copy of its (transposed) input; QK^T the scaled q and a
  // contiguous copy of k; softmax its output, which AV saves too, with a copy of v; the output
  // projection a contiguous copy of the heads' context; the MLP its input, GELU's input and output.
  void AddEncoder(const SeqLayerSpec& l, const std::string& path) {
    if (shape_.size() != 2) {
      throw InputError(l.loc,
                       "encoder needs a [tokens, width] input, but the previous layer gives " + ShapeText(shape_));
    }
    const uint64_t s = shape_[0], d = shape_[1], h = l.heads, f = l.mlp_dim;
    if (d % h != 0) {
      throw InputError(l.loc, "encoder: " + std::to_string(h) + " heads do not divide the width " + std::to_string(d));
    }
    const uint64_t rows = Count(path, {b_, s}), hd = d / h, bh = Count(path, {b_, h});
    const uint64_t scores = Count(path, {bh, s, s});
    auto norm = [&](const std::string& name) {
      Layer n = MakeElementwise(path + "." + name, LayerKind::kNorm, Component::kNorm, Count(path, {rows, d}),
                                kFlopsPerLayerNormElement);
      AddParamTensor(n, {d}, false);
      AddParamTensor(n, {d}, false);
      n.saved.push_back({cur_, Count(path, {rows, d})});
      n.saved.push_back({n.path + ":mean", rows, SavedClass::kFp32});
      n.saved.push_back({n.path + ":rstd", rows, SavedClass::kFp32});
      Push(std::move(n), {s, d});
    };
    auto add = [&](const std::string& name) {  // x + the branch: an add saves nothing
      Push(MakeElementwise(path + "." + name, LayerKind::kResidualAdd, Component::kOther, Count(path, {rows, d}),
                           kFlopsPerElementwise),
           {s, d});
    };
    if (!l.post_norm) norm("ln_1");
    const std::string attn = path + ".attn";
    Push(MakeLinear(attn + ".qkv", Component::kAttention, rows, d, 3 * d, true, attn + ".qkv:input", true), {s, 3 * d});
    Layer qk;
    qk.path = attn + ".scores";
    qk.kind = LayerKind::kAttentionScores;
    qk.component = Component::kAttentionCore;
    qk.tp_split = true;  // the attention core splits by heads, as the step's GEMMs price it
    qk.gemms.push_back({.m = s, .n = s, .k = hd, .count = bh});
    qk.non_matmul_flops = Count(path, {rows, d});  // q scaled by 1/sqrt(head_dim)
    qk.saved.push_back({attn + ":q", Count(path, {rows, d})});
    qk.saved.push_back({attn + ":k", Count(path, {rows, d})});
    Push(std::move(qk), {h, s, s});
    Layer sm = MakeElementwise(attn + ".softmax", LayerKind::kSoftmax, Component::kAttentionCore, scores,
                               kFlopsPerElementwise);
    sm.tp_split = true;
    sm.saved.push_back({sm.path, scores});
    Push(std::move(sm), {h, s, s});
    Layer av;
    av.path = attn + ".context";
    av.kind = LayerKind::kAttentionContext;
    av.component = Component::kAttentionCore;
    av.tp_split = true;
    av.gemms.push_back({.m = s, .n = hd, .k = s, .count = bh});
    av.saved.push_back({cur_, scores});
    av.saved.push_back({attn + ":v", Count(path, {rows, d})});
    Push(std::move(av), {s, d});
    Push(MakeLinear(attn + ".out", Component::kAttention, rows, d, d, true, attn + ".out:input", true), {s, d});
    add("add_1");
    norm(l.post_norm ? "ln_1" : "ln_2");
    Push(MakeLinear(path + ".mlp.fc1", Component::kMlp, rows, d, f, true, cur_, true), {s, f});
    Layer gelu = MakeElementwise(path + ".mlp.gelu", LayerKind::kActivation, Component::kActivation,
                                 Count(path, {rows, f}), kFlopsPerElementwise);
    gelu.saved.push_back({cur_, Count(path, {rows, f})});
    Push(std::move(gelu), {s, f});
    Push(MakeLinear(path + ".mlp.fc2", Component::kMlp, rows, f, d, true, cur_, true), {s, d});
    add("add_2");
    if (l.post_norm) norm("ln_2");
  }

  // Cross-entropy over the classes (log_softmax, then nll_loss): it keeps the fp32 log-probabilities
  // for backward; the integer targets are data, like the input.
  void AddLoss() {
    if (shape_.size() != 1) {
      throw InputError(spec_.loss_loc,
                       "'loss: cross_entropy' needs one vector of classes per sample, but the "
                       "model's output is " +
                           ShapeText(shape_));
    }
    const uint64_t logits = Elements("loss");
    Layer loss = MakeElementwise("loss", LayerKind::kLoss, Component::kLoss, logits, kFlopsPerElementwise);
    loss.op_elements = logits;
    loss.saved.push_back({.id = "loss:log_probs", .elements = logits, .cls = SavedClass::kFp32});
    loss.shape = {b_};
    layers_.push_back(std::move(loss));
  }

  Layer Linear(const SeqLayerSpec& l, const std::string& path) {
    uint64_t in = shape_.back();
    CheckExpectedIn(l, in, "linear");
    uint64_t rows = Elements(path) / in;
    Layer node = MakeLinear(path, Component::kLinear, rows, in, l.out, l.bias, cur_, input_needs_grad_);
    if (auto it = storage_elements_.find(cur_); it != storage_elements_.end()) node.saved[0].elements = it->second;
    shape_.back() = l.out;
    return node;
  }

  // Conv2d as an implicit GEMM per group: (b·Ho·Wo) x (Cin/g·kh·kw) times (Cin/g·kh·kw) x (Cout/g).
  Layer Conv(const SeqLayerSpec& l, const std::string& path) {
    RequireImage(l, "conv2d");
    const uint64_t c_in = shape_[0];
    CheckExpectedIn(l, c_in, "conv2d");
    if (c_in % l.groups != 0 || l.out % l.groups != 0) {
      throw InputError(l.loc, "conv2d groups (" + std::to_string(l.groups) + ") must divide both the " +
                                  std::to_string(c_in) + " input and " + std::to_string(l.out) + " output channels");
    }
    const uint64_t ho = WindowOut(l, shape_[1], l.kernel_h, l.pad_h, l.stride_h, l.dilation_h, "conv2d");
    const uint64_t wo = WindowOut(l, shape_[2], l.kernel_w, l.pad_w, l.stride_w, l.dilation_w, "conv2d");
    const uint64_t patch = Count(path, {c_in / l.groups, l.kernel_h, l.kernel_w});
    Layer node;
    node.path = path;
    node.kind = LayerKind::kConv2d;
    node.component = Component::kConv2d;
    AddParamTensor(node, {l.out, c_in / l.groups, l.kernel_h, l.kernel_w}, false);
    if (l.bias) AddParamTensor(node, {l.out}, false);
    node.gemms.push_back({.m = Count(path, {b_, ho, wo}),
                          .n = l.out / l.groups,
                          .k = patch,
                          .count = l.groups,
                          .grad_a = input_needs_grad_});
    node.non_matmul_flops = l.bias ? Count(path, {b_, l.out, ho, wo}) : 0;
    node.saved.push_back({cur_, Elements(path)});
    shape_ = {l.out, ho, wo};
    return node;
  }

  // What pooling saves for backward (tools/autograd/derivatives.yaml, checked with saved-tensor hooks
  // in PyTorch 1.13): max pooling its input and the int64 argmax indices; average pooling, adaptive
  // too (even to 1x1), its input.
  Layer Pool(const SeqLayerSpec& l, const std::string& path) {
    RequireImage(l, "pool");
    const bool adaptive = l.op == SeqOp::kAdaptivePool;
    // PyTorch's pooling_shape_check: "pad should be at most half of effective kernel size".
    for (const auto& [pad, kernel] : {std::pair{l.pad_h, l.kernel_h}, std::pair{l.pad_w, l.kernel_w}}) {
      if (!adaptive && pad > kernel / 2) {
        throw InputError(l.loc, "pool padding " + std::to_string(pad) + " is more than half its kernel " +
                                    std::to_string(kernel) + " (PyTorch allows at most kernel / 2, rounded down)");
      }
    }
    const uint64_t in_elements = Elements(path);
    const uint64_t ho =
        adaptive ? l.out_h : WindowOut(l, shape_[1], l.kernel_h, l.pad_h, l.stride_h, l.dilation_h, "pool");
    const uint64_t wo =
        adaptive ? l.out_w : WindowOut(l, shape_[2], l.kernel_w, l.pad_w, l.stride_w, l.dilation_w, "pool");
    // DeepSpeed's profiler counts pooling as one FLOP per input element.
    Layer node = MakeElementwise(path, LayerKind::kPool, Component::kPool, in_elements, kFlopsPerElementwise);
    node.saved.push_back({cur_, in_elements});
    shape_ = {shape_[0], ho, wo};
    if (l.pool == PoolKind::kMax) node.saved.push_back({path + ":indices", Elements(path), SavedClass::kIndex});
    return node;
  }

  const SequentialSpec& spec_;
  const GraphSettings& settings_;
  const uint64_t b_;
  std::vector<uint64_t> shape_;    // one sample's shape, batch excluded
  bool input_needs_grad_ = false;  // raw input data needs no gradient
  std::string cur_ = std::string(kInputTensor);
  std::map<std::string, uint64_t> storage_elements_;  // views' whole storage: x[:, 0] of a sequence
  std::vector<Layer> layers_;
};

}  // namespace

LayerGraph BuildSequentialGraph(const ModelSpec& spec, const GraphSettings& settings) {
  if (settings.seq) {
    throw InputError("--seq: '" + spec.name + "' is a sequential model and has no sequence length");
  }
  if (settings.target_seq) {
    throw InputError("--target-seq: '" + spec.name + "' is a sequential model and has no decoder stack");
  }
  if (settings.images) throw InputError("--images: '" + spec.name + "' is a sequential model and has no vision tower");
  LayerGraph g;
  g.model_name = spec.name;
  g.family = Family::kSequential;
  g.batch = settings.batch;
  SequentialSpec seq = spec.sequential;
  if (!settings.input.empty()) seq.input = settings.input;  // --input
  g.layers = SequentialBuilder(seq, settings).Build();
  g.n_layers = g.layers.size();
  g.blocks_begin = g.blocks_end = g.layers.size();  // no repeated blocks: every node stands alone
  return g;
}

}  // namespace tally
