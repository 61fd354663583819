// The format: huggingface/safetensors README ("Format") and safetensors/src/tensor.rs, whose checks
// this follows: the JSON header may be padded with spaces, data_offsets are relative to the byte
// after the header, and the data buffer is indexed entirely, without holes or overlaps.
#include "config/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "config/load_config.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/text.h"
#include "util/units.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Bits per element of each dtype the safetensors crate defines (Dtype::bitsize in tensor.rs).
uint64_t DtypeBits(const std::string& dtype) {
  static const std::map<std::string, uint64_t> kBits = {
      {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8},   {"I8", 8},    {"F8_E5M2", 8},
      {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16}, {"BF16", 16}, {"I32", 32},
      {"U32", 32},    {"F32", 32},    {"C64", 64},    {"F64", 64},    {"I64", 64}, {"U64", 64}};
  auto it = kBits.find(dtype);
  return it == kBits.end() ? 0 : it->second;
}

// Where a tensor's entry starts in the file, for errors: its quoted name in the header.
uint64_t EntryOffset(std::string_view json, const std::string& name) {
  const size_t at = json.find(Json(name).dump());
  return 8 + (at == std::string_view::npos ? 0 : at);
}

uint64_t ReadU64(const Json& v, const std::string& file, uint64_t at, const std::string& what) {
  if (!v.is_number_unsigned()) throw AtByte(file, at, what + " must be a non-negative integer, got " + v.dump());
  return v.get<uint64_t>();
}

struct Span {
  uint64_t begin, end;
  const std::string* name;
};

CheckpointTensor ReadEntry(const std::string& file, std::string_view json, const std::string& name, const Json& entry,
                           Span& span) {
  const uint64_t at = EntryOffset(json, name);
  if (!entry.is_object()) throw AtByte(file, at, "tensor '" + name + "' is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) throw AtByte(file, at, "tensor '" + name + "' has no '" + key + "'");
  }
  CheckpointTensor t{.name = name};
  const Json& dtype = entry["dtype"];
  const uint64_t bits = dtype.is_string() ? DtypeBits(dtype.get<std::string>()) : 0;
  if (bits == 0) throw AtByte(file, at, "tensor '" + name + "' has an unknown dtype " + dtype.dump());
  t.dtype = dtype.get<std::string>();
  const Json& shape = entry["shape"];
  if (!shape.is_array()) throw AtByte(file, at, "tensor '" + name + "': 'shape' must be a list");
  t.elements = 1;
  for (const Json& d : shape) {
    t.shape.push_back(ReadU64(d, file, at, "tensor '" + name + "': each dimension"));
    if (__builtin_mul_overflow(t.elements, t.shape.back(), &t.elements)) {
      throw AtByte(file, at, "tensor '" + name + "': the shape's product exceeds 2^64 - 1");
    }
  }
  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    throw AtByte(file, at, "tensor '" + name + "': 'data_offsets' must be [begin, end]");
  }
  span = {ReadU64(offsets[0], file, at, "data_offsets"), ReadU64(offsets[1], file, at, "data_offsets"), nullptr};
  if (span.end < span.begin) throw AtByte(file, at, "tensor '" + name + "': data_offsets end before they begin");
  uint64_t total_bits = 0;
  if (__builtin_mul_overflow(t.elements, bits, &total_bits) || total_bits % 8 != 0) {
    throw AtByte(file, at,
                 "tensor '" + name + "': " + std::to_string(t.elements) + " elements of " + t.dtype +
                     " are not a whole number of bytes");
  }
  t.bytes = total_bits / 8;
  if (span.end - span.begin != t.bytes) {
    throw AtByte(file, at,
                 "tensor '" + name + "': data_offsets span " + std::to_string(span.end - span.begin) + " bytes, but " +
                     t.dtype + " of this shape needs " + std::to_string(t.bytes));
  }
  return t;
}

