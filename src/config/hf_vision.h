// The vision tower of a multimodal Hugging Face config.json (its vision_config) -> VisionSpec.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/model_spec.h"

namespace tally {

// Gemma 3 (model_type gemma3): `root` is the whole config, whose vision_config must be a
// siglip_vision_model; mm_tokens_per_image sets the projector's pooled tokens. Anything tally does
// not model exactly (SigLIP's pooling head, a pool that does not tile the patch grid) is an
// InputError at its key.
VisionSpec ReadGemma3Vision(const YAML::Node& root, const std::string& file);

// Llama 4 (model_type llama4): vision_config must be a llama4_vision_model whose pixel shuffle and
// adapter chain (intermediate_size = hidden_size / ratio², projector_input_dim =
// projector_output_dim = vision_output_dim) and whose projector has no bias.
VisionSpec ReadLlama4Vision(const YAML::Node& root, const std::string& file);

// LLaVA (model_type llava): vision_config must be a clip_vision_model; vision_feature_layer (one
// layer), vision_feature_select_strategy (default: the class token dropped; full) and
// projector_hidden_act (gelu) are read from the top level.
VisionSpec ReadLlavaVision(const YAML::Node& root, const std::string& file);

// config/hf_vision_recent.cc, issue 30's towers (VisionKind in config/model_spec.h).
// Qwen2-VL, Qwen2.5-VL and Qwen3-VL (`type` qwen2_vl, qwen2_5_vl, qwen3_vl or qwen3_vl_moe): the
// merger's output width is out_width, at `width_loc` (the caller checks it against the language
// model's); the configs give no image size, and tally costs one image of 32 x 32 patches (256
// image tokens).
VisionSpec ReadQwenVision(const YAML::Node& root, const std::string& file, const std::string& type,
                          SourceLoc& width_loc);
// Mistral 3 (mistral3): a pixtral vision_config and the top level's spatial_merge_size,
// multimodal_projector_bias, projector_hidden_act (gelu) and vision_feature_layer (-1).
VisionSpec ReadPixtralVision(const YAML::Node& root, const std::string& file);
// Idefics3 and SmolVLM (`type` idefics3 or smolvlm): SigLIP's tower and the pixel-shuffle connector
// (scale_factor); one image is one image_size tile.
VisionSpec ReadIdefics3Vision(const YAML::Node& root, const std::string& file, const std::string& type);
// InternVL (internvl): InternViT and the pixel-shuffle projector (downsample_ratio).
VisionSpec ReadInternVision(const YAML::Node& root, const std::string& file);
// Mllama (Llama 3.2 Vision): the tiled tower, its gated global layers and the projector.
VisionSpec ReadMllamaVision(const YAML::Node& root, const std::string& file);

}  // namespace tally
