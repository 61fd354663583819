// The layout follows ggml-org/ggml docs/gguf.md: magic "GGUF", a uint32 version, uint64 tensor and
// key-value counts, the key-values (string key, uint32 type, value), then per tensor its name,
// uint32 n_dims, uint64 ne[n_dims], uint32 ggml_type and a uint64 offset into the data section,
// which starts at the next multiple of general.alignment (default 32). All little-endian.
#include "config/gguf.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "util/checked_math.h"
#include "util/error.h"
#include "util/text.h"
#include "util/units.h"

namespace tally {
namespace {

// Elements and bytes per block, from the block structs of ggml/src/ggml-common.h (their
// static_asserts) and ggml.c's type_traits; ids from ggml.h's enum ggml_type. QK_K is 256.
struct TypeRow {
  uint32_t id;
  GgmlType type;
};
constexpr TypeRow kTypes[] = {
    {0, {"F32", 1, 4}},         {1, {"F16", 1, 2}},         {2, {"Q4_0", 32, 18}},      {3, {"Q4_1", 32, 20}},
    {6, {"Q5_0", 32, 22}},      {7, {"Q5_1", 32, 24}},      {8, {"Q8_0", 32, 34}},      {9, {"Q8_1", 32, 36}},
    {10, {"Q2_K", 256, 84}},    {11, {"Q3_K", 256, 110}},   {12, {"Q4_K", 256, 144}},   {13, {"Q5_K", 256, 176}},
    {14, {"Q6_K", 256, 210}},   {15, {"Q8_K", 256, 292}},   {16, {"IQ2_XXS", 256, 66}}, {17, {"IQ2_XS", 256, 74}},
    {18, {"IQ3_XXS", 256, 98}}, {19, {"IQ1_S", 256, 50}},   {20, {"IQ4_NL", 32, 18}},   {21, {"IQ3_S", 256, 110}},
    {22, {"IQ2_S", 256, 82}},   {23, {"IQ4_XS", 256, 136}}, {24, {"I8", 1, 1}},         {25, {"I16", 1, 2}},
    {26, {"I32", 1, 4}},        {27, {"I64", 1, 8}},        {28, {"F64", 1, 8}},        {29, {"IQ1_M", 256, 56}},
    {30, {"BF16", 1, 2}},       {34, {"TQ1_0", 256, 54}},   {35, {"TQ2_0", 256, 66}},   {39, {"MXFP4", 32, 17}},
};

constexpr uint32_t kString = 8, kArray = 9;
constexpr int kMaxArrayDepth = 4;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

// The smallest encoding of one value of each gguf_type, which bounds how many a file can hold.
uint64_t MinBytes(uint32_t type) {
  static constexpr uint64_t kMin[] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8};
  return type < std::size(kMin) ? kMin[type] : 0;
}

// Lead bytes and continuation bytes only (overlong forms are not checked).
bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 4;
    if (n == 4 || n > s.size() - i - 1) return false;
    for (size_t k = 1; k <= n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n + 1;
  }
  return true;
}

class Cursor {
 public:
  Cursor(const std::string& file, std::string data, uint64_t size, void (*fill)(void*, std::string&, uint64_t),
         void* context)
      : file_(file), buf_(std::move(data)), size_(size), fill_(fill), context_(context) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  const std::string& file() const { return file_; }

  const char* Take(uint64_t n, const std::string& what) {
    if (n > left()) {
      throw AtByte(file_, pos_,
                   what + " of " + std::to_string(n) + " bytes runs past the end of the file (" +
                       std::to_string(size_) + " bytes)");
    }
    if (buf_.size() < pos_ + n && fill_ != nullptr) fill_(context_, buf_, pos_ + n);
    if (buf_.size() < pos_ + n) throw AtByte(file_, pos_, what + " runs past the end of the data read");
    const char* p = buf_.data() + pos_;
    pos_ += n;
    return p;
  }

