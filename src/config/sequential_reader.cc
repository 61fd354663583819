#include "config/sequential_reader.h"

#include "config/names.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// Bounds `repeat` expansion so a typo like `times: 1000000000` is an error, not a hang.
constexpr size_t kMaxLayers = 100000;

// Every layer a sequential config can name: the activations are config/names.h's.
const std::vector<std::string> kLayerNames = [] {
  std::vector<std::string> names = {"linear", "conv2d", "pool", "adaptive_pool", "flatten"};
  for (const std::string& a : NameList<ActivationKind>()) names.push_back(a);
  for (const char* n : {"layernorm", "batchnorm", "dropout", "repeat", "residual", "parallel", "patch_embed", "encoder",
                        "class_token"}) {
    names.emplace_back(n);
  }
  return names;
}();

// Reads a layer's option map; `{}`, null or an absent value are an empty map.
ConfigMap Options(const YAML::Node& value, const std::string& file, const std::string& layer,
                  std::vector<std::string> allowed) {
  YAML::Node node = value;
  if (!node || node.IsNull()) node = YAML::Node(YAML::NodeType::Map);
  return ConfigMap(node, file, layer, std::move(allowed));
}

void ReadLayers(const YAML::Node& list, const std::string& file, std::vector<SeqLayerSpec>& out,
                bool allow_empty = false);

uint64_t Nodes(const std::vector<SeqLayerSpec>& layers) {
  uint64_t n = 0;
  for (const SeqLayerSpec& l : layers) n += l.nodes;  // each list is bounded by kMaxLayers: no overflow
  return n;
}

// An optional `in` states the input width the author expects; the graph builder checks it.
void ReadExpectedIn(const ConfigMap& o, SeqLayerSpec& l) {
  if (!o.Has("in")) return;
  l.expected_in = o.PositiveInt("in");
  l.expected_in_loc = o.Loc("in");
}

SeqLayerSpec ReadConv(const ConfigMap& o) {
  SeqLayerSpec l;
  l.op = SeqOp::kConv2d;
  l.out = o.PositiveInt("out");
  ReadExpectedIn(o, l);
  o.Get("kernel");  // required: throws "missing required key" when absent
  std::tie(l.kernel_h, l.kernel_w) = o.IntPair("kernel", 0, 1);
  std::tie(l.stride_h, l.stride_w) = o.IntPair("stride", 1, 1);
  std::tie(l.pad_h, l.pad_w) = o.IntPair("padding", 0, 0);
  std::tie(l.dilation_h, l.dilation_w) = o.IntPair("dilation", 1, 1);
  l.groups = o.PositiveInt("groups", 1);
  l.bias = o.Bool("bias", true);
  return l;
}

SeqLayerSpec ReadPool(const ConfigMap& o, bool adaptive) {
  SeqLayerSpec l;
  l.op = adaptive ? SeqOp::kAdaptivePool : SeqOp::kPool;
  l.pool = static_cast<PoolKind>(o.Choice("kind", {"max", "avg"}, 0));
  if (adaptive) {
    o.Get("out");
    std::tie(l.out_h, l.out_w) = o.IntPair("out", 1, 1);
    return l;
  }
  o.Get("kernel");
  std::tie(l.kernel_h, l.kernel_w) = o.IntPair("kernel", 0, 1);
  // PyTorch's pooling default: stride = kernel.
  std::tie(l.stride_h, l.stride_w) = o.IntPair("stride", 0, 1);
  if (!o.Has("stride")) std::tie(l.stride_h, l.stride_w) = std::pair(l.kernel_h, l.kernel_w);
  std::tie(l.pad_h, l.pad_w) = o.IntPair("padding", 0, 0);
  l.ceil_mode = o.Bool("ceil_mode", false);
  if (o.Has("dilation") && l.pool != PoolKind::kMax) {
    throw InputError(o.Loc("dilation"), "'dilation' applies to max pooling only (PyTorch's AvgPool2d has none)");
  }
  std::tie(l.dilation_h, l.dilation_w) = o.IntPair("dilation", 1, 1);
  return l;
}

