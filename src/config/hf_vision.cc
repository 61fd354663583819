// The vision towers of multimodal configs, read from vision_config as transformers builds them:
// configuration_siglip.py (SiglipVisionConfig and its defaults) and configuration_gemma3.py
// (Gemma3Config.mm_tokens_per_image, default 256).
#include "config/hf_vision.h"

#include <cmath>

#include "config/yaml_reader.h"

namespace tally {
namespace {

const std::vector<std::string> kVisionKeys = {
    "model_type",          "hidden_size",  "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_channels",        "image_size",   "patch_size",        "hidden_act",        "vision_use_head",
    "attention_dropout"};

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
  const YAML::Node& node = outer.Get("vision_config");
  if (!node.IsMap()) throw InputError(outer.Loc("vision_config"), "'vision_config' must be a map, got " + Describe(node));
  const ConfigMap m(node, file, "vision_config", kVisionKeys, UnknownKeys::kIgnore);
  const std::string type = m.String("model_type", "siglip_vision_model");
  if (type != "siglip_vision_model") {
    throw InputError(m.Loc("model_type"),
                     "unsupported vision model_type '" + type + "'; tally reads siglip_vision_model for gemma3");
  }
  // SiglipVisionTransformer builds its attention-pooling head unless vision_use_head is false;
  // Gemma 3 turns it off and never calls it.
  if (m.Bool("vision_use_head", true)) {
    throw InputError(m.Has("vision_use_head") ? m.Loc("vision_use_head") : m.MapLoc(),
                     "SigLIP's attention-pooling head is not modelled; tally reads 'vision_use_head: false' "
                     "(as Gemma 3 has it)");
  }
  const std::string act = m.String("hidden_act", "gelu_pytorch_tanh");
  if (act.rfind("gelu", 0) != 0) {
    throw InputError(m.Loc("hidden_act"), "unsupported hidden_act '" + act + "' in 'vision_config'; tally reads gelu");
  }
  VisionSpec v;
  v.d_model = m.PositiveInt("hidden_size", 768);
  v.d_ff = m.PositiveInt("intermediate_size", 3072);
  v.n_layers = m.PositiveInt("num_hidden_layers", 12);
  v.n_heads = m.PositiveInt("num_attention_heads", 12);
  v.channels = m.PositiveInt("num_channels", 3);
  v.image_size = m.PositiveInt("image_size", 224);
  v.patch_size = m.PositiveInt("patch_size", 16);
  if (v.n_layers > 100'000) throw InputError(m.Loc("num_hidden_layers"), "more than 100000 layers");
  if (v.d_model % v.n_heads != 0) {
    throw InputError(m.Has("num_attention_heads") ? m.Loc("num_attention_heads") : m.MapLoc(),
                     "the vision hidden size (" + std::to_string(v.d_model) +
                         ") is not divisible by the number of heads (" + std::to_string(v.n_heads) + ")");
  }
  // SiglipVisionEmbeddings: a 'valid' convolution of stride patch_size, (image_size / patch_size)²
  // patches. Gemma3MultiModalProjector pools that grid with kernel = stride = patches per side /
  // sqrt(mm_tokens_per_image).
  const uint64_t side = v.image_size / v.patch_size;
  if (side == 0 || v.image_size % v.patch_size != 0) {
    throw InputError(m.Has("patch_size") ? m.Loc("patch_size") : m.MapLoc(),
                     "the image size (" + std::to_string(v.image_size) + ") is not a multiple of the patch size (" +
                         std::to_string(v.patch_size) + ")");
  }
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

}  // namespace tally
