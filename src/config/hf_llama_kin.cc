// Dense decoders of a Hugging Face config.json that are Llama's kin under their own names, norms or
// MLPs: Apertus (xIELU), EXAONE 3.x, InternLM2 (fused wqkv), MiniCPM, Nemotron (ReLU², LayerNorm1P)
// and StableLM. Each reads its transformers configuration_*.py's (or its remote code's) keys and
// defaults.
#include <initializer_list>
#include <string>
#include <utility>

#include "config/hf_families.h"
#include "config/hf_reader.h"

namespace tally {
namespace {

// `key`'s activation (default `fallback`) when it is one tally reads for this family, else an error.
MlpKind Activation(const HfReader& r, const char* key, const std::string& fallback,
                   std::initializer_list<std::pair<const char*, MlpKind>> known) {
  const std::string act = r.m.String(key, fallback);
  std::string names;
  for (const auto& [name, kind] : known) {
    if (act == name) return kind;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw InputError(r.m.Loc(key), "unsupported " + std::string(key) + " '" + act + "'; tally reads " + names + " here");
}

}  // namespace

// modular_apertus.py: Llama's attention (attention_bias on q, k, v and o) with RMSNorms over head_dim
// on q and k, attention_layernorm and feedforward_layernorm, and NemotronMLP's up and down projections
// without biases around hidden_act: xIELU (XIELUActivation, default), whose alpha_p and alpha_n are a
// learnable value each per layer (its beta and eps are buffers). Untied by default; the rope_parameters
// (Llama 3's scaling) have no parameters.
void ReadApertus(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.norm = NormKind::kRmsNorm;
  t.mlp = Activation(r, "hidden_act", "xielu", {{"xielu", MlpKind::kXielu}, {"relu2", MlpKind::kRelu2}});
  t.qk_norm = QkNorm::kPerHead;
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  r.ReadRotaryFraction(0);
  r.UniformAttention(AttentionKind::kFull, 0);
}

// EXAONE 3.0 and 3.5's remote modeling_exaone.py (configuration_exaone.py's defaults): transformer.wte,
// blocks h.N of ln_1, attn.attention (q_proj, k_proj, v_proj, out_proj without biases), ln_2 and the
// gated mlp (c_fc_0, c_fc_1, c_proj, activation_function silu), ln_f, lm_head; RMSNorms. num_layers
// blocks; num_key_value_heads defaults to the heads, intermediate_size to 4·hidden_size. Tied by
// default.
void ReadExaone(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size", 102400);
  t.d_model = m.PositiveInt("hidden_size", 2048);
  t.n_layers = m.PositiveInt("num_layers", 32);
  t.n_heads = m.PositiveInt("num_attention_heads", 32);
  t.n_kv_heads = r.KvHeads(t.n_heads);
  t.d_ff = m.PositiveInt("intermediate_size", 4 * t.d_model);
  t.context_length = r.Context("max_position_embeddings");
  t.position = PositionKind::kRope;
  t.norm = NormKind::kRmsNorm;
  t.mlp = Activation(r, "activation_function", "silu", {{"silu", MlpKind::kSwiglu}});
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  r.SetBiases(false, false, false);
  r.ReadRotaryFraction(0);
  r.UniformAttention(AttentionKind::kFull, 0);
}

// InternLM2's remote modeling_internlm2.py (configuration_internlm2.py's defaults): tok_embeddings,
// blocks of attention_norm, attention.wqkv (one linear h -> (a + 2g)·d, its heads grouped by K/V head;
// counted as q, k and v) and attention.wo, both with biases under `bias` (default true), ffn_norm and
// feed_forward w1, w3, w2 without biases; norm, output. RMSNorms; untied by default.
void ReadInternLm2(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.norm = NormKind::kRmsNorm;
  t.mlp = Activation(r, "hidden_act", "silu", {{"silu", MlpKind::kSwiglu}});
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  const bool bias = m.Bool("bias", true);
  r.SetBiases(bias, bias, false);
  r.ReadRotaryFraction(0);
  r.UniformAttention(AttentionKind::kFull, 0);
}

// MiniCPM's remote modeling_minicpm.py (MiniCPM 1/2 and 4): Llama's blocks (attention_bias on q, k, v
// and o), tied by default; scale_emb, scale_depth and dim_model_base scale activations and have no
// parameters.
void ReadMiniCpm(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.norm = NormKind::kRmsNorm;
  t.mlp = Activation(r, "hidden_act", "silu", {{"silu", MlpKind::kSwiglu}});
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  r.ReadRotaryFraction(0);
  r.UniformAttention(AttentionKind::kFull, 0);
}

// modeling_nemotron.py (configuration_nemotron.py's defaults): NemotronLayerNorm1P, a LayerNorm with a
// weight (stored as weight - 1) and a bias, before attention, MLP and the head; q, k, v and o with
// biases under attention_bias; NemotronMLP's up and down projections (mlp_bias) around ReLU²; RoPE on
// partial_rotary_factor (default 0.5) of each head. Untied by default.
void ReadNemotron(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.norm = NormKind::kLayerNorm;
  t.mlp = Activation(r, "hidden_act", "relu2", {{"relu2", MlpKind::kRelu2}});
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, m.Bool("mlp_bias", false));
  r.ReadRotaryFraction(0.5);
  r.UniformAttention(AttentionKind::kFull, 0);
}

// modeling_stablelm.py (configuration_stablelm.py's defaults): LayerNorms with a weight and a bias; q,
// k and v with biases under use_qkv_bias, o without; with qk_layernorm a LayerNorm without a bias per
// head on q and on k (StableLmLayerNormPerHead: a·d and g·d weights); SwiGLU without biases; RoPE on
// partial_rotary_factor (default 0.25) of each head; with use_parallel_residual, attention and MLP
// both read input_layernorm's output (no post_attention_layernorm). Untied by default.
void ReadStableLm(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.norm = NormKind::kLayerNorm;
  t.mlp = Activation(r, "hidden_act", "silu", {{"silu", MlpKind::kSwiglu}});
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  r.SetBiases(m.Bool("use_qkv_bias", false), false, false);
  if (m.Bool("qk_layernorm", false)) t.qk_norm = QkNorm::kProjection;
  if (m.Bool("use_parallel_residual", false)) {
    t.parallel_block = true;
    t.norms_per_block = 1;
  }
  r.ReadRotaryFraction(0.25);
  r.UniformAttention(AttentionKind::kFull, 0);
}

}  // namespace tally
