// Gemma 3n's config.json (transformers configuration_gemma3n.py): gemma3n_text (Gemma3nTextConfig,
// Gemma3nForCausalLM) and the gemma3n wrapper (Gemma3nConfig, Gemma3nForConditionalGeneration),
// whose text_config, audio_config and vision_config fall back to their classes' defaults when
// absent, as Gemma3nConfig.__post_init__ builds them. Gemma3nSpec (config/model_spec.h) says what
// is modelled; graph/build_gemma3n.cc builds it.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "config/hf_families.h"
#include "config/hf_reader.h"
#include "config/yaml_reader.h"
#include "util/checked_math.h"

namespace tally {
namespace {

const std::vector<std::string> kWrapperKeys = {"text_config", "vision_config", "audio_config"};
const std::vector<std::string> kTextKeys = {"vocab_size",
                                            "hidden_size",
                                            "intermediate_size",
                                            "num_hidden_layers",
                                            "num_attention_heads",
                                            "num_key_value_heads",
                                            "head_dim",
                                            "hidden_activation",
                                            "max_position_embeddings",
                                            "attention_bias",
                                            "sliding_window",
                                            "tie_word_embeddings",
                                            "vocab_size_per_layer_input",
                                            "hidden_size_per_layer_input",
                                            "altup_num_inputs",
                                            "altup_active_idx",
                                            "num_kv_shared_layers",
                                            "laurel_rank",
                                            "activation_sparsity_pattern"};
const std::vector<std::string> kAudioKeys = {
    "hidden_size",           "conf_num_hidden_layers", "conf_num_attention_heads",
    "input_feat_size",       "conf_conv_kernel_size",  "sscp_conv_channel_size",
    "sscp_conv_kernel_size", "sscp_conv_stride_size",  "vocab_size"};
const std::vector<std::string> kVisionKeys = {"hidden_size", "vocab_size", "architecture", "model_args"};
// The timm vision towers whose tensors tally derives (graph/build_mobilenetv5.cc).
const char* const kCountedTower = "mobilenetv5_300m_enc";

// A sub-config the file gives (not null), else an empty map: its class's defaults.
YAML::Node SubConfig(const ConfigMap& m, const std::string& key) {
  if (m.Has(key) && !m.Get(key).IsNull()) {
    if (!m.Get(key).IsMap()) throw InputError(m.Loc(key), "'" + key + "' must be a map, not " + Describe(m.Get(key)));
    return m.Get(key);
  }
  return YAML::Node(YAML::NodeType::Map);
}

// A list of `size` positive whole numbers (`size` 0: any length), or `fallback` when absent.
std::vector<uint64_t> Ints(const ConfigMap& m, const std::string& key, size_t size, std::vector<uint64_t> fallback) {
  if (!m.Has(key) || m.Get(key).IsNull()) return fallback;
  const YAML::Node& list = m.Get(key);
  if (!list.IsSequence() || (size > 0 && list.size() != size)) {
    throw InputError(m.Loc(key), "'" + key + "' must be a list of " + std::to_string(size) + " whole numbers, not " +
                                     Describe(list));
  }
  std::vector<uint64_t> out;
  for (const YAML::Node& v : list) out.push_back(ReadPositiveInt(v, m.file(), "an entry of '" + key + "'"));
  return out;
}

// sscp_conv_kernel_size and sscp_conv_stride_size: two (time, frequency) pairs.
std::vector<std::vector<uint64_t>> Pairs(const ConfigMap& m, const std::string& key, uint64_t fallback) {
  std::vector<std::vector<uint64_t>> out(2, {fallback, fallback});
  if (!m.Has(key) || m.Get(key).IsNull()) return out;
  const YAML::Node& list = m.Get(key);
  if (!list.IsSequence() || list.size() != 2) {
    throw InputError(m.Loc(key), "'" + key + "' must list the two convolutions' (time, frequency) pairs");
  }
  for (size_t i = 0; i < 2; ++i) {
    if (!list[i].IsSequence() || list[i].size() != 2) {
      throw InputError(LocOf(list[i], m.file()), "an entry of '" + key + "' must be a (time, frequency) pair");
    }
    for (size_t j = 0; j < 2; ++j) out[i][j] = ReadPositiveInt(list[i][j], m.file(), "an entry of '" + key + "'");
  }
  return out;
}

// Gemma3nAudioConfig's defaults where the file is silent.
void ReadAudio(const YAML::Node& node, const std::string& file, Gemma3nSpec& s) {
  const ConfigMap a(node, file, "audio_config", kAudioKeys, UnknownKeys::kIgnore);
  s.audio_width = a.PositiveInt("hidden_size", 1536);
  s.audio_layers = a.PositiveInt("conf_num_hidden_layers", 12);
  s.audio_heads = a.PositiveInt("conf_num_attention_heads", 8);
  if (s.audio_width % s.audio_heads != 0) {
    throw InputError(a.Has("conf_num_attention_heads") ? a.Loc("conf_num_attention_heads") : a.MapLoc(),
                     "the audio width (" + std::to_string(s.audio_width) + ") is not divisible by the " +
                         std::to_string(s.audio_heads) + " attention heads");
  }
  s.audio_mel_bins = a.PositiveInt("input_feat_size", 128);
  s.audio_conv_kernel = a.PositiveInt("conf_conv_kernel_size", 5);
  s.audio_vocab = a.PositiveInt("vocab_size", 128);
  s.sscp_channels = Ints(a, "sscp_conv_channel_size", 2, {128, 32});
  s.sscp_kernels = Pairs(a, "sscp_conv_kernel_size", 3);
  s.sscp_strides = Pairs(a, "sscp_conv_stride_size", 2);
  uint64_t f = s.audio_mel_bins;
  for (size_t i = 0; i < 2; ++i) {  // the frequency axis, padded by one on each side
    if (f + 2 < s.sscp_kernels[i][1]) {
      throw InputError(
          a.Has("sscp_conv_kernel_size") ? a.Loc("sscp_conv_kernel_size") : a.MapLoc(),
          "the subsampling convolution's kernel is wider than its " + std::to_string(f) + " mel bins (padded by 2)");
    }
    f = (f + 2 - s.sscp_kernels[i][1]) / s.sscp_strides[i][1] + 1;
  }
}

void ReadVision(const YAML::Node& node, const std::string& file, Gemma3nSpec& s) {
  const ConfigMap v(node, file, "vision_config", kVisionKeys, UnknownKeys::kIgnore);
  s.vision_width = v.PositiveInt("hidden_size", 2048);
  s.vision_vocab = v.PositiveInt("vocab_size", 128);
  s.vision_architecture = v.String("architecture", "mobilenetv5_300m_enc");
  // TimmWrapperModel passes model_args to timm.create_model as keyword arguments, which may reshape
  // the tower: only none (null or {}) keeps the registered architecture.
  const bool plain = !v.Has("model_args") || v.Get("model_args").IsNull() ||
                     (v.Get("model_args").IsMap() && v.Get("model_args").size() == 0);
  s.vision_tower_counted = plain && s.vision_architecture == kCountedTower;
}

// Gemma3nTextConfig: sizes, the gated GELU MLP, four RMSNorms per block with q/k norms of
// head_dim and a weightless v_norm, RoPE, the per-layer and AltUp sizes; layer_types, else full
// attention on every fifth layer ((i + 1) % 5 == 0) and sliding_window on the rest.
void ReadText(HfReader& r, const std::string& context) {
  const ConfigMap g(r.root, r.m.file(), context, kTextKeys, UnknownKeys::kIgnore);
  TransformerSpec& t = r.t;
  t.vocab_size = g.PositiveInt("vocab_size", 262'400);
  t.d_model = g.PositiveInt("hidden_size", 2048);
  t.n_layers = g.PositiveInt("num_hidden_layers", 35);
  t.n_heads = g.PositiveInt("num_attention_heads", 8);
  t.n_kv_heads = g.PositiveInt("num_key_value_heads", 2);
  r.kv_key = "num_key_value_heads";
  t.head_dim = g.PositiveInt("head_dim", 256);
  if (t.d_model % t.n_heads != 0) {  // Gemma3nTextConfig.validate_architecture
    throw InputError(g.Has("num_attention_heads") ? g.Loc("num_attention_heads") : g.MapLoc(),
                     "the hidden size (" + std::to_string(t.d_model) + ") is not a multiple of the " +
                         std::to_string(t.n_heads) + " attention heads");
  }
  t.context_length = g.PositiveInt("max_position_embeddings", 32'768);
  const std::string act = g.String("hidden_activation", "gelu_pytorch_tanh");
  if (act.rfind("gelu", 0) != 0) {
    throw InputError(g.Loc("hidden_activation"), "unsupported hidden_activation '" + act + "'; tally reads the GELUs");
  }
  t.mlp = MlpKind::kGeglu;
  const bool bias = g.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  t.position = PositionKind::kRope;
  t.norm = NormKind::kRmsNorm;
  t.norm_placement = NormPlacement::kSandwich;
  t.qk_norm = QkNorm::kPerHead;
  t.v_norm = true;
  t.embed_scale = true;  // Gemma3nTextScaledWordEmbedding: · sqrt(h)
  t.tied_embeddings = r.outer_tied.value_or(g.Bool("tie_word_embeddings", true));
  Gemma3nSpec& s = t.gemma3n;
  s.per_layer_vocab = g.PositiveInt("vocab_size_per_layer_input", 262'144);
  s.per_layer_width = g.PositiveInt("hidden_size_per_layer_input", 256);
  s.altup_inputs = g.PositiveInt("altup_num_inputs", 4);
  if (g.NonNegativeInt("altup_active_idx", 0) != 0) {
    // Any index reads the same weights; tally's nodes assume the first, as every config has it.
    throw InputError(g.Loc("altup_active_idx"), "altup_active_idx other than 0 is not modelled");
  }
  s.laurel_rank = g.PositiveInt("laurel_rank", 64);
  const uint64_t window = g.PositiveInt("sliding_window", 512);
  r.Attention(window, 0, [](uint64_t i) { return (i + 1) % 5 == 0 ? AttentionKind::kFull : AttentionKind::kSliding; });
}

// Reads the gemma3n wrapper's towers, then moves `r` onto its text_config.
void Unwrap(HfReader& r) {
  const std::string file = r.m.file();
  const ConfigMap w(r.root, file, "config.json", kWrapperKeys, UnknownKeys::kIgnore);
  r.outer_tied =
      r.m.Has("tie_word_embeddings") ? std::optional<bool>(r.m.Bool("tie_word_embeddings", true)) : std::nullopt;
  ReadAudio(SubConfig(w, "audio_config"), file, r.t.gemma3n);
  ReadVision(SubConfig(w, "vision_config"), file, r.t.gemma3n);
  r.root = SubConfig(w, "text_config");
  r.m = HfReader::Map(r.root, file, "text_config");
  if (!r.t.dtype) r.t.dtype = r.Dtype();
  if (!r.t.gemma3n.vision_tower_counted) {
    r.spec.notes.push_back("the vision tower (timm " + r.t.gemma3n.vision_architecture +
                           (r.t.gemma3n.vision_architecture == kCountedTower ? ", with model_args" : "") +
                           ") is not counted: tally derives " + kCountedTower +
                           " alone, without model_args; it counts the language model, the audio tower and both "
                           "embedders");
  }
}

void ReadGemma3nText(HfReader& r, const std::string& type) {
  if (type == "gemma3n") Unwrap(r);
  ReadText(r, type == "gemma3n" ? "text_config" : "config.json");
}

// Each layer's MLP width (intermediate_size: one, or one per layer), Gaussian top-k
// (activation_sparsity_pattern: one per layer; by default 0.95 on the first 10 of more than 10)
// and KV sharing (the last num_kv_shared_layers read the K and V of the last earlier layer of
// their attention type: Gemma3nTextAttention.kv_shared_layer_index).
void PerLayer(const HfReader& r, const std::string& context, TransformerSpec& t) {
  const ConfigMap g(r.root, r.m.file(), context, kTextKeys, UnknownKeys::kIgnore);
  const uint64_t n = t.n_layers;
  std::vector<uint64_t> widths(n, 16'384);
  if (g.Has("intermediate_size") && g.Get("intermediate_size").IsSequence()) {
    widths = Ints(g, "intermediate_size", n, {});
  } else {
    widths.assign(n, g.PositiveInt("intermediate_size", 16'384));
  }
  t.d_ff = widths.front();
  std::vector<bool> sparse(n, false);
  if (g.Has("activation_sparsity_pattern") && !g.Get("activation_sparsity_pattern").IsNull()) {
    const YAML::Node& list = g.Get("activation_sparsity_pattern");
    if (!list.IsSequence() || list.size() != n) {
      throw InputError(g.Loc("activation_sparsity_pattern"), "'activation_sparsity_pattern' must list the " +
                                                                 std::to_string(n) + " layers' sparsities, not " +
                                                                 Describe(list));
    }
    for (size_t i = 0; i < n; ++i) {
      double v = -1;
      try {
        v = list[i].as<double>();
      } catch (const YAML::Exception&) {
      }
      if (!(v >= 0 && v < 1)) {
        throw InputError(LocOf(list[i], g.file()), "a sparsity must be a number in [0, 1), not " + Describe(list[i]));
      }
      sparse[i] = v > 0;
    }
  } else if (n > 10) {
    std::fill(sparse.begin(), sparse.begin() + 10, true);
  }
  const uint64_t shared = g.NonNegativeInt("num_kv_shared_layers", 15);
  if (shared >= n) {
    throw InputError(g.Has("num_kv_shared_layers") ? g.Loc("num_kv_shared_layers") : g.MapLoc(),
                     "num_kv_shared_layers (" + std::to_string(shared) + ") must be below num_hidden_layers (" +
                         std::to_string(n) + ")");
  }
  std::vector<LayerSpec> layers;
  for (const auto& [spec, count] : LayerRuns(t)) layers.insert(layers.end(), count, spec);
  const uint64_t first_shared = n - shared;
  for (uint64_t i = 0; i < n; ++i) {
    LayerSpec& l = layers[i];
    l.d_ff = widths[i] == t.d_ff ? 0 : widths[i];
    l.sparse_gate = sparse[i];
    l.kv_shared = i >= first_shared && first_shared > 0;
    if (!l.kv_shared) continue;
    bool producer = false;
    for (uint64_t j = 0; j < first_shared && !producer; ++j) producer = layers[j].attention == l.attention;
    if (!producer) {
      throw InputError(g.Has("num_kv_shared_layers") ? g.Loc("num_kv_shared_layers") : g.MapLoc(),
                       "layer " + std::to_string(i) +
                           " shares the K and V of an earlier layer of its type, and none "
                           "precedes the shared layers");
    }
  }
  t.layer_specs = std::move(layers);
}

}  // namespace

ModelSpec ReadHfGemma3n(const YAML::Node& root, const std::string& file, const std::string& type) {
  HfReader r(root, file);
  ModelSpec spec = r.Read(type, ReadGemma3nText);
  PerLayer(r, type == "gemma3n" ? "text_config" : "config.json", spec.transformer);
  return spec;
}

}  // namespace tally
