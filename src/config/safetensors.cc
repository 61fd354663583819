// The format: huggingface/safetensors README ("Format") and safetensors/src/tensor.rs, whose checks
// this follows: the JSON header may be padded with spaces, data_offsets are relative to the byte
// after the header, and the data buffer is indexed entirely, without holes or overlaps. A header is
// read in one pass (JsonScan); nlohmann::json reads only the rarer forms and words every error.
#include "config/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

#include "config/json_scan.h"
#include "config/model_lookup.h"
#include "util/units.h"

namespace tally {
namespace {

using Json = nlohmann::json;

// Bits per element of each dtype the safetensors crate defines (Dtype::bitsize in tensor.rs).
uint64_t DtypeBits(std::string_view dtype) {
  static const std::map<std::string, uint64_t, std::less<>> kBits = {
      {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8},   {"I8", 8},    {"F8_E5M2", 8},
      {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16}, {"BF16", 16}, {"I32", 32},
      {"U32", 32},    {"F32", 32},    {"C64", 64},    {"F64", 64},    {"I64", 64}, {"U64", 64}};
  auto it = kBits.find(dtype);
  return it == kBits.end() ? 0 : it->second;
}

// Where a tensor's entry starts in the file, for errors: the first place its quoted name appears in
// the header. One search of the header, so it is looked for only when an error is worded.
uint64_t EntryOffset(std::string_view json, const std::string& name) {
  const size_t at = json.find(Json(name).dump());
  return 8 + (at == std::string_view::npos ? 0 : at);
}

struct Span {
  uint64_t begin, end;
  const std::string* name;
};

// The checks of a tensor's size against its data_offsets, shared by both readers: the first that
// fails, worded (empty when all pass). Sets t.bytes.
std::string SizeProblem(CheckpointTensor& t, uint64_t bits, const Span& span) {
  if (span.end < span.begin) return "data_offsets end before they begin";
  uint64_t total_bits = 0;
  if (__builtin_mul_overflow(t.elements, bits, &total_bits) || total_bits % 8 != 0) {
    return std::to_string(t.elements) + " elements of " + t.dtype + " are not a whole number of bytes";
  }
  t.bytes = total_bits / 8;
  if (span.end - span.begin != t.bytes) {
    return "data_offsets span " + std::to_string(span.end - span.begin) + " bytes, but " + t.dtype +
           " of this shape needs " + std::to_string(t.bytes);
  }
  return {};
}

// One entry in the form writers emit: dtype, shape and data_offsets, each once and nothing else.
// False for anything else or any failed check, which the tree reader then words.
bool ScanEntry(JsonScan& scan, CheckpointTensor& t, Span& span) {
  bool has_dtype = false, has_shape = false;
  int offsets = -1;  // data_offsets read so far; -1 before the key
  uint64_t bits = 0;
  const bool ok = scan.Object([&](std::string_view key) {
    if (key == "dtype" && !has_dtype) {
      std::string_view dtype;
      has_dtype = scan.String(dtype);
      t.dtype = dtype;
      bits = DtypeBits(dtype);
      return has_dtype && bits != 0;
    }
    if (key == "shape" && !has_shape) {
      has_shape = true;
      return scan.Array([&] {
        uint64_t d = 0;
        if (!scan.Uint(d)) return false;
        t.shape.push_back(d);
        return !__builtin_mul_overflow(t.elements, d, &t.elements);
      });
    }
    if (key == "data_offsets" && offsets < 0) {
      offsets = 0;
      return scan.Array([&] {
        uint64_t v = 0;
        if (offsets == 2 || !scan.Uint(v)) return false;
        (offsets++ == 0 ? span.begin : span.end) = v;
        return true;
      });
    }
    return false;
  });
  return ok && has_dtype && has_shape && offsets == 2 && SizeProblem(t, bits, span).empty();
}

// The whole header in one pass, without a JSON tree, into tensors by name (the tree reader's order):
// false when anything is outside JsonScan's subset, a check fails, or a name repeats.
bool ScanHeader(std::string_view json, std::vector<CheckpointTensor>& tensors, std::vector<Span>& spans) {
  JsonScan scan(json);
  tensors.reserve(json.size() / 64);  // an entry takes 80 to 150 bytes
  spans.reserve(json.size() / 64);
  const bool ok = scan.Object([&](std::string_view name) {
    if (name == "__metadata__") {
      return scan.Object([&](std::string_view) {
        std::string_view value;
        return scan.String(value);
      });
    }
    CheckpointTensor& t = tensors.emplace_back(CheckpointTensor{.name = std::string(name), .elements = 1});
    return ScanEntry(scan, t, spans.emplace_back());
  });
  if (!ok || !scan.End()) return false;
  auto by_name = [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; };
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (!std::is_sorted(order.begin(), order.end(), by_name)) {
    std::sort(order.begin(), order.end(), by_name);
    std::vector<CheckpointTensor> sorted_tensors;
    std::vector<Span> sorted_spans;
    sorted_tensors.reserve(order.size());
    sorted_spans.reserve(order.size());
    for (size_t i : order) {
      sorted_tensors.push_back(std::move(tensors[i]));
      sorted_spans.push_back(spans[i]);
    }
    tensors = std::move(sorted_tensors);
    spans = std::move(sorted_spans);
  }
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].name == tensors[i - 1].name) return false;  // the tree keeps the last: its part
  }
  return true;
}

uint64_t ReadU64(const Json& v, const std::function<InputError(const std::string&)>& fail, const std::string& what) {
  if (!v.is_number_unsigned()) throw fail(what + " must be a non-negative integer, got " + v.dump());
  return v.get<uint64_t>();
}

