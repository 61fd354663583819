// The Llama-like decoder families of a Hugging Face config.json (modeling_llama.py and its
// descendants: Mistral, Mixtral, Qwen, Qwen2-MoE, Gemma, Llama 4, gpt-oss, OLMo, OLMoE, Phi-3, PhiMoE,
// GraniteMoE), Cohere and DeepSeek-V2/V3 (and Kimi K2).
#include <algorithm>
#include <string>
#include <vector>

#include "config/hf_families.h"
#include "config/hf_reader.h"

namespace tally {
namespace {

// configuration_llama.py's defaults (LlamaConfig), on which LLaVA's text_config relies (llava-1.5's
// names only what differs from them).
constexpr HfSizeDefaults kLlamaSizes = {
    .vocab = 32000, .hidden = 4096, .intermediate = 11008, .layers = 32, .heads = 32, .context = 2048};

// configuration_qwen3.py: with use_sliding_window, the layers from max_window_layers on slide.
void QwenLayers(HfReader& r, const std::string& type, uint64_t window) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  const bool slide = m.Bool("use_sliding_window", false);
  const uint64_t first = m.NonNegativeInt("max_window_layers", t.n_layers);
  if (type == "qwen2_moe" && slide && !m.Has("layer_types")) {
    // configuration_qwen2_moe.py has changed which layers slide between transformers releases.
    throw InputError(m.Loc("use_sliding_window"),
                     "qwen2_moe's sliding layers are read only from 'layer_types' (transformers' rule for "
                     "'use_sliding_window' changed between releases)");
  }
  if (slide && window > 0 && first < t.n_layers) {
    r.Attention(window, 0, [&](uint64_t i) { return i >= first ? AttentionKind::kSliding : AttentionKind::kFull; });
  } else {
    r.UniformAttention(AttentionKind::kFull, 0);
  }
  // modeling_qwen3.py: RMSNorms over head_dim on q and k.
  if (type == "qwen3" || type == "qwen3_moe") t.qk_norm = QkNorm::kPerHead;
  if (type != "qwen3_moe" && type != "qwen2_moe") return;
  // configuration_qwen3_moe.py and configuration_qwen2_moe.py: layer i is MoE unless listed in
  // mlp_only_layers, when (i + 1) % decoder_sparse_step == 0.
  r.ReadMoe(m.Has("num_experts") ? "num_experts" : "num_local_experts");
  t.moe_d_ff = m.PositiveInt("moe_intermediate_size");
  if (type == "qwen2_moe") {
    // modeling_qwen2_moe.py: one shared expert of shared_expert_intermediate_size (default 5632)
    // beside the routed ones, scaled per token by sigmoid(shared_expert_gate(x)).
    t.shared_expert_d_ff = m.PositiveInt("shared_expert_intermediate_size", 5632);
    t.shared_expert_gate = true;
  }
  const uint64_t step = m.PositiveInt("decoder_sparse_step", 1);
  const std::vector<uint64_t> dense = r.IntList("mlp_only_layers", t.n_layers);
  if (step > 1 || !dense.empty()) {
    r.PerLayer();
    r.moe.assign(t.n_layers, false);
    for (uint64_t i = 0; i < t.n_layers; ++i) {
      r.moe[i] = std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % step == 0;
    }
  }
}

// configuration_llama4.py: no_rope_layers[i] = 1 (RoPE, chunked attention) unless every
// no_rope_layer_interval-th layer (NoPE, full attention); an empty list means that default.
void Llama4Layers(HfReader& r) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  const uint64_t chunk = m.PositiveInt("attention_chunk_size", 0);
  const std::vector<uint64_t> rope = r.IntList("no_rope_layers", 2);
  if (!rope.empty() && rope.size() != t.n_layers) {
    throw InputError(m.Loc("no_rope_layers"),
                     "'no_rope_layers' must list the " + std::to_string(t.n_layers) + " layers");
  }
  const uint64_t interval = m.PositiveInt("no_rope_layer_interval", 4);
  r.Attention(0, chunk, [&](uint64_t i) {
    const bool roped = rope.empty() ? (i + 1) % interval != 0 : rope[i] == 1;
    return roped && chunk > 0 ? AttentionKind::kChunked : AttentionKind::kFull;
  });
  // Experts and the shared expert are intermediate_size wide, dense layers intermediate_size_mlp;
  // moe_layers lists the MoE layers, else every interleave_moe_layer_step-th from step - 1.
  r.ReadMoe("num_local_experts");
  t.moe_d_ff = t.d_ff;
  t.shared_expert_d_ff = t.d_ff;
  t.d_ff = m.PositiveInt("intermediate_size_mlp", t.d_ff);
  r.moe.assign(t.n_layers, false);  // Attention() above bounded the depth
  if (m.Has("moe_layers")) {
    for (uint64_t i : r.IntList("moe_layers", t.n_layers)) r.moe[i] = true;
  } else {
    const uint64_t step = m.PositiveInt("interleave_moe_layer_step", 1);
    for (uint64_t i = step - 1; i < t.n_layers; i += step) r.moe[i] = true;
  }
}