// `residual: {layers: [...], shortcut: [...]}`: x + body(x), or + shortcut(x) when a projection is given.
SeqLayerSpec ReadResidual(const ConfigMap& o, const std::string& file) {
  SeqLayerSpec l;
  l.op = SeqOp::kParallel;
  l.join = JoinKind::kAdd;
  l.branches.resize(2);
  ReadLayers(o.Get("layers"), file, l.branches[0]);
  if (o.Has("shortcut")) ReadLayers(o.Get("shortcut"), file, l.branches[1], true);
  l.nodes = 1 + Nodes(l.branches[0]) + Nodes(l.branches[1]);
  if (l.nodes > kMaxLayers) {
    throw InputError(o.MapLoc(), "'residual' expands to more than " + std::to_string(kMaxLayers) + " layers");
  }
  return l;
}

// `parallel: {join: add|concat|mul, branches: [[...], [...]]}`: every branch reads the same input;
// an empty branch `[]` passes it through.
SeqLayerSpec ReadParallel(const ConfigMap& o, const std::string& file) {
  SeqLayerSpec l;
  l.op = SeqOp::kParallel;
  l.join = static_cast<JoinKind>(o.Choice("join", {"add", "concat", "mul"}, 0));
  const YAML::Node& list = o.Get("branches");
  if (!list.IsSequence() || list.size() < 2) {
    throw InputError(LocOf(list, file), "'branches' must be a list of at least two layer lists, got " + Describe(list));
  }
  for (const YAML::Node& b : list) {
    l.branches.emplace_back();
    ReadLayers(b, file, l.branches.back(), true);
    l.nodes += Nodes(l.branches.back());
  }
  if (l.nodes > kMaxLayers) {
    throw InputError(o.MapLoc(), "'parallel' expands to more than " + std::to_string(kMaxLayers) + " layers");
  }
  return l;
}

// Appends `times` copies of the repeated block, with the locations of the original layers.
void ReadRepeat(const ConfigMap& o, const std::string& file, std::vector<SeqLayerSpec>& out) {
  uint64_t times = o.PositiveInt("times");
  std::vector<SeqLayerSpec> block;
  ReadLayers(o.Get("layers"), file, block);
  const uint64_t used = Nodes(out), size = Nodes(block);
  const uint64_t room = used >= kMaxLayers ? 0 : kMaxLayers - used;
  if (size > 0 && times > room / size) {
    throw InputError(o.Loc("times"), "'repeat' expands to more than " + std::to_string(kMaxLayers) + " layers");
  }
  for (uint64_t i = 0; i < times; ++i) out.insert(out.end(), block.begin(), block.end());
}

