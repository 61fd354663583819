// Hugging Face config.json -> ModelSpec for the state-space families: mamba (MambaForCausalLM),
// mamba2 (Mamba2ForCausalLM) and the hybrid jamba (JambaForCausalLM); the hybrid zamba2
// (Zamba2ForCausalLM) is read by config/hf_zamba2.cc.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/model_spec.h"

namespace tally {

// The model_type values read here.
const std::vector<std::string>& HfSsmFamilies();

// `type` is the config's model_type, one of HfSsmFamilies().
ModelSpec ReadHfSsmConfig(const YAML::Node& root, const std::string& file, const std::string& type);

}  // namespace tally