CheckpointTensor ReadEntry(const std::string& file, std::string_view json, const std::string& name, const Json& entry,
                           Span& span) {
  auto fail = [&](const std::string& message) { return AtByte(file, EntryOffset(json, name), message); };
  if (!entry.is_object()) throw fail("tensor '" + name + "' is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) throw fail("tensor '" + name + "' has no '" + key + "'");
  }
  CheckpointTensor t{.name = name};
  const Json& dtype = entry["dtype"];
  const uint64_t bits = dtype.is_string() ? DtypeBits(dtype.get_ref<const std::string&>()) : 0;
  if (bits == 0) throw fail("tensor '" + name + "' has an unknown dtype " + dtype.dump());
  t.dtype = dtype.get<std::string>();
  const Json& shape = entry["shape"];
  if (!shape.is_array()) throw fail("tensor '" + name + "': 'shape' must be a list");
  t.elements = 1;
  for (const Json& d : shape) {
    t.shape.push_back(ReadU64(d, fail, "tensor '" + name + "': each dimension"));
    if (__builtin_mul_overflow(t.elements, t.shape.back(), &t.elements)) {
      throw fail("tensor '" + name + "': the shape's product exceeds 2^64 - 1");
    }
  }
  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    throw fail("tensor '" + name + "': 'data_offsets' must be [begin, end]");
  }
  span = {ReadU64(offsets[0], fail, "data_offsets"), ReadU64(offsets[1], fail, "data_offsets"), nullptr};
  const std::string problem = SizeProblem(t, bits, span);
  if (!problem.empty()) throw fail("tensor '" + name + "': " + problem);
  return t;
}

// The header through nlohmann::json, for what ScanHeader leaves: the rare form, and every error.
void ReadHeaderTree(const std::string& file, std::string_view json, std::vector<CheckpointTensor>& tensors,
                    std::vector<Span>& spans) {
  if (const size_t deep = NestedTooDeep(json); deep != std::string_view::npos) {
    throw AtByte(file, 8 + deep,
                 "the header's values are nested more than " + std::to_string(kJsonMaxNesting) + " levels deep");
  }
  Json root;
  // nlohmann keeps the last of a repeated key: a tensor named twice would read as one (and its
  // first data as a hole). The parser's callback sees every top-level key.
  std::unordered_set<std::string> names;
  std::optional<std::string> twice;
  const Json::parser_callback_t note_twice = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && !twice && !names.insert(parsed.get<std::string>()).second) {
      twice = parsed.get<std::string>();
    }
    return true;
  };
  try {
    root = Json::parse(json, note_twice);
  } catch (const Json::parse_error& e) {
    throw AtByte(file, 8 + (e.byte > 0 ? e.byte - 1 : 0), "the header is not valid JSON: " + NlohmannReason(e.what()));
  } catch (const Json::exception& e) {
    // A number beyond double's range (out_of_range 406) comes with no position.
    throw AtByte(file, 8,
                 std::string("the header is not valid JSON: ") + (e.id == 406 ? "a number out of range" : "bad value"));
  }
  if (!root.is_object()) throw AtByte(file, 8, "the header must be a JSON object");
  if (twice) {
    // The byte of its second entry: the second place its quoted name appears.
    const std::string quoted = Json(*twice).dump();
    const size_t first = json.find(quoted);
    const size_t second = first == std::string_view::npos ? first : json.find(quoted, first + quoted.size());
    throw AtByte(
        file, 8 + (second == std::string_view::npos ? 0 : second),
        *twice == "__metadata__"
            ? std::string("'__metadata__' appears twice in the header")
            : "tensor '" + *twice + "' is named twice in the header; a safetensors file names each tensor once");
  }
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") continue;
    Span span{};
    tensors.push_back(ReadEntry(file, json, name, entry, span));
    spans.push_back(span);
  }
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

constexpr uint64_t kFirstRead = uint64_t{64} << 10;

// `n` bytes from `offset`, across short reads; false on an error or an early end of file.
bool ReadAt(int fd, char* out, size_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
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
  SafetensorsHeader h;
  h.header_bytes = n;
  std::vector<Span> spans;
  if (!ScanHeader(json, h.tensors, spans)) {
    h.tensors.clear();
    spans.clear();
    ReadHeaderTree(file, json, h.tensors, spans);
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
  // Non-blocking, so that a FIFO named *.safetensors fails at fstat instead of waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) throw InputError({path, 0, 0}, kSymlinkLoop);
    throw InputError({path, 0, 0}, err == ENOENT || err == ENOTDIR ? "no such file" : "cannot open file for reading");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw InputError({path, 0, 0}, "cannot read the file's size");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError({path, 0, 0}, S_ISDIR(st.st_mode) ? "is a directory, not a safetensors file"
                                                       : "is not a regular file (a FIFO, a device or a socket); "
                                                         "safetensors weights are read from files");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  // One read takes the prefix and, for most files, the whole header (the kernel reads ahead
  // 128 KiB anyway); a longer header takes a second, only when its length is plausible (the
  // parser words the error otherwise).
  std::string head(std::min<uint64_t>(size, kFirstRead), '\0');
  bool ok = ReadAt(fd, head.data(), head.size(), 0);
  if (ok && head.size() >= 8) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(head[static_cast<size_t>(i)]);
    if (n <= kSafetensorsMaxHeader && n <= size - 8 && 8 + n > head.size()) {
      const size_t had = head.size();
      head.resize(8 + n);
      ok = ReadAt(fd, head.data() + had, head.size() - had, had);
    }
  }
  ::close(fd);
  if (!ok) throw InputError({path, 0, 0}, "read error");
  return ParseSafetensorsHeader(path, head, size);
}

bool IsSafetensorsPath(const std::string& path) {
  auto ends = [&](std::string_view tail) {
    return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends(".safetensors") || ends(".safetensors.index.json");
}

}  // namespace tally
