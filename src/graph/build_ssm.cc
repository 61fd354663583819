// Mamba's mixer (Gu & Dao 2023; transformers modeling_mamba.py, MambaMixer), Mamba-2's (Dao & Gu
// 2024; modeling_mamba2.py, Mamba2Mixer), Gated DeltaNet (Yang et al. 2024; modeling_qwen3_next.py,
// Qwen3NextGatedDeltaNet), Kimi Delta Attention (Kimi Team 2025, "Kimi Linear", arXiv:2510.26692;
// the checkpoint's modeling_kimi.py, KimiDeltaAttention), Griffin's recurrent block (De et al. 2024;
// modeling_recurrent_gemma.py, RecurrentGemmaRecurrentBlock) and LFM2's short convolution
// (modeling_lfm2.py, Lfm2ShortConv) and lightning attention (MiniMax 2025, "MiniMax-01",
// arXiv:2501.08313, §2.1; modeling_minimax.py, MiniMaxLightningAttention) as nodes.
//
// Saved tensors follow the fused kernels transformers trains with on CUDA, not its slow path (which
// keeps several [b, d_inner, s, N] fp32 tensors per block): mamba_ssm's MambaInnerFn at its default
// checkpoint_lvl 1 (mamba_ssm/ops/selective_scan_interface.py) keeps xz, x_dbl, contiguous copies of
// B and C, the scan output before the gate and the scan's fp32 chunk states [b, d_inner,
// ceil(s/2048), 2N], and recomputes the convolution, Δ and the gated output; Mamba-2's
// MambaSplitConv1dScanCombinedFn (ops/triton/ssd_combined.py) keeps zxbcdt, the scan output and the
// gated norm's fp32 rstd per row and group. Their weights are not activations.
#include "graph/build_ssm.h"

#include <algorithm>

#include "graph/node_costs.h"

namespace tally {
namespace {

// selective_scan_fwd (csrc/selective_scan): n_chunks = ceil(seqlen / 2048) chunk states per channel.
constexpr uint64_t kScanChunk = 2048;

// The selective scan's FLOPs per token and channel per state element: 9, Albert Gu in
// state-spaces/mamba#110 (discretizing A and B, the state update and the read-out by C: 9·B·L·D·N).
constexpr uint64_t kScanFlopsPerState = 9;

// Mamba-2's recurrence per token, counted per operation (Dao & Gu 2024, §3 and the decode step of
// Mamba2Mixer.torch_forward): h ← exp(Δ·A)·h + (Δ·x) ⊗ B is 3 FLOPs per state element and y = h·C 2.
constexpr uint64_t kSsdFlopsPerState = 5;

// The gated delta rule per token and head, on its [d_k, d_v] state S, counted per operation as
// the recurrence transformers writes it (torch_recurrent_gated_delta_rule; Yang et al. 2024, Eq. 10,
// S ← α·S·(I − β·k·kᵀ) + β·v·kᵀ): the decay α·S (1 per state element), the read kᵀS (2), the
// rank-one update S + k ⊗ δ (2) and the output qᵀS (2). Per head also g = −exp(A_log)·softplus(a +
// dt_bias) and β = sigmoid(b) (5); per value channel δ = (v − kᵀS)·β (2); per key channel of each
// head the l2norms of q and k (3 each) and q's scale (1).
constexpr uint64_t kDeltaFlopsPerState = 7;
constexpr uint64_t kDeltaFlopsPerHead = 5;
constexpr uint64_t kDeltaFlopsPerValue = 2;
constexpr uint64_t kDeltaFlopsPerKey = 7;
// fla's chunk_gated_delta_rule works in chunks of 64 tokens and keeps, per token and head, one row
// of the chunk's 64 x 64 lower-triangular matrix A for backward.
constexpr uint64_t kDeltaChunk = 64;

// Kimi Delta Attention's chunkwise kernel per head and sequence of T tokens, head dimension d_h
// (d_k = d_v) and chunk C = 64 (Kimi Linear §6.3, Eq. 13; fla's chunk_kda): 6·T·d_h² + 3·T·C·d_h +
// T·C² FLOPs, all of them products of small matrices (the WY/UT transform of §3.1), counted here as
// GEMMs. Beside them, per key channel: the gate α = f(W↑W↓x) as the code writes it,
// −exp(A_log)·softplus(x + dt_bias) and its exp (4), the L2 norms of q and k (3 each) and q's
// scale (1); per head β = sigmoid(b) (1).
constexpr uint64_t kKdaChunk = 64;
constexpr uint64_t kKdaFlopsPerKey = 11;
constexpr uint64_t kKdaFlopsPerHead = 1;

// Lightning attention per block of B tokens and head of d (MiniMaxLightningAttention.forward's
// prefill loop; MiniMax-01 §2.1's split into an intra-block left product and an inter-block right
// product): (Q·Kᵀ)·V inside the block, 2·B²·d each product, Q·KV against the state and the state's
// update Kᵀ·V, 2·B·d² each; per token and head 4·B·d + 4·d² FLOPs, as GEMMs. At the released
// B = 256 = 2·d this is 12·d², MiniMax-01's own count: its table of FLOPs gives lightning attention
// 72·b·n·l·D²·(1 + 1/(2h) + 5/(18D)) over 3 passes (model width D, h heads), whose attention term is
// 12·D²/h² = 12·d² per token, head and layer forward. Beside them, per token and head, the decay
// mask on the B scores and the query and key decays (B + 2·d) and the sum of the two outputs (d).
constexpr uint64_t kLightningFlopsPerChannel = 3;

// RecurrentGemmaRglru.forward per channel and token: the two gates' sigmoids (2), log a =
// −8·r·softplus(Λ) (2), a = exp(log a) and a² = exp(2·log a) (3), the gated input x·i (1), its
// normalization √(1 − a²) (2) and product (1), and the recurrence h = a·h + x (2).
constexpr uint64_t kLruFlopsPerChannel = 13;

// An RMSNorm without a weight (FalconMamba's rms_forward): square, accumulate, scale by the
// reciprocal root; graph/node_costs.h's RMSNorm less the weight's multiply.
constexpr uint64_t kFlopsPerUnitRmsNormElement = kFlopsPerRmsNormElement - 1;

class SsmBuilder {
 public:
  SsmBuilder(const SsmSpec& ssm, const SsmPlace& place)
      : ssm_(ssm), p_(place), rows_(Count(place.prefix, {place.batch, place.seq})), cur_(place.input) {}

