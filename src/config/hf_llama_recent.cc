// The Llama descendants of 2025 in a Hugging Face config.json: Llama's blocks (RMSNorm, RoPE, SwiGLU,
// GQA) with each family's defaults, biases, norms and layer pattern, from its transformers
// configuration_*.py and modeling_*.py (or modular_*.py).
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config/hf_families.h"
#include "config/hf_reader.h"

namespace tally {
namespace {

// What each family's config class says when a key is absent, and which keys hold its biases.
struct RecentLlama {
  std::string_view type;
  bool tied;              // tie_word_embeddings' default
  uint64_t head_dim;      // head_dim's default; 0: hidden_size / num_attention_heads
  const char* qkv_bias;   // the key of the q, k and v biases ...
  bool qkv_default;       // ... and its default
  const char* out_bias;   // the key of o_proj's bias
  const char* mlp_bias;   // the key of the MLP's biases, or nullptr (none)
  uint64_t kv_heads = 0;  // num_key_value_heads' default; 0: num_attention_heads
  double rotary = 0;      // partial_rotary_factor's default; 0: every dimension rotates
};

constexpr RecentLlama kRecent[] = {
    // configuration_ernie4_5.py: use_bias on q, k, v, o and the MLP; head_dim 128 by default.
    {"ernie4_5", true, 128, "use_bias", false, "use_bias", "use_bias"},
    // modular_exaone4.py: no biases at all.
    {"exaone4", false, 0, nullptr, false, nullptr, nullptr},
    // configuration_glm.py, modular_glm.py: q/k/v biases by default, o and the fused gate_up without;
    // 2 K/V heads and half of each head rotated by default; head_dim 128.
    {"glm", false, 128, "attention_bias", true, nullptr, nullptr, 2, 0.5},
    // configuration_glm4.py, modular_glm4.py: GLM's, with four norms a block (below).
    {"glm4", false, 128, "attention_bias", true, nullptr, nullptr, 2, 0.5},
    // configuration_granite.py: Llama's keys; its four multipliers are scalars, not parameters.
    {"granite", false, 0, "attention_bias", false, "attention_bias", "mlp_bias"},
    // configuration_hunyuan_v1_dense.py, modular_hunyuan_v1_dense.py: Llama's attention_bias, an MLP
    // without biases whatever mlp_bias says.
    {"hunyuan_v1_dense", false, 0, "attention_bias", false, "attention_bias", nullptr},
    // configuration_olmo3.py: OLMo 2's attention_bias, no MLP bias.
    {"olmo3", false, 0, "attention_bias", false, "attention_bias", nullptr},
    // configuration_seed_oss.py: q/k/v biases by default, o's apart (attention_out_bias); head_dim 128.
    {"seed_oss", false, 128, "attention_bias", true, "attention_out_bias", "mlp_bias"},
    // configuration_smollm3.py: Llama's keys, tied by default.
    {"smollm3", true, 0, "attention_bias", false, "attention_bias", "mlp_bias"},
};

const RecentLlama& Find(const std::string& type) {
  for (const RecentLlama& f : kRecent) {
    if (f.type == type) return f;
  }
  throw std::logic_error("no Llama descendant '" + type + "' in config/hf_llama_recent.cc");
}

bool Bias(const ConfigMap& m, const char* key, bool fallback) { return key != nullptr && m.Bool(key, fallback); }

// An explicit "sliding_window": null (no window), which ConfigMap reads as an absent key.
bool NullWindow(const HfReader& r) {
  const YAML::Node& root = r.root;
  return root["sliding_window"] && root["sliding_window"].IsNull();
}

// configuration_smollm3.py: no_rope_layers[i] is 1 on a RoPE layer, 0 on a NoPE one (at least one entry
// per layer); without it every no_rope_layer_interval-th layer (default 4) is NoPE. With
// use_sliding_window and a sliding_window, the NoPE layers slide. RoPE has no parameters, so the NoPE
// layers count as the others do (their rotation's few FLOPs are still counted).
void SmolLm3Layers(HfReader& r) {
  const ConfigMap& m = r.m;
  const TransformerSpec& t = r.t;
  r.PerLayer();
  std::vector<uint64_t> rope = r.IntList("no_rope_layers", 2);
  if (!rope.empty() && rope.size() < t.n_layers) {
    throw InputError(m.Loc("no_rope_layers"),
                     "'no_rope_layers' must list at least the " + std::to_string(t.n_layers) + " layers");
  }
  const uint64_t interval = m.PositiveInt("no_rope_layer_interval", 4);
  const uint64_t window = m.PositiveInt("sliding_window", 0);
  const bool slide = m.Bool("use_sliding_window", false) && window > 0;
  r.Attention(window, 0, [&](uint64_t i) {
    const bool roped = rope.empty() ? (i + 1) % interval != 0 : rope[i] == 1;
    return slide && !roped ? AttentionKind::kSliding : AttentionKind::kFull;
  });
}

// modular_exaone4.py: sliding unless (i + 1) % sliding_window_pattern == 0 (default 4; the released
// configs spell it as a string such as "LLLG", L sliding and G full, and list layer_types too);
// every layer full when sliding_window is null. The full layers of a hybrid model take no RoPE.
void Exaone4Layers(HfReader& r) {
  const ConfigMap& m = r.m;
  if (NullWindow(r)) {
    r.UniformAttention(AttentionKind::kFull, 0);
    return;
  }
  const uint64_t window = m.PositiveInt("sliding_window", 4096);
  const YAML::Node& pattern = m.Has("sliding_window_pattern") ? m.Get("sliding_window_pattern") : YAML::Node();
  const std::string letters = pattern.IsScalar() ? pattern.Scalar() : "";
  if (!letters.empty() && letters.find_first_not_of("LG") == std::string::npos) {
    r.Attention(window, 0, [&](uint64_t i) {
      return letters[i % letters.size()] == 'L' ? AttentionKind::kSliding : AttentionKind::kFull;
    });
    return;
  }
  r.Pattern(window, m.PositiveInt("sliding_window_pattern", 4));
}

// configuration_olmo3.py: sliding (sliding_window, default 4096) unless (i + 1) % 4 == 0.
void Olmo3Layers(HfReader& r) {
  if (NullWindow(r) && !r.m.Has("layer_types")) {
    r.UniformAttention(AttentionKind::kFull, 0);
    return;
  }
  r.Pattern(r.m.PositiveInt("sliding_window", 4096), 4);
}

}  // namespace

void ReadRecentLlama(HfReader& r, const std::string& type) {
  const RecentLlama& f = Find(type);
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  if (r.kv_key.empty() && f.kv_heads > 0) t.n_kv_heads = f.kv_heads;
  t.head_dim = m.PositiveInt("head_dim", f.head_dim);
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kSwiglu;
  t.tied_embeddings = m.Bool("tie_word_embeddings", f.tied);
  r.SetBiases(Bias(m, f.qkv_bias, f.qkv_default), Bias(m, f.out_bias, false), Bias(m, f.mlp_bias, false));
  r.ReadRotaryFraction(f.rotary);
  if (type == "smollm3") {
    SmolLm3Layers(r);
  } else if (type == "olmo3") {
    // modeling_olmo3.py: OLMo 2's block, RMSNorm after each branch and q/k norms over the whole
    // projections (a·d and g·d).
    t.norm_placement = NormPlacement::kPost;
    t.qk_norm = QkNorm::kProjection;
    Olmo3Layers(r);
  } else if (type == "exaone4") {
    // modular_exaone4.py: OLMo 2's post-norm block, but q/k norms over head_dim.
    t.norm_placement = NormPlacement::kPost;
    t.qk_norm = QkNorm::kPerHead;
    Exaone4Layers(r);
  } else {
    // modular_glm4.py: post_self_attn_layernorm and post_mlp_layernorm after each branch too.
    if (type == "glm4") t.norm_placement = NormPlacement::kSandwich;
    // modular_hunyuan_v1_dense.py: query_layernorm and key_layernorm over head_dim, after RoPE.
    if (type == "hunyuan_v1_dense") t.qk_norm = QkNorm::kPerHead;
    r.UniformAttention(AttentionKind::kFull, 0);
  }
}

}  // namespace tally
