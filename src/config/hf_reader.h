// The state a Hugging Face transformer config.json is read into, and the steps the family readers
// (config/hf_families.h) share: sizes, K/V heads, rotary, per-layer attention and MoE, Finish.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "config/model_spec.h"
#include "config/yaml_reader.h"
#include "util/dtype.h"

namespace tally {

class HfReader;

// One family's reader: fills r.t (and r.spec's notes) from r.m; `type` is the config's model_type.
using HfFamilyRead = void (*)(HfReader& r, const std::string& type);

// HF config defaults when a key is absent: the Python config classes' defaults.
constexpr uint64_t kHfDefaultContext = 2048;

// In one of HfSizeDefaults' five ReadSizes fields: the family reads that key its own way (or not at all).
constexpr uint64_t kHfOwnKey = UINT64_MAX;

// A family's defaults (its configuration_*.py class's) for the sizes most families name alike, used
// when the config omits the key; 0 where the key is required.
struct HfSizeDefaults {
  uint64_t vocab = 0;         // vocab_size
  uint64_t hidden = 0;        // hidden_size
  uint64_t intermediate = 0;  // intermediate_size
  uint64_t layers = 0;        // num_hidden_layers
  uint64_t heads = 0;         // num_attention_heads
  // ReadCommonSizes only:
  uint64_t kv_heads = 0;  // the K/V heads under any spelling (KvHeads); 0: num_attention_heads
  uint64_t context = 0;   // max_position_embeddings; 0: kHfDefaultContext, with a note (Context)
};

class HfReader {
 public:
  HfReader(const YAML::Node& root, const std::string& file);

  // The spec's name, description and dtype, then `family`, then Finish().
  ModelSpec Read(const std::string& model_type, HfFamilyRead family);

  // A ConfigMap over `node` that keeps the keys some family reader uses (hf_reader.cc), but no null one.
  static ConfigMap Map(const YAML::Node& node, const std::string& file, const std::string& context);

  std::optional<DType> Dtype() const;
  // `key`'s positive value; else the family's own `fallback`, or kHfDefaultContext with a note.
  uint64_t Context(const char* key, uint64_t fallback = kHfDefaultContext);
  void SetBiases(bool qkv, bool out, bool mlp);
  // The first of `keys` the config has (else the first, as a missing key), a positive number.
  uint64_t Size(std::initializer_list<const char*> keys);
  // The key/value heads under any of their spellings; `heads` when none is given (multi-head).
  uint64_t KvHeads(uint64_t heads);
  // partial_rotary_factor at the top level or, in transformers v5, inside rope_parameters; 0 means
  // no rotated dimensions.
  void ReadRotaryFraction(double fallback);
  // vocab_size, hidden_size, intermediate_size, num_hidden_layers and num_attention_heads, in that
  // order, each else `d`'s default (none that is kHfOwnKey); for a family that reads the rest its own way.
  void ReadSizes(const HfSizeDefaults& d);
  // The sizes most families name alike (Llama, Phi, GPT-NeoX): ReadSizes, then the K/V heads and
  // max_position_embeddings; and rotary positions.
  void ReadCommonSizes(const HfSizeDefaults& d = {});
  // A positive number, or a list of one per layer that must all be equal (Hunyuan's moe_topk); else
  // `fallback`, or a missing key when it is 0.
  uint64_t UniformInt(const std::string& key, uint64_t fallback = 0) const;
  // A list of whole numbers (mlp_only_layers, moe_layers, no_rope_layers), each < `below`.
  std::vector<uint64_t> IntList(const std::string& key, uint64_t below) const;
  // Per-layer patterns are spelled out layer by layer: a bound keeps a corrupt depth from
  // exhausting memory.
  void PerLayer() const;
  // Every layer alike (unless layer_types says otherwise): full, sliding(window) or latent.
  void UniformAttention(AttentionKind kind, uint64_t window);
  // Each layer's attention: `layer_types` when the config has it, else `rule(i)`.
  template <class Rule>
  void Attention(uint64_t window, uint64_t chunk, Rule rule);
  // Sliding on every layer but each `pattern`-th (Gemma 2 with 2, Gemma 3 with 6, Cohere2 with 4).
  void Pattern(uint64_t window, uint64_t pattern);
  void ReadMoe(const char* experts_key);
  // DeepSeek's experts (modeling_deepseek_v3.py, and GLM-4.5's and dots.llm1's copies of it):
  // n_routed_experts of moe_intermediate_size, n_shared_experts as one always-active MLP of their
  // summed width, the first first_k_dense_replace layers dense (intermediate_size), then MoE on
  // every moe_layer_freq-th when `layer_freq` (DeepSeek's own; the copies have no such key).
  void ReadDeepSeekMoe(bool layer_freq);
  // The first entry of `architectures`, or "" when the config has none.
  std::string Architecture() const;
  // The feed-forward activation of an encoder: GELU (any of transformers' GELU names) or ReLU.
  MlpKind EncoderActivation(const char* key);
  // A gated MLP that tally reads with SiLU only: `hidden_act` (default silu) must be silu; SwiGLU.
  void SiluGatedMlp();

  // What the family readers read and write.
  YAML::Node root;  // the map `m` reads (a wrapper's text_config once unwrapped)
  ConfigMap m;
  ModelSpec spec;
  TransformerSpec t;
  double rotary_fraction = 0;
  std::optional<bool> outer_tied;  // tie_word_embeddings of a multimodal wrapper
  bool llama_defaults = false;     // LLaVA's text_config: LlamaConfig's defaults apply
  std::string kv_key;              // the key that gave the K/V heads, for errors
  std::vector<bool> moe;           // each layer's MoE, when they differ
  // Entries of layer_types that name a mixer other than attention (Qwen3-Next's "linear_attention"),
  // set by the family reader before Attention(); and each layer's mixer, when they differ.
  std::vector<std::pair<std::string, MixerKind>> mixer_types;
  std::vector<MixerKind> mixers;
  std::vector<bool> mlps;  // whether each layer has an MLP, when some have none (Nemotron-H)

 private:
  std::string Name() const;
  void SetLayerKinds(const std::vector<AttentionKind>& kinds, uint64_t window, uint64_t chunk);
  std::vector<AttentionKind> LayerTypes();
  std::string MixerTypeNames() const;  // " and chunked_attention", with mixer_types before the "and"
  void Finish();
  void Layers();

  bool no_rotary_ = false;
  AttentionKind uniform_ = AttentionKind::kFull;  // every layer's, when kinds_ is empty
  std::vector<AttentionKind> kinds_;
  uint64_t window_ = 0, chunk_ = 0;
};

template <class Rule>
void HfReader::Attention(uint64_t window, uint64_t chunk, Rule rule) {
  PerLayer();
  std::vector<AttentionKind> kinds;
  if (m.Has("layer_types")) {
    kinds = LayerTypes();
  } else {
    kinds.assign(t.n_layers, AttentionKind::kFull);
    for (uint64_t i = 0; i < t.n_layers; ++i) kinds[i] = rule(i);
  }
  SetLayerKinds(kinds, window, chunk);
}

// A table reader (config/hf_families.h) for a transformer family read by `Family`.
template <HfFamilyRead Family>
ModelSpec ReadHfTransformer(const YAML::Node& root, const std::string& file, const std::string& type) {
  return HfReader(root, file).Read(type, Family);
}

}  // namespace tally