  std::vector<Layer> Mamba() {
    if (ssm_.inner_norms) return JambaMamba();
    const uint64_t h = p_.d_model, di = ssm_.d_inner, n = ssm_.d_state, r = ssm_.dt_rank;
    const std::string xz = Linear("in_proj", h, Count(P(""), {2, di}), ssm_.proj_bias, true);
    Conv(di, xz, Count(P(""), {rows_, 2, di}));
    Add(MakeElementwise(P("act"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, di}),
                        kFlopsPerElementwise),
        di);  // SiLU, recomputed with the convolution in backward
    const uint64_t dbl = CheckedAdd(r, Count(P(""), {2, n}), "the width of " + P("x_proj"));
    const std::string x_dbl = Linear("x_proj", di, dbl, false, false);
    if (ssm_.unit_inner_norms) {
      // Over Δ, B and C in the fused kernel, which saves none of them (it recomputes from x_dbl).
      Add(MakeElementwise(P("inner_norms"), LayerKind::kNorm, Component::kSsm, Count(P("inner_norms"), {rows_, dbl}),
                          kFlopsPerUnitRmsNormElement),
          dbl);
    }
    Linear("dt_proj", r, di, true, false);
    layers_.back().saved = {{.id = x_dbl, .elements = Count(P(""), {rows_, dbl})}};
    Layer scan = Scan(kScanFlopsPerState, n, di);
    AddParamTensor(scan, {di, n}, false);  // A_log
    AddParamTensor(scan, {di}, false);     // D
    // Δ's bias sits in dt_proj; softplus(Δ) and the skip D·x are one FLOP per channel each.
    scan.non_matmul_flops = CheckedAdd(scan.non_matmul_flops, Count(P(""), {rows_, di, 2}), Flops());
    scan.saved = {{.id = P("scan:B"), .elements = Count(P(""), {rows_, n})},
                  {.id = P("scan:C"), .elements = Count(P(""), {rows_, n})},
                  {.id = P("scan:states"), .elements = ChunkStates(di, n), .cls = SavedClass::kFp32},
                  {.id = P("scan"), .elements = Count(P(""), {rows_, di})}};
    // MambaCache: conv_states [b, d_inner, conv_kernel] and ssm_states [b, d_inner, N].
    scan.state_elements_per_sequence = StateElements(di, di, n);
    Add(std::move(scan), di);
    // y · SiLU(z): two FLOPs per element; the kernel recomputes it for out_proj's weight gradient.
    Add(MakeElementwise(P("gate"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, di}), 2), di);
    Linear("out_proj", di, h, ssm_.proj_bias, false);
    return std::move(layers_);
  }