// Mistral, Mixtral, Phi-3 and PhiMoE give one window to every layer.
void MistralLayers(HfReader& r, const std::string& type, uint64_t window, bool attention_bias) {
  r.UniformAttention(window > 0 ? AttentionKind::kSliding : AttentionKind::kFull, window);
  // modeling_mixtral.py: a router (no bias) and num_local_experts SwiGLU experts, top-k per token.
  // modeling_granitemoe.py: the same counts, each expert's gate and up fused in input_linear
  // [E, 2·intermediate_size, h], output_linear [E, h, intermediate_size], no biases.
  if (type == "mixtral" || type == "phimoe" || type == "granitemoe") r.ReadMoe("num_local_experts");
  if (type == "phimoe") {
    // modeling_phimoe.py: LayerNorms with weight and bias, q/k/v/o biases, a head bias.
    r.t.norm = NormKind::kLayerNorm;
    r.SetBiases(attention_bias, attention_bias, false);
    r.t.lm_head_bias = r.m.Bool("lm_head_bias", false);
  }
}

}  // namespace

// modeling_llama.py and its descendants: RMSNorm, RoPE, gated MLP, GQA, untied by default; then
// each descendant's layers.
void ReadLlamaLike(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // Gemma3TextConfig's defaults: a vocabulary of 262,208 and 131,072 positions.
  if (type == "gemma3_text")
    r.ReadCommonSizes({.vocab = 262'208, .context = 131'072});
  else if (r.llama_defaults)
    r.ReadCommonSizes(kLlamaSizes);
  else
    r.ReadCommonSizes();
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.norm = NormKind::kRmsNorm;
  const bool gemma = type == "gemma" || type == "gemma2" || type == "gemma3_text";
  // modeling_gemma.py: GeGLU, head tied to the embedding; the RMSNorm's (1 + w) is still h weights.
  t.mlp = gemma ? MlpKind::kGeglu : MlpKind::kSwiglu;
  t.tied_embeddings = r.outer_tied.value_or(m.Bool("tie_word_embeddings", gemma));
  if (m.Has("tie_word_embeddings")) t.tied_embeddings = m.Bool("tie_word_embeddings", gemma);
  const bool attention_bias = m.Bool("attention_bias", false);
  // modeling_qwen2.py: q, k and v projections carry biases, o does not; there is no key for it.
  // modeling_qwen2_moe.py: the same, under qkv_bias (default true).
  if (type == "qwen2")
    r.SetBiases(true, false, false);
  else if (type == "qwen2_moe")
    r.SetBiases(m.Bool("qkv_bias", true), false, false);
  else
    r.SetBiases(attention_bias, attention_bias, m.Bool("mlp_bias", false));
  r.ReadRotaryFraction(0);
  const uint64_t window = m.PositiveInt("sliding_window", 0);
  if (type == "qwen2" || type == "qwen3" || type == "qwen3_moe" || type == "qwen2_moe") {
    QwenLayers(r, type, window);
  } else if (type == "gemma2" || type == "gemma3_text") {
    // modeling_gemma2.py / modeling_gemma3.py: four RMSNorms per block; configuration_*: sliding
    // unless (i + 1) % pattern == 0 (2 for Gemma 2, sliding_window_pattern for Gemma 3).
    t.norm_placement = NormPlacement::kSandwich;
    if (type == "gemma3_text") t.qk_norm = QkNorm::kPerHead;
    r.Pattern(window == 0 ? 4096 : window, type == "gemma2" ? 2 : m.PositiveInt("sliding_window_pattern", 6));
  } else if (type == "llama4_text") {
    Llama4Layers(r);
  } else if (type == "gpt_oss") {
    // modeling_gpt_oss.py: q, k, v and o biases, a sink logit per head, a router with a bias,
    // experts with biases; layer_types alternate sliding and full from layer 0.
    r.Attention(window, 0, [](uint64_t i) { return i % 2 == 0 ? AttentionKind::kSliding : AttentionKind::kFull; });
    r.SetBiases(attention_bias, attention_bias, true);
    t.attention_sinks = true;
    t.router_bias = true;
    r.ReadMoe("num_local_experts");
  } else if (type == "olmo" || type == "olmo2" || type == "olmoe") {
    // modeling_olmo.py: LayerNorm without weight or bias. modeling_olmo2.py: RMSNorm after each
    // branch, and q/k norms over the whole projections. modeling_olmoe.py: pre-norm with those q/k
    // norms (hidden_size, and head_dim · num_key_value_heads), and num_experts SwiGLU experts of
    // intermediate_size behind a router without a bias.
    r.UniformAttention(AttentionKind::kFull, 0);
    if (type == "olmo") {
      t.norm = NormKind::kLayerNorm;
      t.norm_params = NormParams::kNone;
    } else {
      t.norm_placement = type == "olmo2" ? NormPlacement::kPost : NormPlacement::kPre;
      t.qk_norm = QkNorm::kProjection;
    }
    if (type == "olmoe") r.ReadMoe("num_experts");
  } else {
    MistralLayers(r, type, window, attention_bias);
  }
}

