// Issue 30's vision towers, read from vision_config (and the wrapper's keys beside it) as
// transformers builds them; each reader names its configuration and modeling files. The defaults
// are the configuration classes'; what tally does not model exactly is an InputError at its key.
#include <algorithm>
#include <string>
#include <vector>

#include "config/hf_vision.h"
#include "config/yaml_reader.h"

namespace tally {
namespace {

const std::vector<std::string> kKeys = {"model_type",
                                        "depth",
                                        "embed_dim",
                                        "hidden_size",
                                        "mlp_ratio",
                                        "num_heads",
                                        "in_chans",
                                        "in_channels",
                                        "patch_size",
                                        "spatial_merge_size",
                                        "temporal_patch_size",
                                        "hidden_act",
                                        "intermediate_size",
                                        "out_hidden_size",
                                        "window_size",
                                        "fullatt_block_indexes",
                                        "num_position_embeddings",
                                        "deepstack_visual_indexes",
                                        "num_hidden_layers",
                                        "num_attention_heads",
                                        "num_channels",
                                        "image_size",
                                        "head_dim",
                                        "attention_bias",
                                        "use_qk_norm",
                                        "norm_type",
                                        "layer_scale_init_value",
                                        "use_mean_pooling",
                                        "use_absolute_position_embeddings",
                                        "max_num_tiles",
                                        "num_global_layers",
                                        "intermediate_layers_indices",
                                        "vision_output_dim",
                                        "supported_aspect_ratios",
                                        "max_aspect_ratio_id",
                                        "projection_dropout",
                                        "use_mask_token",
                                        "attention_heads"};

// The outer config's keys the towers read beside vision_config.
const std::vector<std::string> kOuterKeys = {
    "vision_config",        "spatial_merge_size", "projector_hidden_act", "multimodal_projector_bias",
    "vision_feature_layer", "scale_factor",       "downsample_ratio",     "vision_feature_select_strategy"};

SourceLoc LocOr(const ConfigMap& m, const std::string& key) { return m.Has(key) ? m.Loc(key) : m.MapLoc(); }

// vision_config as a checked map whose model_type (absent: the first of `types`) is one of `types`.
ConfigMap Vision(const ConfigMap& outer, const std::string& expected, const std::vector<std::string>& types) {
  const YAML::Node& node = outer.Get("vision_config");
  if (!node.IsMap())
    throw InputError(outer.Loc("vision_config"), "'vision_config' must be a map, got " + Describe(node));
  ConfigMap m(node, outer.file(), "vision_config", kKeys, UnknownKeys::kIgnore);
  const std::string type = m.String("model_type", types.front());
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    throw InputError(m.Loc("model_type"),
                     "unsupported vision model_type '" + type + "'; tally reads " + types.front() + " for " + expected);
  }
  return m;
}

// A list of layer indices below `layers`.
std::vector<uint64_t> Indices(const ConfigMap& m, const std::string& key, std::vector<uint64_t> fallback,
                              uint64_t layers) {
  if (!m.Has(key)) return fallback;
  const YAML::Node& list = m.Get(key);
  if (!list.IsSequence()) throw InputError(m.Loc(key), "'" + key + "' must be a list, got " + Describe(list));
  std::vector<uint64_t> out;
  for (const YAML::Node& v : list) {
    const uint64_t i =
        v.IsScalar() && v.Scalar() == "0" ? 0 : ReadPositiveInt(v, m.file(), "an entry of '" + key + "'");
    if (i >= layers) {
      throw InputError(LocOf(v, m.file()),
                       "'" + key + "' names layer " + std::to_string(i) + " of " + std::to_string(layers));
    }
    out.push_back(i);
  }
  return out;
}

// The checks every tower needs: heads that divide the width, a patch grid the merge tiles.
void Check(const ConfigMap& m, VisionSpec& v, const char* heads_key) {
  if (v.n_layers > 100'000) throw InputError(LocOr(m, "depth"), "more than 100000 layers");
  if (v.d_model % v.n_heads != 0) {
    throw InputError(LocOr(m, heads_key), "the vision hidden size (" + std::to_string(v.d_model) +
                                              ") is not divisible by the number of heads (" +
                                              std::to_string(v.n_heads) + ")");
  }
  const uint64_t side = v.image_size / v.patch_size;
  if (side == 0 || v.image_size % v.patch_size != 0 || side % v.merge != 0) {
    throw InputError(LocOr(m, "patch_size"), "the image of " + std::to_string(v.image_size) +
                                                 " pixels is not a whole " + "grid of " + std::to_string(v.patch_size) +
                                                 "-pixel patches that " + std::to_string(v.merge) + " x " +
                                                 std::to_string(v.merge) + " merging tiles");
  }
  v.tokens_per_image = side / v.merge * (side / v.merge);
}

void RequireAct(const ConfigMap& m, const std::string& key, const std::string& prefix, const std::string& fallback) {
  const std::string act = m.String(key, fallback);
  if (act.find(prefix) == std::string::npos) {
    throw InputError(m.Loc(key),
                     "unsupported " + key + " '" + act + "' in '" + "vision_config'; tally reads " + prefix);
  }
}

}  // namespace

// configuration_qwen2_vl.py, configuration_qwen2_5_vl.py and configuration_qwen3_vl.py (with
// modeling_qwen2_vl.py, modeling_qwen2_5_vl.py and modeling_qwen3_vl.py).
VisionSpec ReadQwenVision(const YAML::Node& root, const std::string& file, const std::string& type,
                          SourceLoc& width_loc) {
  const ConfigMap outer(root, file, "config.json", kOuterKeys, UnknownKeys::kIgnore);
  const bool qwen2 = type == "qwen2_vl", qwen25 = type == "qwen2_5_vl";
  const std::vector<std::string> types = qwen2    ? std::vector<std::string>{"qwen2_vl", "qwen2_vl_vision"}
                                         : qwen25 ? std::vector<std::string>{"qwen2_5_vl", "qwen2_5_vl_vision"}
                                                  : std::vector<std::string>{"qwen3_vl", "qwen3_vl_moe"};
  const ConfigMap m = Vision(outer, type, types);
  VisionSpec v;
  v.kind = qwen2 || qwen25 ? VisionKind::kQwenMerger : VisionKind::kQwen3Merger;
  v.learned_positions = !qwen2 && !qwen25;
  v.post_norm = false;
  v.rope = true;
  v.patch_bias = !qwen2 && !qwen25;
  v.channels = m.PositiveInt(m.Has("in_chans") ? "in_chans" : "in_channels", 3);
  v.n_heads = m.PositiveInt("num_heads", 16);
  v.merge = m.PositiveInt("spatial_merge_size", 2);
  v.temporal_patch = m.PositiveInt("temporal_patch_size", 2);
  if (qwen2) {
    // Qwen2VLVisionConfig: embed_dim is the tower's width, hidden_size the merger's output.
    v.d_model = m.PositiveInt("embed_dim", 1280);
    v.n_layers = m.PositiveInt("depth", 32);
    v.d_ff = v.d_model * m.PositiveInt("mlp_ratio", 4);
    v.out_width = m.PositiveInt("hidden_size", 3584);
    v.patch_size = m.PositiveInt("patch_size", 14);
    RequireAct(m, "hidden_act", "gelu", "quick_gelu");
  } else {
    v.d_model = m.PositiveInt("hidden_size", qwen25 ? 3584 : 1152);
    v.n_layers = m.PositiveInt("depth", qwen25 ? 32 : 27);
    v.d_ff = m.PositiveInt("intermediate_size", qwen25 ? 3420 : 4304);
    v.out_width = m.PositiveInt("out_hidden_size", 3584);
    v.patch_size = m.PositiveInt("patch_size", qwen25 ? 14 : 16);
  }
  if (qwen25) {
    // Qwen2_5_VLVisionBlock: RMSNorms and a gated MLP with biases; every layer but
    // fullatt_block_indexes attends within windows of window_size pixels per side.
    RequireAct(m, "hidden_act", "silu", "silu");
    v.rms_norm = true;
    v.gated_mlp = true;
    const uint64_t window = m.PositiveInt("window_size", 112);
    if (window % v.patch_size != 0) {
      throw InputError(LocOr(m, "window_size"), "'window_size' must be a whole number of patches");
    }
    v.window_tokens = window / v.patch_size * (window / v.patch_size);
    v.full_layers = Indices(m, "fullatt_block_indexes", {7, 15, 23, 31}, v.n_layers);
  } else if (!qwen2) {
    RequireAct(m, "hidden_act", "gelu", "gelu_pytorch_tanh");
    v.position_rows = m.PositiveInt("num_position_embeddings", 2304);
    v.deepstack = Indices(m, "deepstack_visual_indexes", {8, 16, 24}, v.n_layers);
  }
  width_loc = LocOr(m, qwen2 ? "hidden_size" : "out_hidden_size");
  // The configs fix no image size (the processor resizes within a pixel budget): tally costs one
  // image of 32 x 32 patches, 256 image tokens after the 2 x 2 merge.
  v.image_size = 32 * v.patch_size;
  Check(m, v, "num_heads");
  return v;
}

// configuration_pixtral.py (PixtralVisionConfig's defaults) with configuration_mistral3.py, and
// modeling_pixtral.py with modeling_mistral3.py.
VisionSpec ReadPixtralVision(const YAML::Node& root, const std::string& file) {
  const ConfigMap outer(root, file, "config.json", kOuterKeys, UnknownKeys::kIgnore);
  const ConfigMap m = Vision(outer, "mistral3", {"pixtral"});
  VisionSpec v;
  v.kind = VisionKind::kMistral3;
  v.patch_bias = false;
  v.learned_positions = false;
  v.pre_norm = true;  // ln_pre
  v.post_norm = false;
  v.rms_norm = true;
  v.qkv_bias = v.out_bias = v.mlp_bias = false;
  v.gated_mlp = true;
  v.rope = true;
  v.d_model = m.PositiveInt("hidden_size", 1024);
  v.d_ff = m.PositiveInt("intermediate_size", 4096);
  v.n_layers = m.PositiveInt("num_hidden_layers", 24);
  v.n_heads = m.PositiveInt("num_attention_heads", 16);
  v.channels = m.PositiveInt("num_channels", 3);
  v.image_size = m.PositiveInt("image_size", 1024);
  v.patch_size = m.PositiveInt("patch_size", 16);
  if (m.PositiveInt("head_dim", v.d_model / v.n_heads) * v.n_heads != v.d_model) {
    throw InputError(m.Loc("head_dim"), "a head_dim other than hidden_size / num_attention_heads is not modelled");
  }
  // Mistral3Config: spatial_merge_size 2, projector GELU, vision_feature_layer -1 (the last layer).
  v.merge = outer.PositiveInt("spatial_merge_size", 2);
  v.projector_bias = outer.Bool("multimodal_projector_bias", true);
  if (outer.String("projector_hidden_act", "gelu").rfind("gelu", 0) != 0) {
    throw InputError(outer.Loc("projector_hidden_act"), "unsupported projector_hidden_act; tally reads gelu");
  }
  if (outer.Has("vision_feature_layer") && outer.Get("vision_feature_layer").Scalar() != "-1") {
    throw InputError(outer.Loc("vision_feature_layer"),
                     "tally reads vision_feature_layer -1 (the last layer's output)");
  }
  Check(m, v, "num_attention_heads");
  return v;
}

// configuration_idefics3.py (Idefics3VisionConfig's defaults, scale_factor 2) and
// configuration_smolvlm.py (the same): SigLIP's tower with its final LayerNorm and one learned
// position per patch; the connector's pixel shuffle of scale_factor per side.
VisionSpec ReadIdefics3Vision(const YAML::Node& root, const std::string& file, const std::string& type) {
  const ConfigMap outer(root, file, "config.json", kOuterKeys, UnknownKeys::kIgnore);
  const ConfigMap m = Vision(outer, type, {type, type + "_vision", "siglip_vision_model"});
  VisionSpec v;
  v.kind = VisionKind::kIdefics3;
  v.d_model = m.PositiveInt("hidden_size", 1152);
  v.d_ff = m.PositiveInt("intermediate_size", 3072);
  v.n_layers = m.PositiveInt("num_hidden_layers", 12);
  v.n_heads = m.PositiveInt("num_attention_heads", 16);
  v.channels = m.PositiveInt("num_channels", 3);
  v.image_size = m.PositiveInt("image_size", 224);
  v.patch_size = m.PositiveInt("patch_size", 32);
  RequireAct(m, "hidden_act", "gelu", "gelu_pytorch_tanh");
  v.merge = outer.PositiveInt("scale_factor", 2);
  Check(m, v, "num_attention_heads");
  return v;
}

// configuration_internvl.py (InternVLVisionConfig's defaults: InternViT-300M; InternVLConfig:
// downsample_ratio 0.5, vision_feature_layer -1, the class token dropped). image_size and
// patch_size may be [height, width] pairs; tally reads square ones.
VisionSpec ReadInternVision(const YAML::Node& root, const std::string& file) {
  const ConfigMap outer(root, file, "config.json", kOuterKeys, UnknownKeys::kIgnore);
  const ConfigMap m = Vision(outer, "internvl", {"internvl_vision"});
  VisionSpec v;
  v.kind = VisionKind::kInternVl;
  v.d_model = m.PositiveInt("hidden_size", 1024);
  v.d_ff = m.PositiveInt("intermediate_size", 4096);
  v.n_layers = m.PositiveInt("num_hidden_layers", 24);
  v.n_heads = m.PositiveInt("num_attention_heads", 16);
  v.channels = m.PositiveInt("num_channels", 3);
  for (const char* key : {"image_size", "patch_size"}) {
    const auto [h, w] = m.IntPair(key, std::string(key) == "image_size" ? 448 : 14, 1);
    if (h != w) throw InputError(m.Loc(key), std::string("a non-square '") + key + "' is not modelled");
    (std::string(key) == "image_size" ? v.image_size : v.patch_size) = h;
  }
  RequireAct(m, "hidden_act", "gelu", "gelu");
  v.qkv_bias = m.Bool("attention_bias", false);
  v.qk_norm = m.Bool("use_qk_norm", false);
  const size_t norm = m.Choice("norm_type", {"layer_norm", "rms_norm"}, 0);
  v.rms_norm = norm == 1;
  v.layer_scale = true;
  v.class_token = true;
  v.learned_positions = m.Bool("use_absolute_position_embeddings", true);
  v.post_norm = !m.Bool("use_mean_pooling", true);  // layernorm is nn.Identity under mean pooling
  if (m.Bool("use_mask_token", false)) {
    throw InputError(m.Loc("use_mask_token"), "InternViT's mask token (pre-training only) is not modelled");
  }
  if (outer.Has("vision_feature_layer") && outer.Get("vision_feature_layer").Scalar() != "-1") {
    throw InputError(outer.Loc("vision_feature_layer"),
                     "tally reads vision_feature_layer -1 (the last layer's output)");
  }
  if (outer.Choice("vision_feature_select_strategy", {"default", "full"}, 0) != 0) {
    throw InputError(outer.Loc("vision_feature_select_strategy"),
                     "tally reads the 'default' strategy (class token "
                     "dropped)");
  }
  const double ratio = outer.Has("downsample_ratio") ? outer.Fraction("downsample_ratio", 0.5) : 0.5;
  const double inverse = 1.0 / ratio;
  v.merge = inverse < 1e6 ? static_cast<uint64_t>(inverse + 0.5) : 0;
  if (v.merge == 0 || static_cast<double>(v.merge) * ratio != 1.0) {
    throw InputError(LocOr(outer, "downsample_ratio"), "downsample_ratio must be 1/k for a whole k");
  }
  if (outer.String("projector_hidden_act", "gelu").rfind("gelu", 0) != 0) {
    throw InputError(outer.Loc("projector_hidden_act"), "unsupported projector_hidden_act; tally reads gelu");
  }
  Check(m, v, "num_attention_heads");
  return v;
}

// configuration_mllama.py (MllamaVisionConfig's defaults) and modeling_mllama.py: tiles of
// image_size² pixels, max_num_tiles per image, max_aspect_ratio_id = len(supported_aspect_ratios)
// (the tile embeddings have one more row), the local layers without attention biases, the gated
// global layers, and the projector over vision_output_dim = (1 + intermediate layers)·d features.
VisionSpec ReadMllamaVision(const YAML::Node& root, const std::string& file) {
  const ConfigMap outer(root, file, "config.json", kOuterKeys, UnknownKeys::kIgnore);
  const ConfigMap m = Vision(outer, "mllama", {"mllama_vision_model"});
  VisionSpec v;
  v.kind = VisionKind::kMllama;
  v.d_model = m.PositiveInt("hidden_size", 1280);
  v.d_ff = m.PositiveInt("intermediate_size", 5120);
  v.n_layers = m.PositiveInt("num_hidden_layers", 32);
  v.global_layers = m.NonNegativeInt("num_global_layers", 8);
  // The hub files spell it attention_heads (MllamaVisionConfig's older name).
  v.n_heads = m.PositiveInt(m.Has("attention_heads") ? "attention_heads" : "num_attention_heads", 16);
  v.channels = m.PositiveInt("num_channels", 3);
  v.image_size = m.PositiveInt("image_size", 448);
  v.patch_size = m.PositiveInt("patch_size", 14);
  v.tiles = m.PositiveInt("max_num_tiles", 4);
  RequireAct(m, "hidden_act", "gelu", "gelu");
  v.feature_layers = Indices(m, "intermediate_layers_indices", {3, 7, 15, 23, 30}, v.n_layers);
  uint64_t ratios = 8;  // the eight default supported_aspect_ratios
  if (m.Has("supported_aspect_ratios")) {
    const YAML::Node& list = m.Get("supported_aspect_ratios");
    if (!list.IsSequence() || list.size() == 0) {
      throw InputError(m.Loc("supported_aspect_ratios"), "'supported_aspect_ratios' must be a list of pairs");
    }
    ratios = list.size();
  }
  v.aspect_ratios = ratios + 1;
  v.class_token = true;
  v.patch_bias = false;
  v.qkv_bias = v.out_bias = false;
  v.pre_norm = true;  // layernorm_pre; layernorm_post is the post_norm
  Check(m, v, m.Has("attention_heads") ? "attention_heads" : "num_attention_heads");
  const uint64_t side = v.image_size / v.patch_size;
  v.position_rows = side * side + 1;
  const uint64_t output = v.d_model * (1 + v.feature_layers.size());
  if (m.PositiveInt("vision_output_dim", output) != output) {
    throw InputError(m.Loc("vision_output_dim"),
                     "'vision_output_dim' must be hidden_size x (1 + the intermediate "
                     "layers), " +
                         std::to_string(output));
  }
  // The text holds one <|image|> token per image; the tiles reach it through cross-attention.
  v.tokens_per_image = 1;
  return v;
}

}  // namespace tally
