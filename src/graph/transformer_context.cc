#include "graph/transformer_context.h"

#include <algorithm>

#include "graph/node_costs.h"

namespace tally {

TransformerContext::TransformerContext(const TransformerSpec& spec, const GraphSettings& graph_settings,
                                       uint64_t seq_length, uint64_t target)
    : t(spec),
      settings(graph_settings),
      batch(graph_settings.batch),
      seq(seq_length),
      context(graph_settings.context.value_or(seq_length)),
      flash(graph_settings.attention == Attention::kFlash),
      rows(Count("tokens", {graph_settings.batch, seq_length})),
      src_seq(seq_length),
      tgt_seq(target),
      source_side(spec.encoder_layers > 0) {}

std::string TransformerContext::P(const std::string& name) const {
  return block < 0 ? name : "blocks." + std::to_string(block) + "." + name;
}

void TransformerContext::Add(Layer l, std::vector<uint64_t> shape, const std::string& output_id) {
  l.block = block;
  l.block_type = block_type;
  l.source_side = l.source_side || source_side;
  l.shape = std::move(shape);
  cur = output_id.empty() ? l.path : output_id;
  layers.push_back(std::move(l));
}

Layer TransformerContext::Norm(const std::string& path, uint64_t width, uint64_t params, std::string input,
                               bool weight_only) const {
  if (width == 0) width = t.d_model;
  if (params == 0) params = width;
  if (input.empty()) input = cur;
  bool ln = t.norm == NormKind::kLayerNorm;
  uint64_t elements = Count(path, {rows, width});
  Layer l = MakeElementwise(path, LayerKind::kNorm, Component::kNorm, elements,
                            ln ? kFlopsPerLayerNormElement : kFlopsPerRmsNormElement);
  l.op = ln ? ElementwiseOp::kLayerNorm : ElementwiseOp::kRmsNorm;
  if (t.norm_params != NormParams::kNone) AddParamTensor(l, {params}, false);
  if (ln && t.norm_params == NormParams::kAffine && !weight_only) AddParamTensor(l, {params}, false);  // its bias
  const uint64_t groups = elements / params;  // normalized groups: tokens (x heads for per-head q/k norms)
  if (ln) {
    // native_layer_norm saves its input and the fp32 mean and reciprocal deviation of every row.
    l.saved.push_back({input, elements, SavedClass::kAutocastFp32});
    l.saved.push_back({path + ":mean", groups, SavedClass::kFp32});
    l.saved.push_back({path + ":rstd", groups, SavedClass::kFp32});
  } else {
    SaveRmsNorm(l, input, elements, groups, t.norm_params != NormParams::kNone);
  }
  return l;
}

SavedClass TransformerContext::MaskClass() const {
  return settings.dropout_mask == DropoutMask::kCpu ? SavedClass::kActivation : SavedClass::kMask;
}

void TransformerContext::Dropout(const std::string& path, uint64_t elements, Component c, bool tp_split) {
  if (t.dropout <= 0) return;
  std::vector<uint64_t> shape = layers.back().shape;
  Layer l = MakeElementwise(path, LayerKind::kDropout, c, elements, kFlopsPerElementwise);
  l.saved.push_back({.id = path + ":mask", .elements = elements, .cls = MaskClass()});
  if (tp_split) SplitOverTp(l);
  Add(std::move(l), shape);
}

void TransformerContext::Residual(const std::string& path, uint64_t branches) {
  Add(MakeElementwise(path, LayerKind::kResidualAdd, Component::kOther, Count(path, {rows, t.d_model, branches}),
                      kFlopsPerElementwise),
      Hidden());
}

// The adapter is X·A·B beside the frozen X·W (Hu et al. 2021, §4.1), A in x r and B r x out, both
// trainable. PEFT wraps each nn.Linear the checkpoint holds: a projection stored as several modules
// (Llama's q_proj, k_proj and v_proj beside GPT-2's one c_attn) gets an adapter of its own on each,
// every one with its own A over the whole input (`parts`: their output widths, summing to the node's).
void TransformerContext::AddLinear(Layer l, std::vector<uint64_t> shape, const std::string& target,
                                   const std::vector<std::pair<std::string, uint64_t>>& parts) {
  for (const auto& part : parts) l.module_widths.push_back(part.second);
  const uint64_t rank = settings.lora_rank;
  const auto& targets = settings.lora_targets;
  const bool adapt = rank > 0 && std::find(targets.begin(), targets.end(), target) != targets.end();
  if (!adapt) {
    Add(std::move(l), std::move(shape));
    return;
  }
  const Gemm base = l.gemms[0];  // m rows, k in, n out
  const std::string input = l.saved[0].id;
  const std::string path = l.path;
  Add(std::move(l), shape);
  std::vector<std::pair<std::string, uint64_t>> modules = parts;
  if (modules.empty()) modules = {{"", base.n}};
  for (const auto& [name, width] : modules) {
    Layer lora;
    lora.path = path + (name.empty() ? "" : "." + name) + ".lora";
    lora.kind = LayerKind::kLinear;
    lora.component = Component::kLora;
    AddParamTensor(lora, {base.k, rank}, false);
    AddParamTensor(lora, {rank, width}, false);
    lora.gemms = {{.m = base.m, .n = rank, .k = base.k, .count = base.count},
                  {.m = base.m, .n = width, .k = rank, .count = base.count}};
    lora.non_matmul_flops = Count(lora.path, {base.m, width, base.count});  // adding B(A x) to W x
    lora.saved = {{.id = input, .elements = Count(lora.path, {base.m, base.k, base.count})},
                  {.id = lora.path + ":ax", .elements = Count(lora.path, {base.m, rank, base.count})}};
    if (settings.lora_fp32) {
      // PEFT casts the input to the adapters' fp32 (peft/tuners/lora/layer.py, Linear.forward,
      // _cast_input_dtype), each adapted linear its own copy, which A keeps for its weight gradient.
      lora.fp32_adapter = true;
      lora.saved = {{.id = lora.path + ":x_fp32",
                     .elements = Count(lora.path, {base.m, base.k, base.count}),
                     .cls = SavedClass::kFp32},
                    {.id = lora.path + ":ax",
                     .elements = Count(lora.path, {base.m, rank, base.count}),
                     .cls = SavedClass::kFp32}};
    }
    std::vector<uint64_t> out = shape;
    out.back() = width;
    Add(std::move(lora), std::move(out));
  }
  cur = path;  // W x + B(A x) is the base layer's output
}

void TransformerContext::Stack(bool decoder) {
  seq = decoder ? tgt_seq : src_seq;
  rows = Count("tokens", {batch, seq});
  source_side = !decoder;
}

}  // namespace tally
