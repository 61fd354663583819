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

}  // namespace tally