void ReadLayer(const YAML::Node& item, const std::string& file, std::vector<SeqLayerSpec>& out) {
  YAML::Node value;
  std::string name;
  if (item.IsScalar()) {
    name = item.Scalar();
  } else if (item.IsMap() && item.size() == 1 && item.begin()->first.IsScalar()) {
    name = item.begin()->first.Scalar();
    value = item.begin()->second;
  } else if (item.IsMap() && item.size() == 1) {
    const YAML::Node key = item.begin()->first;
    throw InputError(LocOf(key, file), "a layer name must be a plain name such as 'linear', got " + Describe(key));
  } else if (item.IsMap() && item.size() > 1) {
    std::string keys;
    for (auto it = item.begin(); it != item.end(); ++it) {
      keys += (keys.empty() ? "'" : ", '") + (it->first.IsScalar() ? it->first.Scalar() : "?") + "'";
    }
    throw InputError(LocOf(item, file),
                     "a layer is a map with one key, got the keys " + keys + " (is a '-' missing before the second?)");
  } else {
    throw InputError(LocOf(item, file),
                     "a layer must be a name such as 'relu' or a map with one key such "
                     "as 'linear: {out: 10}', got " +
                         Describe(item));
  }
  SeqLayerSpec l;
  if (name == "linear") {
    ConfigMap o = Options(value, file, name, {"out", "in", "bias"});
    l.out = o.PositiveInt("out");
    l.bias = o.Bool("bias", true);
    ReadExpectedIn(o, l);
  } else if (name == "conv2d") {
    l = ReadConv(
        Options(value, file, name, {"out", "in", "kernel", "stride", "padding", "dilation", "groups", "bias"}));
  } else if (name == "pool" || name == "adaptive_pool") {
    bool adaptive = name == "adaptive_pool";
    l = ReadPool(
        Options(value, file, name,
                adaptive ? std::vector<std::string>{"kind", "out"}
                         : std::vector<std::string>{"kind", "kernel", "stride", "padding", "dilation", "ceil_mode"}),
        adaptive);
  } else if (name == "flatten" || name == "layernorm" || name == "batchnorm") {
    Options(value, file, name, {});
    l.op = name == "flatten" ? SeqOp::kFlatten : name == "layernorm" ? SeqOp::kLayerNorm : SeqOp::kBatchNorm;
  } else if (name == "patch_embed") {
    ConfigMap o = Options(value, file, name, {"size", "dim"});
    l.op = SeqOp::kPatchEmbed;
    std::tie(l.kernel_h, l.kernel_w) = o.IntPair("size", 16, 1);
    l.out = o.PositiveInt("dim");
  } else if (name == "encoder") {
    ConfigMap o = Options(value, file, name, {"heads", "mlp", "norm"});
    l.op = SeqOp::kEncoder;
    l.heads = o.PositiveInt("heads");
    l.mlp_dim = o.PositiveInt("mlp");
    l.post_norm = o.Choice("norm", {"pre", "post"}, 0) == 1;
  } else if (name == "class_token") {
    Options(value, file, name, {});
    l.op = SeqOp::kClassToken;
  } else if (name == "residual") {
    l = ReadResidual(Options(value, file, name, {"layers", "shortcut"}), file);
  } else if (name == "parallel") {
    l = ReadParallel(Options(value, file, name, {"join", "branches"}), file);
  } else if (name == "dropout") {
    l.op = SeqOp::kDropout;
    l.p = Options(value, file, name, {"p"}).Probability("p", 0.5);
  } else if (name == "repeat") {
    ReadRepeat(Options(value, file, name, {"times", "layers"}), file, out);
    return;
  } else {
    const std::optional<ActivationKind> activation = FindName<ActivationKind>(name);
    if (!activation) {
      std::string list;
      for (const std::string& n : kLayerNames) list += (list.empty() ? "" : ", ") + n;
      throw InputError(LocOf(item, file),
                       "unknown layer '" + name + "'" + DidYouMean(name, kLayerNames) + "; layers are " + list);
    }
    Options(value, file, name, {});
    l.op = SeqOp::kActivation;
    l.activation = *activation;
  }
  l.loc = LocOf(item, file);
  if (out.size() >= kMaxLayers) {
    throw InputError(l.loc, "the model has more than " + std::to_string(kMaxLayers) + " layers");
  }
  out.push_back(l);
}

void ReadLayers(const YAML::Node& list, const std::string& file, std::vector<SeqLayerSpec>& out, bool allow_empty) {
  if (!list.IsSequence() || (list.size() == 0 && !allow_empty)) {
    throw InputError(LocOf(list, file), "'layers' must be a non-empty list of layers, got " + Describe(list));
  }
  uint64_t nodes = 0;  // of this list, kept as it grows so that aliased blocks cannot blow it up
  for (const YAML::Node& item : list) {
    const size_t before = out.size();
    ReadLayer(item, file, out);
    for (size_t i = before; i < out.size(); ++i) nodes += out[i].nodes;
    if (nodes > kMaxLayers) {
      throw InputError(LocOf(item, file), "the model has more than " + std::to_string(kMaxLayers) + " layers");
    }
  }
}

}  // namespace

SequentialSpec ReadSequential(const ConfigMap& model) {
  SequentialSpec s;
  const YAML::Node& input = model.Get("input");
  if (!input.IsSequence() || input.size() == 0) {
    throw InputError(LocOf(input, model.file()),
                     "'input' must be one sample's shape, such as [512] or [3, 32, 32], got " + Describe(input));
  }
  for (const YAML::Node& d : input) s.input.push_back(ReadPositiveInt(d, model.file(), "input"));
  ReadLayers(model.Get("layers"), model.file(), s.layers);
  if (model.Has("loss")) {
    s.loss = model.Choice("loss", {"cross_entropy", "none"}, 0) == 0 ? LossKind::kCrossEntropy : LossKind::kNone;
    s.loss_loc = model.Loc("loss");
  }
  return s;
}

}  // namespace tally