  uint64_t Uint(unsigned bytes, const std::string& what) {
    const char* p = Take(bytes, what);
    uint64_t v = 0;
    for (unsigned i = bytes; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
  }

  std::string String(const std::string& what) {
    const uint64_t at = pos_;
    const uint64_t n = Uint(8, what + "'s length");
    if (n > left()) {
      throw AtByte(file_, at,
                   what + " of " + std::to_string(n) + " bytes runs past the end of the file (" +
                       std::to_string(size_) + " bytes)");
    }
    return std::string(Take(n, what), n);
  }

 private:
  std::string file_;
  std::string buf_;
  uint64_t size_;
  uint64_t pos_ = 0;
  void (*fill_)(void*, std::string&, uint64_t);
  void* context_;
};

// A count of items that take at least `min_bytes` each must fit in what is left of the file.
void CheckCount(Cursor& c, uint64_t at, uint64_t count, uint64_t min_bytes, const std::string& what) {
  if (min_bytes > 0 && count > c.left() / min_bytes) {
    throw AtByte(c.file(), at,
                 what + " " + std::to_string(count) + " is more than the rest of the file (" +
                     std::to_string(c.left()) + " bytes) can hold");
  }
}

void ReadValue(Cursor& c, uint32_t type, GgufValue* out, int depth);

void ReadArray(Cursor& c, GgufValue* out, int depth) {
  const uint64_t at = c.pos();
  const auto type = static_cast<uint32_t>(c.Uint(4, "an array's type"));
  if (MinBytes(type) == 0) throw AtByte(c.file(), at, "unknown array element type " + std::to_string(type));
  if (type == kArray && depth >= kMaxArrayDepth) throw AtByte(c.file(), at, "arrays nested too deeply");
  const uint64_t n_at = c.pos();
  const uint64_t n = c.Uint(8, "an array's length");
  CheckCount(c, n_at, n, MinBytes(type), "array length");
  if (out != nullptr) {
    out->array_type = type;
    out->array_length = n;
  }
  if (type != kString && type != kArray) {
    c.Take(n * MinBytes(type), "an array");
    return;
  }
  for (uint64_t i = 0; i < n; ++i) ReadValue(c, type, nullptr, depth + 1);
}

void ReadValue(Cursor& c, uint32_t type, GgufValue* out, int depth) {
  const uint64_t at = c.pos();
  if (out != nullptr) {
    out->type = type;
    out->offset = at;
  }
  switch (type) {
    case 0:
    case 2:
    case 4:
    case 10: {  // uint8, uint16, uint32, uint64
      const uint64_t v = c.Uint(static_cast<unsigned>(MinBytes(type)), "a value");
      if (out != nullptr) out->scalar = v;
      return;
    }
    case 1:
    case 3:
    case 5:
    case 11: {  // int8, int16, int32, int64: sign-extend
      const unsigned bytes = static_cast<unsigned>(MinBytes(type));
      const uint64_t v = c.Uint(bytes, "a value");
      const unsigned shift = 64 - 8 * bytes;
      if (out != nullptr) out->scalar = static_cast<int64_t>(v << shift) >> shift;
      return;
    }
    case 6:
    case 12: {  // float32, float64
      const uint64_t v = c.Uint(static_cast<unsigned>(MinBytes(type)), "a value");
      double d = 0;
      if (type == 6) {
        float f = 0;
        const auto bits = static_cast<uint32_t>(v);
        std::memcpy(&f, &bits, 4);
        d = f;
      } else {
        std::memcpy(&d, &v, 8);
      }
      if (out != nullptr) out->scalar = d;
      return;
    }
    case 7: {
      const uint64_t v = c.Uint(1, "a bool");
      if (v > 1) throw AtByte(c.file(), at, "a bool must be 0 or 1, got " + std::to_string(v));
      if (out != nullptr) out->scalar = v == 1;
      return;
    }
    case kString: {
      std::string s = c.String("a string");
      if (out != nullptr) out->scalar = std::move(s);
      return;
    }
    case kArray:
      ReadArray(c, out, depth);
      return;
    default:
      throw AtByte(c.file(), at - 4, "unknown value type " + std::to_string(type));
  }
}

// One tensor info, appended to `tensors` as soon as its name is read and checked (so that a repeated
// name is still seen when a later field fails: see FirstRepeat), with where its name starts in `at`.
void ReadTensorInfo(Cursor& c, std::vector<CheckpointTensor>& tensors, std::vector<uint64_t>& at,
                    std::vector<uint64_t>& offsets) {
  const uint64_t name_at = c.pos();
  std::string name = c.String("a tensor name");
  if (!ValidUtf8(name)) throw AtByte(c.file(), name_at, "a tensor name is not valid UTF-8");
  CheckpointTensor& t = tensors.emplace_back(CheckpointTensor{.name = std::move(name)});
  at.push_back(name_at);
  const uint64_t dims_at = c.pos();
  const uint64_t n_dims = c.Uint(4, "n_dims");
  if (n_dims == 0 || n_dims > kMaxDims) {
    throw AtByte(c.file(), dims_at, "tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (1 to 4)");
  }
  t.elements = 1;
  t.shape.reserve(n_dims);
  for (uint64_t i = 0; i < n_dims; ++i) {
    t.shape.push_back(c.Uint(8, "a dimension"));
    // ggml counts elements in int64_t.
    if (__builtin_mul_overflow(t.elements, t.shape.back(), &t.elements) || t.elements > INT64_MAX) {
      throw AtByte(c.file(), dims_at, "tensor '" + t.name + "': the shape's product exceeds 2^63 - 1");
    }
  }
  const uint64_t type_at = c.pos();
  const auto id = static_cast<uint32_t>(c.Uint(4, "a ggml type"));
  const GgmlType* type = FindGgmlType(id);
  if (type == nullptr)
    throw AtByte(c.file(), type_at, "tensor '" + t.name + "' has unknown ggml type " + std::to_string(id));
  if (t.shape[0] % type->block != 0) {
    throw AtByte(c.file(), type_at,
                 "tensor '" + t.name + "': its first dimension " + std::to_string(t.shape[0]) +
                     " is not a multiple of " + type->name + "'s block of " + std::to_string(type->block));
  }
  t.dtype = type->name;
  t.bytes = CheckedMul(t.elements / type->block, type->block_bytes, "a tensor's bytes");
  offsets.push_back(c.Uint(8, "a tensor offset"));
}

// The index of the first tensor whose name an earlier one has, or npos: the error a set of the
// names seen so far would have met first, in n log n steps over hashes, the names compared only
// where their hashes agree (a std::set of names costs a node and a string per tensor).
size_t FirstRepeat(const std::vector<CheckpointTensor>& tensors) {
  struct Key {
    size_t hash, index;
  };
  std::vector<Key> keys(tensors.size());
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = {std::hash<std::string_view>{}(tensors[i].name), i};
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    if (a.hash != b.hash) return a.hash < b.hash;
    const int order = tensors[a.index].name.compare(tensors[b.index].name);
    return order != 0 ? order < 0 : a.index < b.index;
  });
  size_t first = std::string::npos;
  for (size_t k = 1; k < keys.size(); ++k) {
    // Equal names sit together, in file order: any but the first of a run is a repeat.
    if (keys[k].hash == keys[k - 1].hash && tensors[keys[k].index].name == tensors[keys[k - 1].index].name) {
      first = std::min(first, keys[k].index);
    }
  }
  return first;
}

