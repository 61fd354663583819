// The decoders of a Hugging Face config.json that pair a Llama-like attention block with
// DeepSeek-V3's experts: GLM-4.5/4.6 (glm4_moe) and dots.llm1 (dots1).
#include <string>

#include "config/hf_families.h"
#include "config/hf_reader.h"

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

}  // namespace tally
