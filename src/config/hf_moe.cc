// The mixture-of-experts decoders of a Hugging Face config.json beside the Llama-like ones of
// config/hf_llama.cc: GLM-4.5/4.6 (glm4_moe) and dots.llm1 (dots1) with DeepSeek-V3's experts;
// DBRX; ERNIE 4.5 MoE; Hunyuan-A13B (hunyuan_v1_moe); Ling 2.0 (bailing_moe_v2); MiniMax-M2.
#include <string>
#include <vector>

#include "config/hf_families.h"
#include "config/hf_reader.h"
#include "util/checked_math.h"

namespace tally {
namespace {

// RMSNorm, SwiGLU, RoPE, untied unless tie_word_embeddings; the sizes under Llama's names.
void ReadLlamaBlock(HfReader& r) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kSwiglu;
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
}

// `experts` experts of `width`, `top_k` per token, named by the family's own keys.
void SetExperts(HfReader& r, uint64_t experts, uint64_t top_k, const char* top_k_key, uint64_t width) {
  if (top_k > experts) {
    throw InputError(r.m.Has(top_k_key) ? r.m.Loc(top_k_key) : r.m.MapLoc(),
                     "'" + std::string(top_k_key) + "' (" + std::to_string(top_k) + ") is more than the " +
                         std::to_string(experts) + " experts");
  }
  r.t.n_experts = experts;
  r.t.top_k = top_k;
  r.t.moe_d_ff = width;
}

// Blocks [first, n_layers) are MoE, those before keep the dense MLP (first_k_dense_replace).
void DenseFirst(HfReader& r, uint64_t first) {
  if (first == 0) return;
  r.PerLayer();
  r.moe.assign(r.t.n_layers, false);
  for (uint64_t i = first; i < r.t.n_layers; ++i) r.moe[i] = true;
}

// DBRX's nested attn_config and ffn_config (configuration_dbrx.py); absent, their defaults apply.
ConfigMap SubConfig(const HfReader& r, const char* key, std::vector<std::string> keys) {
  const YAML::Node node = r.m.Has(key) ? r.m.Get(key) : YAML::Node(YAML::NodeType::Map);
  return ConfigMap(node, r.m.file(), key, std::move(keys), UnknownKeys::kIgnore);
}

}  // namespace

// modeling_glm4_moe.py: q, k and v with biases under attention_bias (o_proj has none), RMSNorms over
// head_dim on q and k when use_qk_norm, RoPE on partial_rotary_factor (default 0.5) of each head;
// Glm4MoeMoE is DeepSeek-V3's (routed and shared experts, a router without a bias and its
// e_score_correction_bias buffer, which the checkpoint stores), dense below first_k_dense_replace.
// The num_nextn_predict_layers multi-token-prediction layers after the last (model.layers.92 of
// GLM-4.5) are stored but not loaded by Glm4MoeForCausalLM: params.mtp, as for DeepSeek-V3.
void ReadGlm4Moe(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  ReadLlamaBlock(r);
  r.SetBiases(m.Bool("attention_bias", false), false, false);
  r.ReadRotaryFraction(0.5);
  if (m.Bool("use_qk_norm", false)) t.qk_norm = QkNorm::kPerHead;
  r.UniformAttention(AttentionKind::kFull, 0);
  r.ReadDeepSeekMoe(false);
  t.router_score_bias = true;
  t.mtp_layers = m.NonNegativeInt("num_nextn_predict_layers", 0);
}

// modular_dots1.py: Qwen3's attention (q, k, v and o biases under attention_bias, RMSNorms over
// head_dim on q and k; layer_types, else sliding from max_window_layers on when sliding_window is
// set) and DeepSeek-V3's experts, router and e_score_correction_bias, dense below
// first_k_dense_replace.
void ReadDots1(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  ReadLlamaBlock(r);
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  r.ReadRotaryFraction(0);
  t.qk_norm = QkNorm::kPerHead;
  // Dots1Config's default window is 4096; an explicit null is none.
  const YAML::Node& root = r.root;
  const uint64_t window = m.Has("sliding_window") ? m.PositiveInt("sliding_window") : root["sliding_window"] ? 0 : 4096;
  const uint64_t first = m.NonNegativeInt("max_window_layers", t.n_layers);
  r.Attention(window, 0,
              [&](uint64_t i) { return window > 0 && i >= first ? AttentionKind::kSliding : AttentionKind::kFull; });
  r.ReadDeepSeekMoe(false);
  t.router_score_bias = true;
}

