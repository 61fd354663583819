// safetensors checkpoints read from their headers only: an 8-byte little-endian length, then that
// many bytes of JSON naming each tensor's dtype, shape and data_offsets. The tensor data is never read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/model_spec.h"

namespace tally {

// The safetensors crate's MAX_HEADER_SIZE (safetensors/src/tensor.rs): longer headers are refused.
constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

struct SafetensorsHeader {
  std::vector<CheckpointTensor> tensors;  // in the header's key order
  uint64_t header_bytes = 0;              // the JSON's length (the 8-byte prefix excluded)
  uint64_t data_bytes = 0;                // the end of the last data offset
};

// Checks one file from its first bytes: `head` holds at least the prefix and the JSON (it may hold
// more, up to the whole file), `file_size` is the file's length. Errors name `file` and a byte offset.
SafetensorsHeader ParseSafetensorsHeader(const std::string& file, std::string_view head, uint64_t file_size);

// One .safetensors file on disk: reads only its prefix and header.
SafetensorsHeader ReadSafetensorsFile(const std::string& path);

// A .safetensors file, a model.safetensors.index.json (its shards, relative to it) or a directory
// (its index when present, else every *.safetensors in it). `notes` receives warnings, such as an
// index total_size that disagrees with the headers. A directory without weights gives no files.
CheckpointInfo ReadSafetensors(const std::string& path, std::vector<std::string>& notes);

// True for paths that name safetensors weights: *.safetensors or *.safetensors.index.json.
bool IsSafetensorsPath(const std::string& path);

}  // namespace tally
