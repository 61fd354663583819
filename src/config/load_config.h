// Model arguments -> ModelSpec: a preset name, a config, weights, or a cached Hugging Face ID.
#pragma once

#include <string>

#include "config/model_spec.h"

namespace tally {

// Reads a tally config from memory; `file` is the name shown in error messages.
ModelSpec LoadModelText(const std::string& file, const std::string& text);

// The text of a config file; a missing, unreadable or directory path is an InputError naming it.
std::string ReadFileText(const std::string& path);

// Reads the file at `path`.
ModelSpec LoadModelFile(const std::string& path);

// A preset name (or a Hub short name for one), an existing path (config, snapshot directory,
// safetensors, GGUF), an `org/name[@revision]` in the local Hugging Face cache, or else a path that
// looks like one (config/model_lookup.h says how each is told apart).
ModelSpec ResolveModel(const std::string& arg);

}  // namespace tally