// modeling_dbrx.py, with configuration_dbrx.py's defaults: d_model, n_heads, n_layers,
// max_seq_len; Wqkv one linear h -> h + 2·g·d without a bias (attn_config.kv_n_heads K/V heads,
// default 1; counted as q, k and v), out_proj, and LayerNorms with a weight and no bias (norm_1,
// norm_2, norm_f). Every block's ffn is a router (DbrxRouter.layer, no bias) and
// ffn_config.moe_num_experts GLU experts of ffn_hidden_size (w1, v1 and w2, each stored as
// [E·f, h]), moe_top_k per token. The head is never tied (DbrxConfig refuses tie_word_embeddings).
void ReadDbrx(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size", 32000);
  t.d_model = m.PositiveInt("d_model", 2048);
  t.n_heads = m.PositiveInt("n_heads", 16);
  t.n_layers = m.PositiveInt("n_layers", 24);
  t.context_length = r.Context("max_seq_len");
  t.position = PositionKind::kRope;
  const ConfigMap attn = SubConfig(r, "attn_config", {"kv_n_heads"});
  t.n_kv_heads = attn.PositiveInt("kv_n_heads", 1);
  const ConfigMap ffn = SubConfig(r, "ffn_config", {"ffn_hidden_size", "moe_num_experts", "moe_top_k", "ffn_act_fn"});
  t.d_ff = ffn.PositiveInt("ffn_hidden_size", 3584);
  SetExperts(r, ffn.PositiveInt("moe_num_experts", 4), ffn.PositiveInt("moe_top_k", 1), "ffn_config", t.d_ff);
  if (ffn.Has("ffn_act_fn")) {
    const ConfigMap act(ffn.Get("ffn_act_fn"), m.file(), "ffn_act_fn", {"name"}, UnknownKeys::kIgnore);
    if (act.String("name", "silu") != "silu") {
      throw InputError(act.Loc("name"), "DBRX's experts are read with SiLU (ffn_act_fn {\"name\": \"silu\"}), got '" +
                                            act.String("name", "") + "'");
    }
  }
  t.mlp = MlpKind::kSwiglu;
  t.norm = NormKind::kLayerNorm;
  t.norm_params = NormParams::kWeightOnly;
  if (m.Bool("tie_word_embeddings", false)) {
    throw InputError(m.Loc("tie_word_embeddings"),
                     "DBRX's head is never tied (DbrxConfig refuses "
                     "tie_word_embeddings)");
  }
  t.tied_embeddings = false;
  r.SetBiases(false, false, false);
  r.UniformAttention(AttentionKind::kFull, 0);
}

// modular_ernie4_5_moe.py (configuration_ernie4_5_moe.py's defaults): Llama's block with use_bias on
// q, k, v, o, every MLP and the head; tied by default. Block i is MoE when (i + 1) %
// moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last): a
// router (gate, no bias), its e_score_correction_bias (moe_statics, a parameter that is not trained,
// one value per expert), moe_num_experts experts of moe_intermediate_size, moe_k per token, and the
// moe_num_shared_experts shared experts as one MLP of their summed width. The multi-token-prediction
// weights some checkpoints store ("mtp") are not loaded by transformers and not counted.
void ReadErnie45Moe(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  ReadLlamaBlock(r);
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  const bool bias = m.Bool("use_bias", false);
  r.SetBiases(bias, bias, bias);
  t.lm_head_bias = bias;
  r.ReadRotaryFraction(0);
  r.UniformAttention(AttentionKind::kFull, 0);
  SetExperts(r, m.PositiveInt("moe_num_experts", 64), m.PositiveInt("moe_k", 6), "moe_k",
             m.PositiveInt("moe_intermediate_size", 1536));
  t.shared_expert_d_ff = CheckedMul(m.NonNegativeInt("moe_num_shared_experts", 2), t.moe_d_ff, "the shared experts");
  t.router_score_bias = true;
  const uint64_t start = m.NonNegativeInt("moe_layer_start_index", 1);
  const uint64_t interval = m.PositiveInt("moe_layer_interval", 1);
  const bool last = !m.Has("moe_layer_end_index") || m.String("moe_layer_end_index", "") == "-1";
  const uint64_t end = last ? t.n_layers - 1 : m.NonNegativeInt("moe_layer_end_index", 0);
  r.PerLayer();
  r.moe.assign(t.n_layers, false);
  for (uint64_t i = start; i <= end && i < t.n_layers; ++i) r.moe[i] = (i + 1) % interval == 0;
}

// modeling_hunyuan_v1_moe.py: Llama's attention (attention_bias on q, k, v and o) with
// query_layernorm and key_layernorm over head_dim; on every block HunYuanMoEV1Moe: a router (gate.wg,
// no bias), num_experts experts and one shared MLP (shared_mlp), all of intermediate_size without
// biases, moe_topk per token. Untied by default. num_experts and moe_topk may list a value per layer,
// as the released configs do; the remote code's moe_intermediate_size and num_shared_expert, which
// the port does not read, are accepted where they say what it builds.
void ReadHunyuanMoe(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  ReadLlamaBlock(r);
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  t.qk_norm = QkNorm::kPerHead;
  r.ReadRotaryFraction(0);
  r.UniformAttention(AttentionKind::kFull, 0);
  SetExperts(r, r.UniformInt("num_experts", 1), r.UniformInt("moe_topk", 1), "moe_topk", t.d_ff);
  if (m.Has("moe_intermediate_size") && r.UniformInt("moe_intermediate_size") != t.d_ff) {
    throw InputError(m.Loc("moe_intermediate_size"),
                     "'moe_intermediate_size' is not 'intermediate_size': modeling_hunyuan_v1_moe.py builds "
                     "every expert of intermediate_size");
  }
  if (m.Has("num_shared_expert") && r.UniformInt("num_shared_expert") != 1) {
    throw InputError(m.Loc("num_shared_expert"), "modeling_hunyuan_v1_moe.py builds one shared MLP per layer");
  }
  t.shared_expert_d_ff = t.d_ff;
}

