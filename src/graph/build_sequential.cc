// Sequential models (MLPs, CNNs) as nodes, following PyTorch's layer semantics: Linear acts on the
// last dimension, Conv2d and pooling on [channels, height, width], Flatten keeps the batch.
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

// Output size of a sliding window (PyTorch Conv2d/MaxPool2d docs): floor((in + 2p - k) / s) + 1.
uint64_t WindowOut(const SeqLayerSpec& l, uint64_t in, uint64_t kernel, uint64_t pad, uint64_t stride,
                   const char* op) {
  uint64_t padded = CheckedAdd(in, CheckedMul(2, pad, "padding"), "padded input");
  if (kernel > padded) {
    throw InputError(l.loc, std::string(op) + " kernel " + std::to_string(kernel) +
                                " is larger than its padded input " + std::to_string(padded));
  }
  return (padded - kernel) / stride + 1;
}

class SequentialBuilder {
 public:
  SequentialBuilder(const SequentialSpec& spec, uint64_t batch) : spec_(spec), b_(batch), shape_(spec.input) {}

  std::vector<Layer> Build() {
    for (size_t i = 0; i < spec_.layers.size(); ++i) AddLayer(spec_.layers[i], "layers." + std::to_string(i));
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
      throw InputError(l.loc, std::string(op) + " needs a [channels, height, width] input, but the previous "
                              "layer gives " + ShapeText(shape_));
    }
  }

  void CheckExpectedIn(const SeqLayerSpec& l, uint64_t actual, const char* op) const {
    if (l.expected_in != 0 && l.expected_in != actual) {
      throw InputError(l.expected_in_loc, std::string(op) + " 'in' is " + std::to_string(l.expected_in) +
                                              " but its input gives " + std::to_string(actual) +
                                              " (input shape " + ShapeText(shape_) + ")");
    }
  }

  void AddLayer(const SeqLayerSpec& l, const std::string& path) {
    Layer node;
    switch (l.op) {
      case SeqOp::kLinear: node = Linear(l, path); break;
      case SeqOp::kConv2d: node = Conv(l, path); break;
      case SeqOp::kPool:
      case SeqOp::kAdaptivePool: node = Pool(l, path); break;
      case SeqOp::kFlatten:
        node.path = path;
        node.kind = LayerKind::kFlatten;
        shape_ = {std::accumulate(shape_.begin(), shape_.end(), uint64_t{1},
                                  [&](uint64_t a, uint64_t d) { return Count(path, {a, d}); })};
        break;
      case SeqOp::kActivation: {
        node = MakeElementwise(path, LayerKind::kActivation, Component::kActivation, Elements(path),
                               kFlopsPerElementwise);
        // PyTorch's backward of relu, tanh and sigmoid uses their output; gelu and silu their input.
        const bool saves_output = l.activation == ActivationKind::kRelu || l.activation == ActivationKind::kTanh ||
                                  l.activation == ActivationKind::kSigmoid;
        node.saved.push_back({.id = saves_output ? path : cur_, .elements = Elements(path)});
        break;
      }
      case SeqOp::kLayerNorm:
        node = MakeElementwise(path, LayerKind::kNorm, Component::kNorm, Elements(path), kFlopsPerLayerNormElement);
        AddParamTensor(node, {shape_.back()}, false);  // weight
        AddParamTensor(node, {shape_.back()}, false);  // bias
        node.saved.push_back({cur_, Elements(path)});
        break;
      case SeqOp::kDropout:
        node = MakeElementwise(path, LayerKind::kDropout, Component::kOther, Elements(path), kFlopsPerElementwise);
        node.saved.push_back({path + ":mask", Elements(path), SavedClass::kMask});
        break;
    }
    if (node.params > 0) input_needs_grad_ = true;
    node.shape = {b_};
    node.shape.insert(node.shape.end(), shape_.begin(), shape_.end());
    cur_ = node.path;
    layers_.push_back(std::move(node));
  }

  Layer Linear(const SeqLayerSpec& l, const std::string& path) {
    uint64_t in = shape_.back();
    CheckExpectedIn(l, in, "linear");
    uint64_t rows = Elements(path) / in;
    Layer node = MakeLinear(path, Component::kLinear, rows, in, l.out, l.bias, cur_, input_needs_grad_);
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
    const uint64_t ho = WindowOut(l, shape_[1], l.kernel_h, l.pad_h, l.stride_h, "conv2d");
    const uint64_t wo = WindowOut(l, shape_[2], l.kernel_w, l.pad_w, l.stride_w, "conv2d");
    const uint64_t patch = Count(path, {c_in / l.groups, l.kernel_h, l.kernel_w});
    Layer node;
    node.path = path;
    node.kind = LayerKind::kConv2d;
    node.component = Component::kConv2d;
    AddParamTensor(node, {l.out, c_in / l.groups, l.kernel_h, l.kernel_w}, false);
    if (l.bias) AddParamTensor(node, {l.out}, false);
    node.gemms.push_back({.m = Count(path, {b_, ho, wo}), .n = l.out / l.groups, .k = patch, .count = l.groups,
                          .grad_a = input_needs_grad_});
    node.non_matmul_flops = l.bias ? Count(path, {b_, l.out, ho, wo}) : 0;
    node.saved.push_back({cur_, Elements(path)});
    shape_ = {l.out, ho, wo};
    return node;
  }

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
    const uint64_t ho = adaptive ? l.out_h : WindowOut(l, shape_[1], l.kernel_h, l.pad_h, l.stride_h, "pool");
    const uint64_t wo = adaptive ? l.out_w : WindowOut(l, shape_[2], l.kernel_w, l.pad_w, l.stride_w, "pool");
    // DeepSpeed's profiler counts pooling as one FLOP per input element.
    Layer node = MakeElementwise(path, LayerKind::kPool, Component::kPool, in_elements, kFlopsPerElementwise);
    shape_ = {shape_[0], ho, wo};
    if (l.pool == PoolKind::kMax) node.saved.push_back({path + ":indices", Elements(path), SavedClass::kIndex});
    return node;
  }

  const SequentialSpec& spec_;
  const uint64_t b_;
  std::vector<uint64_t> shape_;  // one sample's shape, batch excluded
  bool input_needs_grad_ = false;  // raw input data needs no gradient
  std::string cur_ = std::string(kInputTensor);
  std::vector<Layer> layers_;
};

}  // namespace

LayerGraph BuildSequentialGraph(const ModelSpec& spec, const GraphSettings& settings) {
  if (settings.seq) {
    throw InputError("--seq: '" + spec.name + "' is a sequential model and has no sequence length");
  }
  LayerGraph g;
  g.model_name = spec.name;
  g.family = Family::kSequential;
  g.batch = settings.batch;
  g.layers = SequentialBuilder(spec.sequential, settings.batch).Build();
  g.n_layers = g.layers.size();
  g.blocks_begin = g.blocks_end = g.layers.size();  // no repeated blocks: every node stands alone
  return g;
}

}  // namespace tally
