#include "graph/build_mlp.h"

#include "graph/node_costs.h"

namespace tally {
namespace {

// A dense MLP over `rows` token rows, or one expert family: params are multiplied by `experts`.
// Node shapes are `lead` followed by the width.
void MlpLayers(TransformerContext& ctx, const std::string& prefix, uint64_t rows, std::vector<uint64_t> lead,
               uint64_t f, uint64_t experts, uint64_t active) {
  auto shape = [&](uint64_t width) {
    std::vector<uint64_t> s = lead;
    s.push_back(width);
    return s;
  };
  const uint64_t h = ctx.t.d_model;
  const uint64_t hidden = Count(ctx.P(prefix), {rows, f});
  const bool gated = ctx.t.mlp == MlpKind::kSwiglu || ctx.t.mlp == MlpKind::kGeglu;
  const std::string input = ctx.cur;
  auto linear = [&](const std::string& name, uint64_t in, uint64_t out, const std::string& from) {
    Layer l = MakeLinear(ctx.P(prefix + name), Component::kMlp, rows, in, out, ctx.t.mlp_bias, from, true,
                         name == "down" ? TpSplit::kRow : TpSplit::kColumn);
    if (experts > 0) {
      // One tensor of each shape per expert: [experts, ...].
      l.params = Count(l.path, {l.params, experts});
      for (ParamTensor& p : l.param_tensors) p.shape.insert(p.shape.begin(), experts);
      l.n_experts = experts;
      l.active_experts = active;
    }
    return l;
  };
  Layer act = MakeElementwise(ctx.P(prefix + "act"), LayerKind::kActivation, Component::kMlp, hidden,
                              gated ? 2 : kFlopsPerElementwise);  // gated: act(gate) then · up
  if (gated) {
    ctx.AddLinear(linear("gate", h, f, input), shape(f), "gate");
    act.saved.push_back({.id = ctx.cur, .elements = hidden, .tp_sharded = true});
    // Eager act(gate) · up: the activation saves the gate, the multiply act(gate) and up (4
    // tensors with the down projection's input); a fused kernel recomputes act(gate) (3).
    if (ctx.settings.mlp_kernel == MlpKernel::kEager) {
      act.saved.push_back({.id = ctx.P(prefix + "act:gate"), .elements = hidden, .tp_sharded = true});
    }
  }
  Layer up = linear("up", h, f, input);
  up.fused_with_previous = gated && ctx.t.gate_up_fused;
  ctx.AddLinear(std::move(up), shape(f), "up");
  // ReLU's backward uses its output (the down projection's saved input); GELU and SiLU their input.
  // transformers' ReLUSquaredActivation is relu then square: both backwards read relu(x), a tensor of
  // its own beside the squared output the down projection saves.
  const bool saves_output = ctx.t.mlp == MlpKind::kRelu;
  const std::string saved_id = ctx.t.mlp == MlpKind::kRelu2 ? ctx.P(prefix + "act:relu")
                               : saves_output               ? ctx.P(prefix + "act")
                                                            : ctx.cur;
  if (ctx.t.mlp == MlpKind::kXielu) {
    // transformers' XIELUActivation: the learnable alpha_p and alpha_n, one value each (its beta and
    // eps are buffers, not parameters). Its backward is costed as GELU's, from its input alone (a
    // convention: the op-by-op Python form keeps a few more tensors).
    for (int i = 0; i < 2; ++i) {
      AddParamTensor(act, experts > 0 ? std::vector<uint64_t>{experts, 1} : std::vector<uint64_t>{1}, false);
    }
    if (experts > 0) {
      act.n_experts = experts;
      act.active_experts = active;
    }
  }
  const bool gelu_in_ops = ctx.t.gelu_in_ops && ctx.t.mlp == MlpKind::kGelu;
  act.op = gated         ? ElementwiseOp::kGatedActivation
           : gelu_in_ops ? ElementwiseOp::kGeluInOps
                         : ElementwiseOp::kActivation;
  // gelu_new's pow runs in fp32 under autocast, and what follows it: x (cast), tanh and 1 + tanh are
  // fp32 there, 0.5·x keeps the GEMM's dtype.
  act.saved.push_back({.id = saved_id,
                       .elements = hidden,
                       .cls = gelu_in_ops ? SavedClass::kAutocastFp32 : SavedClass::kActivation,
                       .tp_sharded = true});
  if (gelu_in_ops) {
    for (const char* part : {":tanh", ":one_plus_tanh"}) {
      act.saved.push_back({.id = ctx.P(prefix + "act") + part,
                           .elements = hidden,
                           .cls = SavedClass::kAutocastFp32,
                           .tp_sharded = true});
    }
    act.saved.push_back({.id = ctx.P(prefix + "act:half_x"), .elements = hidden, .tp_sharded = true});
    // Its backward runs op by op: the gradients of the product's two factors live at once.
    act.backward_scratch = hidden;
  }
  // Between the column-parallel up (and gate) and the row-parallel down: each rank its f / tp.
  SplitOverTp(act);
  ctx.Add(std::move(act), shape(f));
  // modeling_t5.py, T5DenseActDense and T5DenseGatedActDense: a dropout before wo.
  if (ctx.t.mlp_dropout) ctx.Dropout(ctx.P(prefix + "act_dropout"), hidden, Component::kMlp, true);
  ctx.AddLinear(linear("down", f, h, ctx.cur), shape(h), "down");
}

// modeling_qwen2_moe.py, Qwen2MoeSparseMoeBlock: sigmoid(shared_expert_gate(x)) · shared_expert(x),
// the gate a linear h -> 1 without a bias over the block's input. The product saves both factors.
void SharedExpertGate(TransformerContext& ctx, const std::string& input) {
  const std::string shared = ctx.cur;
  Layer gate = MakeLinear(ctx.P("moe.shared_gate"), Component::kRouter, ctx.rows, ctx.t.d_model, 1, false, input, true);
  ctx.Add(std::move(gate), {ctx.batch, ctx.seq, 1});
  const uint64_t out = Count(ctx.P("moe.shared_gate"), {ctx.rows, ctx.t.d_model});
  Layer scale = MakeElementwise(ctx.P("moe.shared_gate.scale"), LayerKind::kActivation, Component::kMlp, out,
                                kFlopsPerElementwise);
  scale.non_matmul_flops = CheckedAdd(scale.non_matmul_flops, ctx.rows, "the FLOPs of " + scale.path);  // sigmoid
  scale.saved.push_back({.id = shared, .elements = out, .tp_sharded = false});
  scale.saved.push_back({.id = scale.path + ":sigmoid", .elements = ctx.rows, .tp_sharded = false});
  ctx.Add(std::move(scale), ctx.Hidden());
}

}  // namespace

void AddMlp(TransformerContext& ctx) {
  const uint64_t h = ctx.t.d_model;
  if (!ctx.layer.moe) {
    MlpLayers(ctx, "mlp.", ctx.rows, {ctx.batch, ctx.seq}, ctx.layer.d_ff == 0 ? ctx.t.d_ff : ctx.layer.d_ff, 0, 0);
  } else {
    // Mixtral (Jiang et al. 2024, §2.1): a router scores E experts per token and each token runs
    // through its top-k; the expert GEMMs together see rows·k token rows.
    Layer router = MakeLinear(ctx.P("moe.router"), Component::kRouter, ctx.rows, h, ctx.t.n_experts, ctx.t.router_bias,
                              ctx.cur, true);
    if (ctx.t.router_score_bias) AddParamTensor(router, {ctx.t.n_experts}, false);
    router.non_matmul_flops = CheckedAdd(router.non_matmul_flops, Count(router.path, {ctx.rows, ctx.t.n_experts}),
                                         "the FLOPs of " + router.path);  // softmax and top-k
    // The routing probabilities, kept for the gradient of the combine weights.
    router.saved.push_back({.id = router.path + ":probs",
                            .elements = Count(router.path, {ctx.rows, ctx.t.n_experts}),
                            .cls = SavedClass::kFp32});
    const std::string input = ctx.cur;
    ctx.Add(std::move(router), {ctx.batch, ctx.seq, ctx.t.n_experts});
    // Each token is copied to its k experts: the experts' input is that gathered copy.
    ctx.cur = input + ":routed";
    const uint64_t routed = Count(ctx.P("moe"), {ctx.rows, ctx.t.top_k});
    const uint64_t f = ctx.t.moe_d_ff == 0 ? ctx.t.d_ff : ctx.t.moe_d_ff;
    MlpLayers(ctx, "moe.experts.", routed, {ctx.batch, ctx.seq, ctx.t.top_k}, f, ctx.t.n_experts, ctx.t.top_k);
    // The experts' outputs, weighted and summed per token: kept for the gradient of the weights.
    ctx.layers.back().saved.push_back(
        {.id = ctx.layers.back().path + ":out", .elements = Count(ctx.P("moe"), {routed, h}), .tp_sharded = false});
    if (ctx.t.shared_expert_d_ff > 0) {
      // DeepSeek-V2 §2.1.1 and Llama 4: shared experts every token runs, one dense MLP beside the
      // routed ones, added to their sum.
      ctx.cur = input;
      MlpLayers(ctx, "moe.shared.", ctx.rows, {ctx.batch, ctx.seq}, ctx.t.shared_expert_d_ff, 0, 0);
      if (ctx.t.shared_expert_gate) SharedExpertGate(ctx, input);
      ctx.Residual(ctx.P("moe.combine"), 1);
    }
  }
  ctx.Dropout(ctx.P("mlp.dropout"), Count(ctx.P("mlp"), {ctx.rows, h}), Component::kMlp);
}

}  // namespace tally
