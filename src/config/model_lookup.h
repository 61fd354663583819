// Where a MODEL argument lies: a preset (or an alias of one), a path (config file, snapshot
// directory, safetensors weights, GGUF file), or an `org/name[@revision]` in the local Hugging Face
// cache. Nothing is ever downloaded.
#pragma once

#include <string>

#include "config/model_spec.h"
#include "config/presets.h"

namespace tally {

// The preset called `name`, matched without regard to case, or one that a Hugging Face short
// name stands for ("gpt2" is gpt2-small, as on the Hub); nullptr when none.
const EmbeddedPreset* FindPresetOrAlias(const std::string& name);

// A chat or instruction tune named after a preset: "llama-2-7b-chat", "Meta-Llama-3-8B-Instruct",
// "gemma-7b-it", "Mistral-7B-Instruct-v0.1" (one "-chat", "-instruct" or "-it" word taken out
// leaves a preset or an alias). Such a tune keeps its base's architecture and parameter count, so
// the base preset answers for it; `note` says so in one line. nullptr when the name is no such tune.
const EmbeddedPreset* FindTunedPreset(const std::string& name, std::string& note);

// A name with a separator or a config/weights extension (.yaml, .yml, .json, .safetensors, .gguf):
// "llama-3.1-8b" is a name, not a file.
bool LooksLikePath(const std::string& arg);

// `org/name` or `org/name@revision`, with the characters the Hub allows.
bool LooksLikeHfId(const std::string& arg);

// An existing path: a directory (its config.json and any safetensors in it), a .safetensors file or
// index (the config.json beside it), a .gguf file, or else a config file.
ModelSpec LoadModelPath(const std::string& path);

// The error for a path whose symbolic links lead back to themselves (ELOOP).
inline constexpr const char* kSymlinkLoop =
    "is a symbolic link loop (its links lead back to themselves); nothing to read";

// The hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub (huggingface_hub's constants.py).
std::string HfHubCache();

// `org/name[@revision]` from the cache: models--org--name/refs/<revision> holds a commit hash that
// names snapshots/<hash>/; a 40-hex revision names the snapshot directly. Not cached: an InputError
// that says how to fetch the config.
ModelSpec LoadHfCached(const std::string& id);

}  // namespace tally