void CheckRepeats(const std::string& file, const std::vector<CheckpointTensor>& tensors,
                  const std::vector<uint64_t>& at) {
  if (const size_t i = FirstRepeat(tensors); i != std::string::npos) {
    throw AtByte(file, at[i], "tensor '" + tensors[i].name + "' appears twice");
  }
}

uint64_t Alignment(const GgufFile& g, const std::string& file) {
  auto it = g.metadata.find("general.alignment");
  if (it == g.metadata.end()) return 32;
  const auto* v = std::get_if<uint64_t>(&it->second.scalar);
  if (it->second.type != 4 || v == nullptr || *v == 0 || (*v & (*v - 1)) != 0) {
    throw AtByte(file, it->second.offset, "general.alignment must be a uint32 power of two");
  }
  return *v;
}

// The tensors, sorted by offset, must not overlap and must end within the file.
void CheckData(const GgufFile& g, const std::vector<uint64_t>& offsets, uint64_t alignment, uint64_t file_size,
               const std::string& file) {
  std::vector<size_t> order(offsets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Writers lay the tensors out in the order they list them: then there is nothing to sort.
  if (!std::is_sorted(offsets.begin(), offsets.end())) {
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  }
  uint64_t end = 0;
  for (size_t i : order) {
    const CheckpointTensor& t = g.checkpoint.tensors[i];
    if (offsets[i] % alignment != 0) {
      throw AtByte(file, g.data_offset,
                   "tensor '" + t.name + "' starts at data offset " + std::to_string(offsets[i]) +
                       ", not a multiple of the alignment " + std::to_string(alignment));
    }
    if (offsets[i] < end)
      throw AtByte(file, g.data_offset + offsets[i], "tensor '" + t.name + "' overlaps the one before it");
    if (__builtin_add_overflow(offsets[i], t.bytes, &end) || end > file_size - g.data_offset) {
      const u128 want = static_cast<u128>(g.data_offset) + offsets[i] + t.bytes;
      throw AtByte(file, file_size,
                   "the file is truncated: tensor '" + t.name + "' ends at byte " +
                       (want > UINT64_MAX ? std::string("past 2^64") : FormatGrouped(static_cast<uint64_t>(want))) +
                       ", the file has " + FormatGrouped(file_size) + " bytes");
    }
  }
}

void FillFromStream(void* context, std::string& buffer, uint64_t want) {
  auto* in = static_cast<std::ifstream*>(context);
  // Read ahead in 1 MiB steps: the metadata (a tokenizer's vocabulary) is read value by value.
  const uint64_t target = std::max<uint64_t>(want, buffer.size() + (uint64_t{1} << 20));
  const size_t old = buffer.size();
  buffer.resize(target);
  in->read(buffer.data() + old, static_cast<std::streamsize>(target - old));
  buffer.resize(old + static_cast<size_t>(in->gcount()));
  in->clear();
}

}  // namespace