// A model_type no row names, with the standard decoder keys (config/hf_config.cc decides): ReadLlamaLike's
// path for a type it has no branch of (modeling_llama.py's block, Mistral's window), and the MoE
// keys its descendants share: num_experts or num_local_experts experts, num_experts_per_tok of them
// per token, each moe_intermediate_size wide (else intermediate_size), and one ungated shared expert
// of shared_expert_intermediate_size. What this misses the checkpoint beside the config shows.
void ReadGenericDecoder(HfReader& r, const std::string& type) {
  ReadLlamaLike(r, type);
  const ConfigMap& m = r.m;
  // Qwen's spelling of a window that is there but unused.
  if (m.Has("use_sliding_window") && !m.Bool("use_sliding_window", false)) {
    r.UniformAttention(AttentionKind::kFull, 0);
  }
  const char* experts = m.Has("num_experts") ? "num_experts" : "num_local_experts";
  if (m.NonNegativeInt(experts, 0) == 0) return;  // dense (a 0 is some configs' "no experts")
  r.ReadMoe(experts);
  r.t.moe_d_ff = m.NonNegativeInt("moe_intermediate_size", 0);
  r.t.shared_expert_d_ff = m.NonNegativeInt("shared_expert_intermediate_size", 0);
}

// modeling_deepseek_v3.py (and v2, and Kimi K2): multi-head latent attention; the first first_k_dense_replace
// layers dense, then MoE on every moe_layer_freq-th, with n_shared_experts shared experts.
void ReadDeepSeek(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kSwiglu;
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, false, false);
  MlaSpec& mla = t.mla;
  // An explicit null is no query LoRA (DeepSeek-V2-Lite); an absent key, the config default 1536.
  const YAML::Node& root = r.root;
  mla.q_lora_rank = m.Has("q_lora_rank") ? m.PositiveInt("q_lora_rank") : root["q_lora_rank"] ? 0 : 1536;
  mla.kv_lora_rank = m.PositiveInt("kv_lora_rank", 512);
  mla.qk_nope_head_dim = m.PositiveInt("qk_nope_head_dim", 128);
  mla.qk_rope_head_dim = m.PositiveInt("qk_rope_head_dim", 64);
  mla.v_head_dim = m.PositiveInt("v_head_dim", 128);
  t.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  t.n_kv_heads = t.n_heads;  // the latent expands to every head
  r.kv_key.clear();
  r.UniformAttention(AttentionKind::kLatent, 0);
  t.n_experts = m.PositiveInt("n_routed_experts", 0);
  if (t.n_experts > 0) {
    r.ReadDeepSeekMoe(true);
    // DeepSeek-V3's noaux_tc routing adds e_score_correction_bias to the expert scores; Kimi K2 is
    // DeepSeek-V3's architecture under its own model_type (its config names DeepseekV3ForCausalLM).
    t.router_score_bias =
        (type == "deepseek_v3" || type == "kimi_k2") && m.String("topk_method", "noaux_tc") == "noaux_tc";
  }
  t.mtp_layers = m.NonNegativeInt("num_nextn_predict_layers", 0);
}

// modeling_cohere.py: attention and MLP in parallel after one LayerNorm with a weight and no
// bias, SwiGLU, tied head; use_qk_norm adds such norms over the q and k projections.
// modeling_cohere2.py: sliding windows but on every sliding_window_pattern-th layer.
void ReadCohere(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.mlp = MlpKind::kSwiglu;
  t.norm_params = NormParams::kWeightOnly;
  t.parallel_block = true;
  t.norms_per_block = 1;
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  if (m.Bool("use_qk_norm", false)) t.qk_norm = QkNorm::kProjection;
  if (type == "cohere2") {
    r.Pattern(m.PositiveInt("sliding_window", 4096), m.PositiveInt("sliding_window_pattern", 4));
  }
}

}  // namespace tally