// modeling_bailing_moe_v2.py (Ling 2.0's remote code; configuration_bailing_moe_v2.py's defaults):
// query_key_value one linear h -> (a + 2g)·d (use_qkv_bias; counted as q, k and v), dense (use_bias),
// RMSNorms over head_dim on q and k (use_qk_norm, default true), RoPE on partial_rotary_factor of each
// head (1 when absent); the first first_k_dense_replace blocks (default 1) keep a dense MLP of
// intermediate_size, the others a router without a bias, its expert_bias buffer (stored, as
// DeepSeek-V3's e_score_correction_bias), num_experts experts of moe_intermediate_size and
// num_shared_experts shared ones as one MLP of their summed width, all without biases. Untied by
// default. The num_nextn_predict_layers multi-token-prediction layers (BailingMoeV2MTPLayer: enorm,
// hnorm, eh_proj, a MoE decoder layer, final_layernorm), which the remote code loads after the last
// block, are DeepSeek-V3's modules: params.mtp, apart from the total.
void ReadBailingMoeV2(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  ReadLlamaBlock(r);
  // BailingMoeV2Config: head_dim 128 when absent, hidden_size / heads when null.
  const YAML::Node& root = r.root;
  t.head_dim = m.Has("head_dim") ? m.PositiveInt("head_dim") : root["head_dim"] ? 0 : 128;
  r.SetBiases(m.Bool("use_qkv_bias", false), m.Bool("use_bias", false), false);
  if (m.Bool("use_qk_norm", true)) t.qk_norm = QkNorm::kPerHead;
  r.ReadRotaryFraction(0);
  r.UniformAttention(AttentionKind::kFull, 0);
  SetExperts(r, m.PositiveInt("num_experts", 256), m.PositiveInt("num_experts_per_tok", 8), "num_experts_per_tok",
             m.PositiveInt("moe_intermediate_size", 512));
  t.shared_expert_d_ff = CheckedMul(m.NonNegativeInt("num_shared_experts", 0), t.moe_d_ff, "the shared experts");
  t.router_score_bias = true;
  DenseFirst(r, m.NonNegativeInt("first_k_dense_replace", 1));
  t.mtp_layers = m.NonNegativeInt("num_nextn_predict_layers", 0);
}

// modular_minimax_m2.py: attention without biases with RMSNorms over the whole q and k projections
// (FlexOlmoAttention's q_norm of a·d and k_norm of g·d: the released configs' qk_norm_type
// "per_layer"), RoPE on rotary_dim of each head; on every block num_local_experts experts of
// intermediate_size, num_experts_per_tok per token, behind a router without a bias and its
// e_score_correction_bias buffer (stored, one value per expert); no shared expert; untied. The
// released configs' MTP modules (use_mtp, num_mtp_modules) are neither built nor stored.
void ReadMiniMaxM2(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  ReadLlamaBlock(r);
  t.head_dim = m.PositiveInt("head_dim", 128);
  r.SetBiases(false, false, false);
  const std::string qk = m.String("qk_norm_type", "per_layer");
  if (qk != "per_layer" && qk != "per_head") {
    throw InputError(m.Loc("qk_norm_type"),
                     "unsupported qk_norm_type '" + qk + "'; tally reads per_layer and per_head");
  }
  if (m.Bool("use_qk_norm", true)) t.qk_norm = qk == "per_head" ? QkNorm::kPerHead : QkNorm::kProjection;
  r.ReadRotaryFraction(0);
  t.rotary_dim = m.NonNegativeInt("rotary_dim", 0);
  // MiniMax-Text-01's and M1's lightning-attention layers are attn_type_list's 0 entries.
  if (m.Has("attn_type_list")) {
    for (uint64_t kind : r.IntList("attn_type_list", 2)) {
      if (kind == 0)
        throw InputError(m.Loc("attn_type_list"),
                         "lightning-attention layers (0 in 'attn_type_list') are MiniMax-M1's: model_type minimax_m1, "
                         "not minimax_m2");
    }
  }
  r.UniformAttention(AttentionKind::kFull, 0);
  SetExperts(r, m.PositiveInt("num_local_experts", 256), m.PositiveInt("num_experts_per_tok", 8), "num_experts_per_tok",
             t.d_ff);
  if (m.NonNegativeInt("shared_intermediate_size", 0) != 0) {
    throw InputError(m.Loc("shared_intermediate_size"), "MiniMax-M2 has no shared expert (modeling_minimax_m2.py)");
  }
  t.router_score_bias = true;
}

}  // namespace tally