const GgmlType* FindGgmlType(uint32_t id) {
  for (const TypeRow& row : kTypes) {
    if (row.id == id) return &row.type;
  }
  return nullptr;
}

GgufFile ParseGguf(const std::string& file, std::string data, uint64_t file_size,
                   void (*fill)(void*, std::string&, uint64_t), void* context) {
  Cursor c(file, std::move(data), file_size, fill, context);
  GgufFile g;
  if (std::string_view(c.Take(4, "the magic"), 4) != "GGUF") throw AtByte(file, 0, "not a GGUF file (no 'GGUF' magic)");
  g.version = static_cast<uint32_t>(c.Uint(4, "the version"));
  // A file written big-endian holds its version byte-swapped: 2 reads as 33554432, 3 as 50331648.
  if (const uint32_t swapped = __builtin_bswap32(g.version); swapped == 2 || swapped == 3) {
    throw AtByte(file, 4,
                 "big-endian GGUF (version " + std::to_string(swapped) +
                     " byte-swapped) is not read; tally reads little-endian GGUF");
  }
  if (g.version != 2 && g.version != 3) {
    throw AtByte(file, 4, "GGUF version " + std::to_string(g.version) + " is not supported (2 and 3 are)");
  }
  const uint64_t n_tensors = c.Uint(8, "the tensor count");
  const uint64_t n_kv = c.Uint(8, "the key-value count");
  // A key-value takes at least 13 bytes (empty key, type, one-byte value); a tensor info 24.
  CheckCount(c, 16, n_kv, 13, "key-value count");
  CheckCount(c, 8, n_tensors, 24, "tensor count");
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t at = c.pos();
    std::string key = c.String("a key");
    if (!ValidUtf8(key)) throw AtByte(file, at, "a key is not valid UTF-8");
    const auto type = static_cast<uint32_t>(c.Uint(4, "a value type"));
    GgufValue value;
    ReadValue(c, type, &value, 0);
    if (!g.metadata.emplace(key, std::move(value)).second) throw AtByte(file, at, "key '" + key + "' appears twice");
  }
  g.checkpoint.format = "gguf";
  g.checkpoint.files.push_back(file);
  std::vector<uint64_t> offsets, name_at;
  // n_tensors fits the file (CheckCount); the reservation is capped all the same.
  const auto reserve = static_cast<size_t>(std::min<uint64_t>(n_tensors, uint64_t{1} << 16));
  g.checkpoint.tensors.reserve(reserve);
  name_at.reserve(reserve);
  offsets.reserve(reserve);
  try {
    for (uint64_t i = 0; i < n_tensors; ++i) ReadTensorInfo(c, g.checkpoint.tensors, name_at, offsets);
  } catch (...) {
    // A name repeated before the entry that failed is the first error in the file.
    CheckRepeats(file, g.checkpoint.tensors, name_at);
    throw;
  }
  CheckRepeats(file, g.checkpoint.tensors, name_at);
  const uint64_t alignment = Alignment(g, file);
  g.data_offset = c.pos() + (alignment - c.pos() % alignment) % alignment;
  if (n_tensors > 0 && g.data_offset > file_size) throw AtByte(file, file_size, "the file ends before its tensor data");
  CheckData(g, offsets, alignment, file_size, file);
  for (const CheckpointTensor& t : g.checkpoint.tensors) {
    g.checkpoint.elements = CheckedAdd(g.checkpoint.elements, t.elements, "the checkpoint's elements");
    g.checkpoint.bytes = CheckedAdd(g.checkpoint.bytes, t.bytes, "the checkpoint's bytes");
    g.checkpoint.bytes_by_dtype[Lower(t.dtype)] += t.bytes;
  }
  return g;
}

GgufFile ReadGgufFile(const std::string& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec)
    throw InputError({path, 0, 0}, std::filesystem::exists(path) ? "cannot read the file's size" : "no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "cannot open file for reading");
  return ParseGguf(path, "", size, FillFromStream, &in);
}

}  // namespace tally
