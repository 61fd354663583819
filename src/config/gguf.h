// GGUF files (llama.cpp; versions 2 and 3) read from their headers: metadata key-values and tensor
// infos, with the exact bytes of each ggml type. The tensor data is never read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "config/model_spec.h"

namespace tally {

// A ggml tensor type: elements per block and bytes per block.
struct GgmlType {
  const char* name;
  uint64_t block;
  uint64_t block_bytes;
};

// The type with this ggml_type id, or nullptr for ids that are unknown or removed from GGUF files.
const GgmlType* FindGgmlType(uint32_t id);

struct GgufValue {
  uint32_t type = 0;    // gguf_type: 0 uint8 ... 12 float64
  uint64_t offset = 0;  // the byte where the value starts
  // Scalars; arrays keep their element type and length only.
  std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string> scalar;
  uint32_t array_type = 0;
  uint64_t array_length = 0;
};

struct GgufFile {
  uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  CheckpointInfo checkpoint;  // shapes as GGUF stores them: ne[0] (the fastest dimension) first
  uint64_t data_offset = 0;   // where the tensor data begins
};

// `fill(buffer, want)` appends to `buffer` until it holds at least `want` bytes of the file (or the
// whole file); with no `fill`, `data` must hold the whole header. Errors name `file` and a byte.
GgufFile ParseGguf(const std::string& file, std::string data, uint64_t file_size,
                   void (*fill)(void* context, std::string& buffer, uint64_t want) = nullptr, void* context = nullptr);

GgufFile ReadGgufFile(const std::string& path);

// The ModelSpec that the metadata describes, for the architectures tally's transformer models.
ModelSpec GgufModelSpec(const GgufFile& gguf, const std::string& file);

// ReadGgufFile, then GgufModelSpec with the tensors as its checkpoint.
ModelSpec LoadGguf(const std::string& path);

}  // namespace tally
