// Shared by the weight-reader tests: a scoped temp directory, sparse files (headers only, the data
// a hole of the right length, so a 16 GB checkpoint takes a few kilobytes), safetensors and GGUF
// writers, and an error's one-line diagnostic.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "util/error.h"

namespace tally::testing {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// A fresh directory under the system's temp dir, removed at the end of the scope.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("tally-readers-" + std::to_string(getpid()) + "-" + std::to_string(next_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  static inline int next_ = 0;
  fs::path path_;
};

inline void WriteFile(const fs::path& path, const std::string& bytes, uint64_t size = 0) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (size > bytes.size()) fs::resize_file(path, size);  // sparse: the data is a hole
}

inline std::string Le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// The 8-byte length and the JSON; the data (zeros) only when `with_data`.
inline std::string Safetensors(const std::string& json, uint64_t data_bytes, bool with_data = true) {
  return Le(json.size(), 8) + json + (with_data ? std::string(data_bytes, '\0') : "");
}

// name -> {dtype, shape}; offsets laid end to end in the order given.
inline Json Header(const std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>, uint64_t>>& tensors,
                   uint64_t* data_bytes = nullptr) {
  Json h = Json::object();
  uint64_t at = 0;
  for (const auto& [name, dtype, shape, bytes_per] : tensors) {
    uint64_t n = bytes_per;
    for (uint64_t d : shape) n *= d;
    h[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {at, at + n}}};
    at += n;
  }
  if (data_bytes != nullptr) *data_bytes = at;
  return h;
}

inline std::string Message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return FormatDiagnostic(e);
  }
  return "(no error)";
}

// GGUF writer for the tests: little-endian, as docs/gguf.md specifies.
class Gguf {
 public:
  explicit Gguf(uint32_t version = 3) { out_ = "GGUF" + Le(version, 4); }
  Gguf& Str(const std::string& s) {
    body_ += Le(s.size(), 8) + s;
    return *this;
  }
  Gguf& U32(const std::string& key, uint32_t v) {
    Str(key);
    body_ += Le(4, 4) + Le(v, 4);
    ++kv_;
    return *this;
  }
  Gguf& U16(const std::string& key, uint16_t v) {
    Str(key);
    body_ += Le(2, 4) + Le(v, 2);
    ++kv_;
    return *this;
  }
  Gguf& Text(const std::string& key, const std::string& v) {
    Str(key);
    body_ += Le(8, 4);
    Str(v);
    ++kv_;
    return *this;
  }
  Gguf& Tokens(uint64_t n) {
    Str("tokenizer.ggml.tokens");
    body_ += Le(9, 4) + Le(8, 4) + Le(n, 8);
    for (uint64_t i = 0; i < n; ++i) Str("t" + std::to_string(i));
    ++kv_;
    return *this;
  }
  Gguf& Tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t bytes) {
    infos_ += Le(name.size(), 8) + name + Le(ne.size(), 4);
    for (uint64_t d : ne) infos_ += Le(d, 8);
    infos_ += Le(type, 4) + Le(data_, 8);
    data_ += (bytes + 31) / 32 * 32;
    ++tensors_;
    return *this;
  }
  // The header; `size` receives the whole file's length (header, padding, data).
  std::string Bytes(uint64_t* size) const {
    std::string h = out_ + Le(tensors_, 8) + Le(kv_, 8) + body_ + infos_;
    h += std::string((32 - h.size() % 32) % 32, '\0');
    *size = h.size() + data_;
    return h;
  }

 private:
  std::string out_, body_, infos_;
  uint64_t kv_ = 0, tensors_ = 0, data_ = 0;
};

}  // namespace tally::testing
