// The vision towers of multimodal configs, read from vision_config as transformers builds them:
// configuration_siglip.py (SiglipVisionConfig and its defaults) with configuration_gemma3.py
// (Gemma3Config.mm_tokens_per_image, default 256), configuration_llama4.py, and
// configuration_clip.py with configuration_llava.py.
#include "config/hf_vision.h"

#include <array>
#include <cmath>

#include "config/yaml_reader.h"

namespace tally {
namespace {

const std::vector<std::string> kVisionKeys = {
    "model_type",          "hidden_size",          "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_channels",         "image_size",        "patch_size",
    "hidden_act",          "vision_use_head",      "attention_dropout", "pixel_shuffle_ratio",
    "projector_input_dim", "projector_output_dim", "vision_output_dim", "multi_modal_projector_bias"};

// vision_config as a checked map.
ConfigMap VisionConfig(const ConfigMap& outer) {
  const YAML::Node& node = outer.Get("vision_config");
  if (!node.IsMap())
    throw InputError(outer.Loc("vision_config"), "'vision_config' must be a map, got " + Describe(node));
  return ConfigMap(node, outer.file(), "vision_config", kVisionKeys, UnknownKeys::kIgnore);
}

SourceLoc LocOr(const ConfigMap& m, const std::string& key) { return m.Has(key) ? m.Loc(key) : m.MapLoc(); }

// The ViT sizes both towers name alike, with `defaults` (hidden, f, layers, heads, image, patch)
// where a key is absent; without defaults every size is required.
void ReadSizes(const ConfigMap& m, const std::array<uint64_t, 6>* defaults, VisionSpec& v) {
  auto size = [&](const char* key, size_t i) {
    return defaults ? m.PositiveInt(key, (*defaults)[i]) : m.PositiveInt(key);
  };
  const std::string act = m.String("hidden_act", "gelu");
  if (act.rfind("gelu", 0) != 0) {
    throw InputError(m.Loc("hidden_act"), "unsupported hidden_act '" + act + "' in 'vision_config'; tally reads gelu");
  }
  v.d_model = size("hidden_size", 0);
  v.d_ff = size("intermediate_size", 1);
  v.n_layers = size("num_hidden_layers", 2);
  v.n_heads = size("num_attention_heads", 3);
  v.channels = m.PositiveInt("num_channels", 3);
  v.image_size = size("image_size", 4);
  v.patch_size = size("patch_size", 5);
  if (v.n_layers > 100'000) throw InputError(m.Loc("num_hidden_layers"), "more than 100000 layers");
  if (v.d_model % v.n_heads != 0) {
    throw InputError(LocOr(m, "num_attention_heads"), "the vision hidden size (" + std::to_string(v.d_model) +
                                                          ") is not divisible by the number of heads (" +
                                                          std::to_string(v.n_heads) + ")");
  }
  if (v.image_size / v.patch_size == 0 || v.image_size % v.patch_size != 0) {
    throw InputError(LocOr(m, "patch_size"), "the image size (" + std::to_string(v.image_size) +
                                                 ") is not a multiple of the patch size (" +
                                                 std::to_string(v.patch_size) + ")");
  }
}

// The whole square root of n, else 0: the pooled grid's side from mm_tokens_per_image.
uint64_t ExactSqrt(uint64_t n) {
  auto r = static_cast<uint64_t>(std::sqrt(static_cast<double>(n)));
  while (r * r > n) --r;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r * r == n ? r : 0;
}

}  // namespace

VisionSpec ReadGemma3Vision(const YAML::Node& root, const std::string& file) {
  const ConfigMap outer(root, file, "config.json", {"vision_config", "mm_tokens_per_image"}, UnknownKeys::kIgnore);
  const ConfigMap m = VisionConfig(outer);
  const std::string type = m.String("model_type", "siglip_vision_model");
  if (type != "siglip_vision_model") {
    throw InputError(m.Loc("model_type"),
                     "unsupported vision model_type '" + type + "'; tally reads siglip_vision_model for gemma3");
  }
  // SiglipVisionTransformer builds its attention-pooling head unless vision_use_head is false;
  // Gemma 3 turns it off and never calls it.
  if (m.Bool("vision_use_head", true)) {
    throw InputError(LocOr(m, "vision_use_head"),
                     "SigLIP's attention-pooling head is not modelled; tally reads 'vision_use_head: false' "
                     "(as Gemma 3 has it)");
  }
  VisionSpec v;
  const std::array<uint64_t, 6> siglip = {768, 3072, 12, 12, 224, 16};  // SiglipVisionConfig's defaults
  ReadSizes(m, &siglip, v);
  // SiglipVisionEmbeddings: a 'valid' convolution of stride patch_size, (image_size / patch_size)²
  // patches. Gemma3MultiModalProjector pools that grid with kernel = stride = patches per side /
  // sqrt(mm_tokens_per_image).
  const uint64_t side = v.image_size / v.patch_size;
  v.tokens_per_image = outer.PositiveInt("mm_tokens_per_image", 256);
  const uint64_t pooled = ExactSqrt(v.tokens_per_image);
  if (pooled == 0 || side % pooled != 0) {
    throw InputError(outer.Has("mm_tokens_per_image") ? outer.Loc("mm_tokens_per_image") : outer.MapLoc(),
                     "mm_tokens_per_image (" + std::to_string(v.tokens_per_image) +
                         ") must be the square of a divisor of the " + std::to_string(side) +
                         " patches per side, for the average pool to tile the patch grid");
  }
  return v;
}

// configuration_llama4.py (Llama4VisionConfig) and modeling_llama4.py; the released configs state
// every size, and tally requires them.
VisionSpec ReadLlama4Vision(const YAML::Node& root, const std::string& file) {
  const ConfigMap outer(root, file, "config.json", {"vision_config"}, UnknownKeys::kIgnore);
  const ConfigMap m = VisionConfig(outer);
  const std::string type = m.String("model_type", "llama4_vision_model");
  if (type != "llama4_vision_model") {
    throw InputError(m.Loc("model_type"),
                     "unsupported vision model_type '" + type + "'; tally reads llama4_vision_model for llama4");
  }
  if (m.Bool("multi_modal_projector_bias", false)) {
    throw InputError(m.Loc("multi_modal_projector_bias"), "a projector bias is not modelled (Llama 4 has none)");
  }
  VisionSpec v;
  v.kind = VisionKind::kLlama4;
  v.patch_bias = false;
  v.class_token = true;
  v.pre_norm = true;
  v.rope = true;
  ReadSizes(m, nullptr, v);
  // pixel_shuffle_ratio r merges 1/r x 1/r patches into one token of d / r² features.
  const double ratio = m.Fraction("pixel_shuffle_ratio", 0.5);
  // A 1/r past 1e15 divides no patch count; 0 marks it, and the bound keeps llround in range.
  const double inverse = 1.0 / ratio;
  v.shuffle = inverse < 1e15 ? static_cast<uint64_t>(std::llround(inverse)) : 0;
  const uint64_t side = v.image_size / v.patch_size;
  if (v.shuffle == 0 || static_cast<double>(v.shuffle) * ratio != 1.0 || side % v.shuffle != 0) {
    throw InputError(LocOr(m, "pixel_shuffle_ratio"), "pixel_shuffle_ratio must be 1/k for a k that divides the " +
                                                          std::to_string(side) + " patches per side");
  }
  // Llama4VisionPixelShuffleMLP: fc1 reads intermediate_size features, which the shuffle must give.
  if (v.d_ff != v.d_model * v.shuffle * v.shuffle) {
    throw InputError(LocOr(m, "intermediate_size"), "the vision adapter reads intermediate_size (" +
                                                        std::to_string(v.d_ff) +
                                                        ") features, but the pixel shuffle "
                                                        "gives " +
                                                        std::to_string(v.d_model * v.shuffle * v.shuffle));
  }
  v.adapter_width = m.PositiveInt("projector_input_dim", 4096);
  for (const char* key : {"projector_output_dim", "vision_output_dim"}) {
    if (m.PositiveInt(key, 4096) != v.adapter_width) {
      throw InputError(LocOr(m, key), std::string("'") + key +
                                          "' differs from 'projector_input_dim': the adapter and projector "
                                          "shapes do not chain");
    }
  }
  v.tokens_per_image = side / v.shuffle * (side / v.shuffle);
  return v;
}

// configuration_llava.py (LlavaConfig: vision_feature_layer -2, strategy "default",
// projector_hidden_act "gelu", multimodal_projector_bias true) and configuration_clip.py
// (CLIPVisionConfig's defaults).
VisionSpec ReadLlavaVision(const YAML::Node& root, const std::string& file) {
  const ConfigMap outer(root, file, "config.json",
                        {"vision_config", "vision_feature_layer", "vision_feature_select_strategy",
                         "projector_hidden_act", "multimodal_projector_bias"},
                        UnknownKeys::kIgnore);
  const ConfigMap m = VisionConfig(outer);
  const std::string type = m.String("model_type", "clip_vision_model");
  if (type != "clip_vision_model") {
    throw InputError(m.Loc("model_type"),
                     "unsupported vision model_type '" + type + "'; tally reads clip_vision_model for llava");
  }
  VisionSpec v;
  v.kind = VisionKind::kClip;
  v.patch_bias = false;
  v.class_token = true;
  v.pre_norm = true;
  const std::array<uint64_t, 6> clip = {768, 3072, 12, 12, 224, 32};  // CLIPVisionConfig's defaults
  ReadSizes(m, &clip, v);
  if (outer.String("projector_hidden_act", "gelu").rfind("gelu", 0) != 0) {
    throw InputError(outer.Loc("projector_hidden_act"), "unsupported projector_hidden_act; tally reads gelu");
  }
  if (!outer.Bool("multimodal_projector_bias", true)) {
    throw InputError(outer.Loc("multimodal_projector_bias"), "a projector without biases is not modelled yet");
  }
  // hidden_states has n_layers + 1 entries (the embeddings', then each layer's): -2 is the output of
  // the second-to-last layer.
  int64_t layer = -2;
  if (outer.Has("vision_feature_layer")) {
    const YAML::Node& node = outer.Get("vision_feature_layer");
    try {
      layer = node.IsScalar() ? node.as<int64_t>() : 0;
    } catch (const YAML::Exception&) {
      layer = 0;
    }
    const auto n = static_cast<int64_t>(v.n_layers);
    if (!node.IsScalar() || layer == 0 || layer < -n || layer > n) {
      throw InputError(outer.Loc("vision_feature_layer"), "vision_feature_layer must be one layer, from -" +
                                                              std::to_string(n) + " to " + std::to_string(n) +
                                                              " (not 0), got " + Describe(node));
    }
  }
  v.live_layers = static_cast<uint64_t>(layer < 0 ? static_cast<int64_t>(v.n_layers) + 1 + layer : layer);
  const size_t strategy = outer.Choice("vision_feature_select_strategy", {"default", "full"}, 0);
  const uint64_t side = v.image_size / v.patch_size;
  v.tokens_per_image = side * side + (strategy == 1 ? 1 : 0);
  return v;
}

}  // namespace tally
