// Hugging Face config.json -> ModelSpec for Zamba2 (Zamba2ForCausalLM; transformers
// configuration_zamba2.py and modeling_zamba2.py).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "config/model_spec.h"

namespace tally {

// Every block is a Mamba-2 block (Zamba2MambaDecoderLayer); the hybrid ones (layers_block_type
// "hybrid") first run a shared transformer block and their own linear, whose output joins the
// Mamba-2 block's input (ZambaSpec in config/model_spec.h). Anything tally does not model exactly
// is an InputError at its key.
ModelSpec ReadHfZamba2Config(const YAML::Node& root, const std::string& file);

}  // namespace tally