  // JambaMambaMixer.cuda_kernels_forward (modeling_jamba.py), which cannot use MambaInnerFn because
  // of its Δ/B/C RMSNorms: in_proj; causal_conv1d_fn with SiLU fused, which saves its input x, a
  // channel-last view of in_proj's output, so all of xz stays (causal_conv1d_interface.py); x_proj,
  // saving its input u; dt_layernorm, b_layernorm and c_layernorm (JambaRMSNorm over r, N and N
  // columns: the house RMSNorm's fp32 x and x², fp32 rstd per row and normed x each); dt_proj,
  // saving its input (the dt norm's output); selective_scan_fn with z (selective_scan_interface.py,
  // SelectiveScanFn: u, contiguous copies of Δ [b, d_inner, s], B and C [b, N, s] and z, the fp32
  // chunk states, and the output before the gate, out; it returns out·SiLU(z)); out_proj, saving
  // that gated output. A = -exp(A_log) and D, per layer and not per token, are left out as weights.
  std::vector<Layer> JambaMamba() {
    const uint64_t h = p_.d_model, di = ssm_.d_inner, n = ssm_.d_state, r = ssm_.dt_rank;
    const std::string xz = Linear("in_proj", h, Count(P(""), {2, di}), ssm_.proj_bias, true);
    Conv(di, xz, Count(P(""), {rows_, 2, di}));
    Add(MakeElementwise(P("act"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, di}),
                        kFlopsPerElementwise),
        di);  // SiLU, fused into causal_conv1d_fn
    const std::string u = cur_;
    const uint64_t dbl = CheckedAdd(r, Count(P(""), {2, n}), "the width of " + P("x_proj"));
    Linear("x_proj", di, dbl, false, true);
    const uint64_t elements = Count(P("inner_norms"), {rows_, dbl});
    Layer norms =
        MakeElementwise(P("inner_norms"), LayerKind::kNorm, Component::kSsm, elements, kFlopsPerRmsNormElement);
    AddParamTensor(norms, {r}, false);  // dt_layernorm
    AddParamTensor(norms, {n}, false);  // b_layernorm
    AddParamTensor(norms, {n}, false);  // c_layernorm
    SaveRmsNorm(norms, P("inner_norms:x"), elements, Count(P("inner_norms"), {rows_, 3}), true);
    Add(std::move(norms), dbl);
    Linear("dt_proj", r, di, true, true);
    layers_.back().saved = {{.id = P("inner_norms:dt"), .elements = Count(P(""), {rows_, r})}};
    Layer scan = Scan(kScanFlopsPerState, n, di);
    AddParamTensor(scan, {di, n}, false);  // A_log
    AddParamTensor(scan, {di}, false);     // D
    scan.non_matmul_flops = CheckedAdd(scan.non_matmul_flops, Count(P(""), {rows_, di, 2}), Flops());
    scan.saved = {{.id = u, .elements = Count(P(""), {rows_, di})},
                  {.id = P("scan:delta"), .elements = Count(P(""), {rows_, di})},
                  {.id = P("scan:B"), .elements = Count(P(""), {rows_, n})},
                  {.id = P("scan:C"), .elements = Count(P(""), {rows_, n})},
                  {.id = P("scan:z"), .elements = Count(P(""), {rows_, di})},
                  {.id = P("scan:states"), .elements = ChunkStates(di, n), .cls = SavedClass::kFp32},
                  {.id = P("scan"), .elements = Count(P(""), {rows_, di})}};
    scan.state_elements_per_sequence = StateElements(di, di, n);
    Add(std::move(scan), di);
    Add(MakeElementwise(P("gate"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, di}), 2), di);
    Linear("out_proj", di, h, ssm_.proj_bias, true);  // keeps out·SiLU(z)
    return std::move(layers_);
  }

  // Qwen3NextGatedDeltaNet: in_proj_qkvz gives q, k (key heads of d_state: 2·G·N), v and z (d_inner
  // each), in_proj_ba gives b and a (one each per value head); a causal depthwise convolution
  // without a bias and SiLU over q·k·v; the gated delta rule, q and k repeated to the value heads;
  // an RMSNorm over each head's d_v with a weight of d_v, times SiLU(z); out_proj.
  // Training follows the kernels transformers calls when they are installed (causal_conv1d_fn,
  // which keeps its input; fla's chunk_gated_delta_rule, which keeps the l2-normed q and k, v, the
  // fp32 cumulative gates g, β, A's rows and the fp32 rstd of q and k).
  std::vector<Layer> DeltaNet() {
    const uint64_t h = p_.d_model, di = ssm_.d_inner, n = ssm_.d_state, heads = ssm_.n_heads;
    const uint64_t keys = Count(P(""), {ssm_.n_groups, n}), qk = Count(P(""), {heads, n});
    const uint64_t conv_dim = CheckedAdd(Count(P(""), {2, keys}), di, "the width of " + P("conv1d"));
    const std::string input = cur_;
    const std::string qkvz = Linear("in_proj_qkvz", h, CheckedAdd(conv_dim, di, P("in_proj_qkvz")), false, true);
    cur_ = input;
    Linear("in_proj_ba", h, Count(P(""), {2, heads}), false, true);
    cur_ = qkvz;
    Conv(conv_dim, P("conv1d:in"), Count(P(""), {rows_, conv_dim}));
    Add(MakeElementwise(P("act"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, conv_dim}),
                        kFlopsPerElementwise),
        conv_dim);
    Layer rule;
    rule.path = P("delta_rule");
    rule.kind = LayerKind::kDeltaRule;
    rule.component = Component::kSsm;
    AddParamTensor(rule, {heads}, false);  // dt_bias
    AddParamTensor(rule, {heads}, false);  // A_log
    const std::string what = "the FLOPs of " + rule.path;
    rule.non_matmul_flops = CheckedAdd(CheckedAdd(Count(rule.path, {rows_, di, n, kDeltaFlopsPerState}),
                                                  Count(rule.path, {rows_, qk, kDeltaFlopsPerKey}), what),
                                       CheckedAdd(Count(rule.path, {rows_, heads, kDeltaFlopsPerHead}),
                                                  Count(rule.path, {rows_, di, kDeltaFlopsPerValue}), what),
                                       what);
    rule.saved = {
        {.id = P("delta_rule:q"), .elements = Count(rule.path, {rows_, qk})},
        {.id = P("delta_rule:k"), .elements = Count(rule.path, {rows_, qk})},
        {.id = P("delta_rule:v"), .elements = Count(rule.path, {rows_, di})},
        {.id = P("delta_rule:g"), .elements = Count(rule.path, {rows_, heads}), .cls = SavedClass::kFp32},
        {.id = P("delta_rule:beta"), .elements = Count(rule.path, {rows_, heads})},
        {.id = P("delta_rule:A"), .elements = Count(rule.path, {rows_, heads, kDeltaChunk})},
        {.id = P("delta_rule:rstd"), .elements = Count(rule.path, {rows_, heads, 2}), .cls = SavedClass::kFp32}};
    // The cache's conv_states [conv_dim, conv_kernel] and recurrent_states [heads, d_k, d_v].
    rule.state_elements_per_sequence = StateElements(conv_dim, di, n);
    Add(std::move(rule), di);
    // Qwen3NextRMSNormGated: the norm (4 FLOPs per element with its weight), then · SiLU(z) (2).
    Layer norm = MakeElementwise(P("norm"), LayerKind::kNorm, Component::kSsm, Count(P(""), {rows_, di}),
                                 2 + kFlopsPerRmsNormElement);
    AddParamTensor(norm, {di / heads}, false);
    norm.saved = {{.id = cur_, .elements = Count(P(""), {rows_, di})},
                  {.id = P("norm:z"), .elements = Count(P(""), {rows_, di})},
                  {.id = P("norm:rstd"), .elements = Count(P(""), {rows_, heads}), .cls = SavedClass::kFp32}};
    Add(std::move(norm), di);
    Linear("out_proj", di, h, false, true);
    return std::move(layers_);
  }

  // KimiDeltaAttention (modeling_kimi.py; Kimi Linear §3.2, Eq. 10): q_proj, k_proj (key heads of
  // d_state) and v_proj (d_inner), each through its own causal depthwise ShortConvolution of
  // conv_kernel taps without a bias and SiLU (one conv1d node over the three); the channel-wise
  // forget gate through the rank-d_state pair f_a_proj, f_b_proj (with dt_bias [heads·d_state] and
  // A_log [heads]); β by b_proj, one per head; the delta rule S ← (I − β·k·kᵀ)·Diag(α)·S + β·k·vᵀ,
  // o = Sᵀq (§3, Eq. 1); the head-wise RMSNorm (weight d_inner / heads) gated by
  // sigmoid(g_b_proj(g_a_proj(x))), then o_proj. Training follows fla's chunk_kda, which keeps q, k,
  // v, the fp32 gate per key channel, β, the chunk's two 64-wide matrices Akk and Aqk per token and
  // head, and the fp32 rstd of q and k.
  std::vector<Layer> KimiDelta() {
    const uint64_t h = p_.d_model, di = ssm_.d_inner, n = ssm_.d_state, heads = ssm_.n_heads;
    const uint64_t keys = Count(P(""), {heads, n});
    const uint64_t conv_dim = CheckedAdd(Count(P(""), {2, keys}), di, "the width of " + P("conv1d"));
    const std::string input = cur_;
    const std::string q = Linear("q_proj", h, keys, false, true);
    cur_ = input;
    const std::string k = Linear("k_proj", h, keys, false, true);
    cur_ = input;
    const std::string v = Linear("v_proj", h, di, false, true);
    Conv(conv_dim, q, Count(P(""), {rows_, keys}));
    layers_.back().saved = {{.id = q, .elements = Count(P(""), {rows_, keys})},
                            {.id = k, .elements = Count(P(""), {rows_, keys})},
                            {.id = v, .elements = Count(P(""), {rows_, di})}};
    Add(MakeElementwise(P("act"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, conv_dim}),
                        kFlopsPerElementwise),
        conv_dim);
    const std::string qkv = cur_;
    cur_ = input;
    Linear("f_a_proj", h, n, false, true);
    Linear("f_b_proj", n, keys, false, true);
    cur_ = input;
    Linear("b_proj", h, heads, false, true);
    cur_ = input;
    Linear("g_a_proj", h, n, false, true);
    const std::string gate = Linear("g_b_proj", n, di, false, true);
    cur_ = qkv;
    Layer rule;
    rule.path = P("delta_rule");
    rule.kind = LayerKind::kDeltaRule;
    rule.component = Component::kSsm;
    AddParamTensor(rule, {keys}, false);   // dt_bias
    AddParamTensor(rule, {heads}, false);  // A_log
    // Eq. 13 as GEMMs over the batch's rows: 6·T·d² as three d x d products per head, 3·T·C·d as a
    // C-wide and a C/2-wide product of depth d, T·C² as a C/2-wide product of depth C.
    rule.gemms = {{.m = rows_, .n = n, .k = n, .count = Count(rule.path, {3, heads})},
                  {.m = rows_, .n = kKdaChunk, .k = n, .count = heads},
                  {.m = rows_, .n = kKdaChunk / 2, .k = n, .count = heads},
                  {.m = rows_, .n = kKdaChunk / 2, .k = kKdaChunk, .count = heads}};
    rule.non_matmul_flops = CheckedAdd(Count(rule.path, {rows_, keys, kKdaFlopsPerKey}),
                                       Count(rule.path, {rows_, heads, kKdaFlopsPerHead}), "the FLOPs of " + rule.path);
    rule.saved = {
        {.id = P("delta_rule:q"), .elements = Count(rule.path, {rows_, keys})},
        {.id = P("delta_rule:k"), .elements = Count(rule.path, {rows_, keys})},
        {.id = P("delta_rule:v"), .elements = Count(rule.path, {rows_, di})},
        {.id = P("delta_rule:g"), .elements = Count(rule.path, {rows_, keys}), .cls = SavedClass::kFp32},
        {.id = P("delta_rule:beta"), .elements = Count(rule.path, {rows_, heads})},
        {.id = P("delta_rule:A"), .elements = Count(rule.path, {rows_, heads, 2, kKdaChunk})},
        {.id = P("delta_rule:rstd"), .elements = Count(rule.path, {rows_, heads, 2}), .cls = SavedClass::kFp32}};
    // KimiDynamicCache: the three ShortConvolutions' states [channels, conv_kernel] and the
    // recurrent state [heads, d_k, d_v].
    rule.state_elements_per_sequence = StateElements(conv_dim, di, n);
    Add(std::move(rule), di);
    // fla's FusedRMSNormGated with a sigmoid gate: the norm (4 FLOPs per element with its weight),
    // then · sigmoid(g) (2).
    Layer norm = MakeElementwise(P("o_norm"), LayerKind::kNorm, Component::kSsm, Count(P(""), {rows_, di}),
                                 2 + kFlopsPerRmsNormElement);
    AddParamTensor(norm, {di / heads}, false);
    norm.saved = {{.id = cur_, .elements = Count(P(""), {rows_, di})},
                  {.id = gate, .elements = Count(P(""), {rows_, di})},
                  {.id = P("o_norm:rstd"), .elements = Count(P(""), {rows_, heads}), .cls = SavedClass::kFp32}};
    Add(std::move(norm), di);
    Linear("o_proj", di, h, false, true);
    return std::move(layers_);
  }

  // MiniMaxLightningAttention (modeling_minimax.py; the remote modeling_minimax_m1.py of MiniMax-M1
  // alike): qkv_proj h → 3·a·d and SiLU; the blockwise linear attention with a fixed per-head decay
  // (slope_rate, a buffer); an RMSNorm over all a·d channels with a weight of a·d; times
  // sigmoid(output_gate(x)), output_gate h → a·d; out_proj. No biases. The cache keeps the state
  // Kᵀ·V, [heads, d, d] per sequence. Eager autograd keeps the activated q, k, v, each block's scores
  // before and after the decay mask and each block's incoming state.
  std::vector<Layer> Lightning() {
    const uint64_t h = p_.d_model, di = ssm_.d_inner, d = ssm_.d_state, heads = ssm_.n_heads;
    const uint64_t b = std::min(ssm_.block, p_.seq);  // the last (or only) block may be shorter
    const std::string input = cur_;
    const std::string qkv = Linear("qkv_proj", h, Count(P(""), {3, di}), false, true);
    Layer act = MakeElementwise(P("act"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, 3, di}),
                                kFlopsPerElementwise);
    act.saved = {{.id = qkv, .elements = Count(P(""), {rows_, 3, di})}};
    Add(std::move(act), Count(P(""), {3, di}));
    Layer core;
    core.path = P("lightning");
    core.kind = LayerKind::kLightning;
    core.component = Component::kSsm;
    core.gemms = {{.m = rows_, .n = b, .k = d, .count = heads},
                  {.m = rows_, .n = d, .k = b, .count = heads},
                  {.m = rows_, .n = d, .k = d, .count = Count(core.path, {2, heads})}};
    core.non_matmul_flops =
        CheckedAdd(Count(core.path, {rows_, heads, b}), Count(core.path, {rows_, di, kLightningFlopsPerChannel}),
                   "the FLOPs of " + core.path);
    const uint64_t blocks = (p_.seq + ssm_.block - 1) / ssm_.block;
    core.saved = {{.id = cur_, .elements = Count(core.path, {rows_, 3, di})},
                  {.id = P("lightning:scores"), .elements = Count(core.path, {rows_, heads, 2, b})},
                  {.id = P("lightning:states"), .elements = Count(core.path, {p_.batch, blocks, heads, d, d})}};
    // MiniMaxCache's linear_cache: the state [heads, d, d] per sequence, whatever the context.
    core.state_elements_per_sequence = Count(core.path, {heads, d, d});
    Add(std::move(core), di);
    Layer norm = MakeElementwise(P("norm"), LayerKind::kNorm, Component::kSsm, Count(P(""), {rows_, di}),
                                 kFlopsPerRmsNormElement);
    AddParamTensor(norm, {di}, false);
    SaveRmsNorm(norm, cur_, Count(P(""), {rows_, di}), rows_, true);
    Add(std::move(norm), di);
    const std::string normed = cur_;
    cur_ = input;
    const std::string gate = Linear("output_gate", h, di, false, true);
    // sigmoid(gate) · normed: 2 FLOPs per element; autograd keeps both operands.
    Layer gated = MakeElementwise(P("gate"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, di}), 2);
    gated.saved = {{.id = gate, .elements = Count(P(""), {rows_, di})},
                   {.id = normed, .elements = Count(P(""), {rows_, di})}};
    Add(std::move(gated), di);
    Linear("out_proj", di, h, false, true);
    return std::move(layers_);
  }

  // RecurrentGemmaRecurrentBlock: y = GELU(linear_y(x)); x' = linear_x(x), a causal depthwise conv1d
  // with a bias, the RG-LRU (block-diagonal input and recurrence gates of n_heads blocks, each a
  // batched matmul with a bias, and the per-channel recurrence Λ); then linear_out(x' · y). All three
  // linears have biases. Training activations are refused (build_transformer.cc), so nothing here
  // saves beyond the linears' inputs.
  std::vector<Layer> RgLru() {
    const uint64_t h = p_.d_model, w = ssm_.d_inner, heads = ssm_.n_heads, block = w / heads;
    const std::string input = cur_;
    Linear("linear_y", h, w, true, true);
    Add(MakeElementwise(P("act"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, w}),
                        kFlopsPerElementwise),
        w);
    const std::string y = cur_;
    cur_ = input;
    const std::string x = Linear("linear_x", h, w, true, true);
    Conv(w, x, Count(P(""), {rows_, w}));
    Layer lru;
    lru.path = P("rg_lru");
    lru.kind = LayerKind::kLru;
    lru.component = Component::kSsm;
    for (int gate = 0; gate < 2; ++gate) {  // input_gate_*, recurrent_gate_*
      AddParamTensor(lru, {heads, block, block}, false);
      AddParamTensor(lru, {heads, block}, false);
      lru.gemms.push_back({.m = rows_, .n = block, .k = block, .count = heads});
    }
    AddParamTensor(lru, {w}, false);  // recurrent_param
    lru.non_matmul_flops =
        CheckedAdd(Count(lru.path, {rows_, w, kLruFlopsPerChannel}), Count(lru.path, {rows_, w, 2}), Flops());
    // conv1d_state [hidden_size, conv1d_width − 1] (the model's width, which is lru_width in every
    // released checkpoint) and the fp32 recurrent_states [lru_width].
    lru.state_elements_per_sequence = Count(lru.path, {w, ssm_.conv_kernel});
    Add(std::move(lru), w);
    Add(MakeElementwise(P("gate"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, w}), 1), w);
    layers_.back().saved = {{.id = y, .elements = Count(P(""), {rows_, w})}};
    Linear("linear_out", w, h, true, true);
    return std::move(layers_);
  }

  // Lfm2ShortConv (modeling_lfm2.py; Liquid AI's LFM2): in_proj h → 3h gives B, C and x; B·x runs
  // through a causal depthwise conv1d of conv_L_cache taps, C gates its output, out_proj h → h. The
  // three have a bias under conv_bias. Eager autograd keeps in_proj's output (B, C and x are views of
  // it), the conv's input B·x and output, and out_proj's input.
  std::vector<Layer> ShortConv() {
    const uint64_t h = p_.d_model;
    const std::string bcx = Linear("in_proj", h, Count(P(""), {3, h}), ssm_.conv_bias, true);
    const uint64_t elements = Count(P(""), {rows_, h});
    Layer bx = MakeElementwise(P("gate_in"), LayerKind::kActivation, Component::kSsm, elements, 1);
    bx.saved = {{.id = bcx, .elements = Count(P(""), {rows_, 3, h})}};
    Add(std::move(bx), h);
    Conv(h, cur_, elements);
    // Lfm2Cache: conv_cache [conv_dim, conv_L_cache] per layer and sequence.
    layers_.back().state_elements_per_sequence = Count(P("conv1d"), {h, ssm_.conv_kernel});
    Layer gate = MakeElementwise(P("gate_out"), LayerKind::kActivation, Component::kSsm, elements, 1);
    gate.saved = {{.id = bcx, .elements = Count(P(""), {rows_, 3, h})}, {.id = cur_, .elements = elements}};
    Add(std::move(gate), h);
    Linear("out_proj", h, h, ssm_.conv_bias, true);
    return std::move(layers_);
  }

  // in_proj gives z (d_inner), x·B·C (conv_dim) and dt (heads); the convolution runs over x·B·C.
  std::vector<Layer> Mamba2() {
    const uint64_t h = p_.d_model, di = ssm_.d_inner, n = ssm_.d_state, heads = ssm_.n_heads;
    const uint64_t conv_dim = CheckedAdd(di, Count(P(""), {2, ssm_.n_groups, n}), "the width of " + P("conv1d"));
    const uint64_t width = CheckedAdd(CheckedAdd(di, conv_dim, P("in_proj")), heads, P("in_proj"));
    const std::string zxbcdt = Linear("in_proj", h, width, ssm_.proj_bias, true);
    Conv(conv_dim, zxbcdt, Count(P(""), {rows_, width}));
    Add(MakeElementwise(P("act"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, conv_dim}),
                        kFlopsPerElementwise),
        conv_dim);
    Layer scan = Scan(kSsdFlopsPerState, n, di);
    for (int i = 0; i < 3; ++i) AddParamTensor(scan, {heads}, false);  // dt_bias, A_log, D
    // Per head: dt + dt_bias, softplus, Δ·A and its exp; per channel: Δ·x and the skip y + D·x (2).
    scan.non_matmul_flops =
        CheckedAdd(scan.non_matmul_flops,
                   CheckedAdd(Count(P(""), {rows_, heads, 4}), Count(P(""), {rows_, di, 3}), Flops()), Flops());
    scan.saved = {{.id = P("scan"), .elements = Count(P(""), {rows_, di})}};
    // Mamba2Cache: conv_states [b, conv_dim, conv_kernel] and ssm_states [b, heads, head_dim, N].
    scan.state_elements_per_sequence = StateElements(conv_dim, di, n);
    Add(std::move(scan), di);
    if (ssm_.gated_norm) {
      // MambaRMSNormGated: y · SiLU(z) (2 FLOPs), then an RMSNorm with a weight of d_inner (4).
      Layer norm = MakeElementwise(P("norm"), LayerKind::kNorm, Component::kSsm, Count(P(""), {rows_, di}),
                                   2 + kFlopsPerRmsNormElement);
      AddParamTensor(norm, {di}, false);
      norm.saved = {{.id = P("norm:rstd"), .elements = Count(P(""), {rows_, ssm_.n_groups}), .cls = SavedClass::kFp32}};
      Add(std::move(norm), di);
    } else {
      // FalconH1Mixer without mamba_rms_norm: y · SiLU(z) alone.
      Add(MakeElementwise(P("gate"), LayerKind::kActivation, Component::kSsm, Count(P(""), {rows_, di}), 2), di);
    }
    Linear("out_proj", di, h, ssm_.proj_bias || ssm_.out_bias, false);
    return std::move(layers_);
  }

 private:
  std::string P(const std::string& name) const { return name.empty() ? p_.prefix : p_.prefix + "." + name; }
  std::string Flops() const { return "the FLOPs of " + P("scan"); }

  void Add(Layer l, uint64_t width) {
    l.shape = {p_.batch, p_.seq, width};
    cur_ = l.path;
    layers_.push_back(std::move(l));
  }

  // A linear of the mixer; only in_proj keeps its input (the fused kernels recompute the others').
  std::string Linear(const std::string& name, uint64_t in, uint64_t out, bool bias, bool keeps_input) {
    Layer l = MakeLinear(P(name), Component::kSsm, rows_, in, out, bias, cur_, true);
    if (!keeps_input) l.saved.clear();
    Add(std::move(l), out);
    return cur_;
  }

  // The causal depthwise convolution over `channels`, as an implicit GEMM per channel (the way
  // conv2d is counted): (b·s) x k times k x 1, 2·k FLOPs per channel and token. It keeps the input
  // projection's output, which both kernels save whole.
  void Conv(uint64_t channels, const std::string& projected, uint64_t projected_elements) {
    Layer conv;
    conv.path = P("conv1d");
    conv.kind = LayerKind::kConv1d;
    conv.component = Component::kSsm;
    AddParamTensor(conv, {channels, 1, ssm_.conv_kernel}, false);
    if (ssm_.conv_bias) AddParamTensor(conv, {channels}, false);
    conv.gemms.push_back({.m = rows_, .n = 1, .k = ssm_.conv_kernel, .count = channels});
    conv.non_matmul_flops = ssm_.conv_bias ? Count(conv.path, {rows_, channels}) : 0;
    conv.saved = {{.id = projected, .elements = projected_elements}};
    Add(std::move(conv), channels);
  }

  Layer Scan(uint64_t flops_per_state, uint64_t n, uint64_t di) {
    Layer scan;
    scan.path = P("scan");
    scan.kind = LayerKind::kScan;
    scan.component = Component::kSsm;
    scan.non_matmul_flops = Count(scan.path, {rows_, di, n, flops_per_state});
    return scan;
  }

  uint64_t ChunkStates(uint64_t di, uint64_t n) const {
    const uint64_t chunks = (p_.seq + kScanChunk - 1) / kScanChunk;
    return Count(P("scan"), {p_.batch, di, chunks, 2, n});
  }

  uint64_t StateElements(uint64_t conv_channels, uint64_t di, uint64_t n) const {
    return CheckedAdd(Count(P("scan"), {conv_channels, ssm_.conv_kernel}), Count(P("scan"), {di, n}),
                      "the state of " + P("scan"));
  }

  const SsmSpec& ssm_;
  const SsmPlace& p_;
  const uint64_t rows_;
  std::string cur_;
  std::vector<Layer> layers_;
};

}  // namespace

std::vector<Layer> SsmMixer(const SsmSpec& ssm, MixerKind kind, const SsmPlace& place) {
  SsmBuilder b(ssm, place);
  switch (kind) {
    case MixerKind::kMamba2:
      return b.Mamba2();
    case MixerKind::kGatedDeltaNet:
      return b.DeltaNet();
    case MixerKind::kKimiDelta:
      return b.KimiDelta();
    case MixerKind::kLightning:
      return b.Lightning();
    case MixerKind::kRgLru:
      return b.RgLru();
    case MixerKind::kShortConv:
      return b.ShortConv();
    default:
      return b.Mamba();
  }
}

}  // namespace tally
