// modeling_zamba2.py (Glorioso et al. 2024, "The Zamba2 Suite", §2): at a hybrid block,
// Zamba2AttentionDecoderLayer reads the concatenation [hidden, embedding] (2h wide), normalizes it
// (input_layernorm, an RMSNorm of 2h), runs attention with q, k and v from 2h and o back to h (no
// biases; scaled by (head_dim/2)^-0.5, one multiply as everywhere), then pre_ff_layernorm (RMSNorm
// of h) and Zamba2MLP: gate_up_proj h -> 2f, act(gate) · up, down_proj f -> h; neither branch has a
// residual add. Each hybrid block has its own adapters, Linear(in, r) then Linear(r, out) without
// biases added to a shared projection's output: on gate_up_proj always (transformers builds them
// whatever use_shared_mlp_adapter says), on q, k and v with use_shared_attention_adapter (in 2h,
// out 2h). The block's own linear (h x h, no bias) maps the result into the stream.
// This is Zamba2Model as transformers 4.48 to 4.57 builds it: num_mem_blocks block modules used in
// turn (itertools.cycle) at the hybrid blocks, each holding the adapters of the uses it serves, so
// that the hybrid block k uses block k % num_mem_blocks and its own adapters.
// Training activations are not modelled (graph/build_transformer.cc refuses them): no node saves.
#include "graph/build_zamba2.h"

#include "graph/node_costs.h"

namespace tally {
namespace {

class SharedBlockBuilder {
 public:
  SharedBlockBuilder(const TransformerSpec& t, const SharedBlockPlace& place)
      : t_(t), p_(place), rows_(Count(place.prefix, {place.batch, place.seq})), cur_(place.input) {}

  SharedBlockNodes Build() {
    const uint64_t h = t_.d_model, width = Count(P(""), {2, h}), a = t_.n_heads, g = t_.n_kv_heads, d = t_.head_dim,
                   f = t_.d_ff;
    Layer concat;
    concat.path = P("concat");
    concat.kind = LayerKind::kConcat;
    concat.component = Component::kOther;
    Add(std::move(concat), width);
    Shared(Norm("attn_norm", width), width);
    const std::string normed = cur_;
    const uint64_t q_width = Count(P("attn"), {a, d}), kv_width = Count(P("attn"), {g, d});
    for (const auto& [name, out] :
         {std::pair<const char*, uint64_t>{"attn.q", q_width}, {"attn.k", kv_width}, {"attn.v", kv_width}}) {
      cur_ = normed;
      Shared(Linear(name, width, out), out);
      if (t_.zamba.attention_adapters) Adapter(std::string(name) + ".adapter", width, out, Component::kAttention);
    }
    if (t_.zamba.rope) {
      Add(MakeElementwise(P("attn.rope"), LayerKind::kRope, Component::kAttention,
                          Count(P("attn.rope"), {rows_, a + g, d}), kFlopsPerRopeElement),
          q_width);
    }
    Core(a, d, kv_width);
    Shared(Linear("attn.out", q_width, h), h);
    Shared(Norm("mlp_norm", h), h);
    const uint64_t up = Count(P("mlp"), {2, f});
    Shared(Linear("mlp.gate_up", h, up), up);
    Adapter("mlp.gate_up.adapter", h, up, Component::kMlp);
    Add(MakeElementwise(P("mlp.act"), LayerKind::kActivation, Component::kMlp, Count(P("mlp"), {rows_, f}), 2),
        f);  // act(gate) · up
    Shared(Linear("mlp.down", f, h), h);
    Layer linear = MakeLinear(p_.linear, Component::kMlp, rows_, h, h, false, cur_, true);
    linear.saved.clear();
    Add(std::move(linear), h);
    return std::move(out_);
  }

 private:
  std::string P(const std::string& name) const { return name.empty() ? p_.prefix : p_.prefix + "." + name; }

  void Add(Layer l, uint64_t width) {
    l.shape = {p_.batch, p_.seq, width};
    cur_ = l.path;
    out_.layers.push_back(std::move(l));
  }