// Sorted by begin, the spans must tile [0, end) exactly.
uint64_t CheckSpans(const std::string& file, std::string_view json, std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t end = 0;
  for (const Span& s : spans) {
    if (s.begin < end) {
      throw AtByte(file, EntryOffset(json, *s.name),
                   "tensor '" + *s.name + "' overlaps the one before it (its data begins at " +
                       std::to_string(s.begin) + ", before " + std::to_string(end) + ")");
    }
    if (s.begin > end) {
      throw AtByte(file, EntryOffset(json, *s.name),
                   "a hole of " + std::to_string(s.begin - end) + " bytes before tensor '" + *s.name +
                       "' (no tensor covers them)");
    }
    end = s.end;
  }
  return end;
}

std::string JsonErrorText(const Json::exception& e) {
  std::string what = e.what();
  // "[json.exception.parse_error.101] parse error at line 1, column 5: REASON" -> REASON.
  const size_t column = what.find("column");
  const size_t colon = what.find(": ", column == std::string::npos ? 0 : column);
  std::string text = colon == std::string::npos ? what : what.substr(colon + 2);
  // "; last read: '...'" quotes the input, which may be any bytes: the offset says where instead.
  return text.substr(0, text.find("; last read"));
}

}  // namespace

SafetensorsHeader ParseSafetensorsHeader(const std::string& file, std::string_view head, uint64_t file_size) {
  if (file_size < 8 || head.size() < 8) {
    throw AtByte(file, 0,
                 "the file is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(head[static_cast<size_t>(i)]);
  if (n > kSafetensorsMaxHeader) {
    throw AtByte(file, 0,
                 "header length " + std::to_string(n) + " is over the cap of " + FormatGrouped(kSafetensorsMaxHeader) +
                     " bytes; not a safetensors file?");
  }
  if (n > file_size - 8 || n > head.size() - 8) {
    throw AtByte(file, 0,
                 "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(file_size) +
                     " bytes)");
  }
  const std::string_view json = head.substr(8, n);
  Json root;
  try {
    root = Json::parse(json);
  } catch (const Json::parse_error& e) {
    throw AtByte(file, 8 + (e.byte > 0 ? e.byte - 1 : 0), "the header is not valid JSON: " + JsonErrorText(e));
  } catch (const Json::exception& e) {
    // A number beyond double's range (out_of_range 406) comes with no position.
    throw AtByte(file, 8,
                 std::string("the header is not valid JSON: ") + (e.id == 406 ? "a number out of range" : "bad value"));
  }
  if (!root.is_object()) throw AtByte(file, 8, "the header must be a JSON object");
  SafetensorsHeader h;
  h.header_bytes = n;
  std::vector<Span> spans;
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") continue;
    Span span{};
    h.tensors.push_back(ReadEntry(file, json, name, entry, span));
    spans.push_back(span);
  }
  // Names are pointed at once h.tensors has stopped growing.
  for (size_t i = 0; i < spans.size(); ++i) spans[i].name = &h.tensors[i].name;
  h.data_bytes = CheckSpans(file, json, spans);
  const uint64_t expected = 8 + n + h.data_bytes;
  if (file_size < expected) {
    throw AtByte(file, file_size,
                 "the file is truncated: the header describes " + FormatGrouped(expected) + " bytes, the file has " +
                     FormatGrouped(file_size) + ", " + FormatGrouped(expected - file_size) + " bytes missing");
  }
  if (file_size > expected) {
    throw AtByte(file, expected, FormatGrouped(file_size - expected) + " bytes follow the last tensor's data");
  }
  return h;
}

SafetensorsHeader ReadSafetensorsFile(const std::string& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw InputError({path, 0, 0}, fs::exists(path) ? "cannot read the file's size" : "no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "cannot open file for reading");
  std::string head(std::min<uint64_t>(size, 8), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (head.size() == 8) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(head[static_cast<size_t>(i)]);
    // Read the header only when it is plausible; the parser words the error otherwise.
    if (n <= kSafetensorsMaxHeader && n <= size - 8) {
      head.resize(8 + n);
      in.read(head.data() + 8, static_cast<std::streamsize>(n));
      if (!in) throw InputError({path, 0, 0}, "read error");
    }
  }
  return ParseSafetensorsHeader(path, head, size);
}

bool IsSafetensorsPath(const std::string& path) {
  auto ends = [&](std::string_view tail) {
    return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends(".safetensors") || ends(".safetensors.index.json");
}

namespace {

void AddFile(CheckpointInfo& info, const std::string& path, const SafetensorsHeader& h) {
  info.files.push_back(path);
  for (const CheckpointTensor& t : h.tensors) {
    info.elements = CheckedAdd(info.elements, t.elements, "the checkpoint's elements");
    info.bytes = CheckedAdd(info.bytes, t.bytes, "the checkpoint's bytes");
    info.bytes_by_dtype[Lower(t.dtype)] += t.bytes;
    info.tensors.push_back(t);
  }
}

// model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {tensor: shard}}.
void ReadIndex(const std::string& index, CheckpointInfo& info, std::vector<std::string>& notes) {
  Json root;
  try {
    root = Json::parse(ReadFileText(index));
  } catch (const Json::parse_error& e) {
    throw AtByte(index, e.byte > 0 ? e.byte - 1 : 0, "not valid JSON: " + JsonErrorText(e));
  } catch (const Json::exception& e) {
    throw AtByte(index, 0, std::string("not valid JSON: ") + (e.id == 406 ? "a number out of range" : "bad value"));
  }
  if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object()) {
    throw InputError({index, 0, 0}, "a safetensors index needs a 'weight_map' object of tensor -> shard file");
  }
  std::map<std::string, std::set<std::string>> by_shard;
  for (const auto& [tensor, shard] : root["weight_map"].items()) {
    if (!shard.is_string() || shard.get<std::string>().empty() || fs::path(shard.get<std::string>()).is_absolute()) {
      throw InputError({index, 0, 0}, "'weight_map' entry '" + tensor + "' must name a shard file beside the index");
    }
    by_shard[shard.get<std::string>()].insert(tensor);
  }
  const fs::path dir = fs::path(index).parent_path();
  // An index fetched without its shards (config and index only) describes weights that are not
  // here: say so and go on with the config. Some shards but not all is a broken download.
  size_t present = 0;
  std::error_code ec;
  for (const auto& entry : by_shard) present += fs::exists(dir / entry.first, ec) ? 1U : 0U;
  if (present == 0 && !by_shard.empty()) {
    notes.push_back(index + " names " + std::to_string(by_shard.size()) +
                    " shards and none is present; the checkpoint was not read");
    return;
  }
  for (const auto& [shard, tensors] : by_shard) {
    const std::string path = (dir / shard).string();
    const SafetensorsHeader h = ReadSafetensorsFile(path);
    std::set<std::string> held;
    for (const CheckpointTensor& t : h.tensors) held.insert(t.name);
    for (const std::string& t : tensors) {
      if (held.count(t)) continue;
      std::string what = "'weight_map' puts '" + t;
      what.append("' in ").append(shard).append(", which does not hold it");
      throw InputError({index, 0, 0}, what);
    }
    AddFile(info, path, h);
  }
  if (info.files.empty()) return;
  const Json* total =
      root.contains("metadata") && root["metadata"].is_object() && root["metadata"].contains("total_size")
          ? &root["metadata"]["total_size"]
          : nullptr;
  if (total != nullptr && total->is_number_unsigned() && total->get<uint64_t>() != info.bytes) {
    notes.push_back(index + ": metadata.total_size is " + FormatGrouped(total->get<uint64_t>()) +
                    " bytes, the shards' headers describe " + FormatGrouped(info.bytes));
  }
}

}  // namespace

CheckpointInfo ReadSafetensors(const std::string& path, std::vector<std::string>& notes) {
  CheckpointInfo info{.format = "safetensors"};
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    if (fs::exists(index, ec)) {
      ReadIndex(index.string(), info, notes);
      return info;
    }
    std::vector<std::string> files;
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) AddFile(info, f, ReadSafetensorsFile(f));
  } else if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    ReadIndex(path, info, notes);
  } else {
    AddFile(info, path, ReadSafetensorsFile(path));
  }
  return info;
}

}  // namespace tally