  void Shared(Layer l, uint64_t width) {
    out_.shared.push_back(out_.layers.size());
    Add(std::move(l), width);
  }

  Layer Linear(const std::string& name, uint64_t in, uint64_t out) const {
    Layer l = MakeLinear(P(name), name.rfind("mlp", 0) == 0 ? Component::kMlp : Component::kAttention, rows_, in, out,
                         false, cur_, true);
    l.saved.clear();
    return l;
  }

  // Zamba2RMSNorm over `width` features: 4 FLOPs per element, a weight of `width`.
  Layer Norm(const std::string& name, uint64_t width) const {
    Layer l = MakeElementwise(P(name), LayerKind::kNorm, Component::kNorm, Count(P(name), {rows_, width}),
                              kFlopsPerRmsNormElement);
    AddParamTensor(l, {width}, false);
    return l;
  }

  // x·A·B added to the shared projection's output: A in x r, B r x out (Hu et al. 2021's shape).
  void Adapter(const std::string& name, uint64_t in, uint64_t out, Component c) {
    const uint64_t r = t_.zamba.adapter_rank;
    const std::string projected = cur_;
    Layer l;
    l.path = P(name);
    l.kind = LayerKind::kLinear;
    l.component = c;
    AddParamTensor(l, {in, r}, false);
    AddParamTensor(l, {r, out}, false);
    l.gemms = {{.m = rows_, .n = r, .k = in}, {.m = rows_, .n = out, .k = r}};
    l.non_matmul_flops = Count(l.path, {rows_, out});  // the add
    Add(std::move(l), out);
    cur_ = projected;
  }

  // QK^T (one scaling multiply per score), softmax, AV; each hybrid block caches its own K and V.
  void Core(uint64_t a, uint64_t d, uint64_t kv_width) {
    const uint64_t scores = Count(P("attn"), {p_.batch, a, p_.seq, p_.keys});
    const uint64_t cache = Count(P("attn"), {2, kv_width});
    Layer qk = MakeElementwise(P("attn.scores"), LayerKind::kAttentionScores, Component::kAttentionCore, scores,
                               kFlopsPerElementwise);
    qk.gemms.push_back(
        {.m = p_.seq, .n = p_.keys, .k = d, .count = Count(P("attn"), {p_.batch, a}), .halved = p_.causal});
    qk.tp_split = true;  // the attention core splits by heads, as the step's GEMMs price it
    qk.attention = AttentionKind::kFull;
    qk.kv_elements_per_token = cache;
    qk.kv_tp_max_shards = t_.n_kv_heads;
    qk.shape = {p_.batch, a, p_.seq, p_.keys};
    cur_ = qk.path;
    out_.layers.push_back(std::move(qk));
    Layer softmax = MakeElementwise(P("attn.softmax"), LayerKind::kSoftmax, Component::kAttentionCore, scores,
                                    kFlopsPerElementwise);
    softmax.tp_split = true;
    softmax.shape = {p_.batch, a, p_.seq, p_.keys};
    cur_ = softmax.path;
    out_.layers.push_back(std::move(softmax));
    Layer av;
    av.path = P("attn.context");
    av.kind = LayerKind::kAttentionContext;
    av.component = Component::kAttentionCore;
    av.tp_split = true;
    av.gemms.push_back(
        {.m = p_.seq, .n = d, .k = p_.keys, .count = Count(P("attn"), {p_.batch, a}), .halved = p_.causal});
    av.kv_elements_per_token = cache;
    av.kv_tp_max_shards = t_.n_kv_heads;
    Add(std::move(av), Count(P("attn"), {a, d}));
  }

  const TransformerSpec& t_;
  const SharedBlockPlace& p_;
  const uint64_t rows_;
  std::string cur_;
  SharedBlockNodes out_;
};

}  // namespace

SharedBlockNodes Zamba2SharedBlock(const TransformerSpec& t, const SharedBlockPlace& place) {
  return SharedBlockBuilder(t, place).Build();
}

}  // namespace tally
