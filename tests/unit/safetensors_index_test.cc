// Many tensors and many shards (safetensors_index.cc): exact totals over a 20,020-tensor checkpoint
// read as one file, as shards with an index and as a directory of shards; and, the shards being read
// on several threads, the first bad shard in shard order is the one reported.
#include <doctest/doctest.h>

#include "config/safetensors.h"
#include "weights_test_util.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using testing::Le;
using testing::Message;
using testing::Safetensors;
using testing::TempDir;
using testing::WriteFile;

// Tensor i: BF16 when i is even, F32 when odd, of shape [i % 7 + 1, i % 13 + 1], named by a block of
// 91 and its place in it ("model.layers.12.t5.weight"), so that numeric order is not name order.
constexpr int kTensors = 20'020;

std::string Name(int i) { return "model.layers." + std::to_string(i / 91) + ".t" + std::to_string(i % 91) + ".weight"; }

// The header of tensors [begin, end), in that order, laid end to end; `data` receives their bytes.
std::string Header(int begin, int end, uint64_t* data) {
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t at = 0;
  for (int i = begin; i < end; ++i) {
    const uint64_t rows = static_cast<uint64_t>(i % 7 + 1), cols = static_cast<uint64_t>(i % 13 + 1);
    const uint64_t bytes = rows * cols * (i % 2 == 0 ? 2 : 4);
    json += ",\"" + Name(i) + "\":{\"dtype\":\"" + (i % 2 == 0 ? "BF16" : "F32") + "\",\"shape\":[" +
            std::to_string(rows) + "," + std::to_string(cols) + "],\"data_offsets\":[" + std::to_string(at) + "," +
            std::to_string(at + bytes) + "]}";
    at += bytes;
  }
  *data = at;
  return json + "}";
}

// Sparse: the data is a hole of the right length.
void WriteShard(const fs::path& path, int begin, int end) {
  uint64_t data = 0;
  const std::string json = Header(begin, end, &data);
  WriteFile(path, Safetensors(json, data, false), 8 + json.size() + data);
}

void CheckTotals(const CheckpointInfo& c, size_t files) {
  // By the Chinese remainder theorem, any 182 = 2 x 7 x 13 consecutive i take each triple
  // (i mod 2, i mod 7, i mod 13) once: each parity holds (1 + ... + 7)(1 + ... + 13) = 28 x 91 = 2,548
  // elements per 182 tensors, and 20,020 = 110 x 182. BF16: 110 x 2,548 = 280,280 elements, 560,560
  // bytes; F32: 280,280 elements, 1,121,120 bytes.
  CHECK(c.tensors.size() == 20'020);
  CHECK(c.elements == 560'560);
  CHECK(c.bytes == 1'681'680);
  CHECK(c.bytes_by_dtype.size() == 2);
  CHECK(c.bytes_by_dtype.at("bf16") == 560'560);
  CHECK(c.bytes_by_dtype.at("f32") == 1'121'120);
  CHECK(c.files.size() == files);
}

std::string ShardName(int s, int count) {
  const std::string n = std::to_string(s + 1), of = std::to_string(count);
  return "model-" + std::string(5 - n.size(), '0') + n + "-of-" + std::string(5 - of.size(), '0') + of + ".safetensors";
}

TEST_CASE("safetensors: 20,020 tensors read with exact totals from one file, an index of 7 shards, a directory") {
  TempDir tmp;
  std::vector<std::string> notes;
  WriteShard(tmp.path() / "one" / "model.safetensors", 0, kTensors);
  const CheckpointInfo one = ReadSafetensors((tmp.path() / "one" / "model.safetensors").string(), notes);
  CheckTotals(one, 1);
  // One file's tensors by name: "model.layers.0.t0", ".t1", ".t10", ..., and block 99 last of all.
  CHECK(one.tensors[0].name == "model.layers.0.t0.weight");
  CHECK(one.tensors[2].name == "model.layers.0.t10.weight");
  CHECK(one.tensors.back().name == "model.layers.99.t90.weight");

  const fs::path dir = tmp.path() / "shards";
  std::string index = "{\"metadata\":{\"total_size\":1681680},\"weight_map\":{";
  for (int s = 0; s < 7; ++s) {
    const int begin = s * kTensors / 7, end = (s + 1) * kTensors / 7;
    WriteShard(dir / ShardName(s, 7), begin, end);
    for (int i = begin; i < end; ++i) index += (i > 0 ? ",\"" : "\"") + Name(i) + "\":\"" + ShardName(s, 7) + "\"";
  }
  WriteFile(dir / "model.safetensors.index.json", index + "}}");
  const CheckpointInfo sharded = ReadSafetensors(dir.string(), notes);
  CheckTotals(sharded, 7);
  CHECK(sharded.files.front() == (dir / ShardName(0, 7)).string());
  CHECK(sharded.files.back() == (dir / ShardName(6, 7)).string());
  CHECK(notes.empty());  // total_size agrees

  fs::remove(dir / "model.safetensors.index.json");
  CheckTotals(ReadSafetensors(dir.string(), notes), 7);
  CHECK(notes.empty());
  // A directory without weights gives none (and starts no reader).
  fs::create_directories(tmp.path() / "none");
  CHECK(ReadSafetensors((tmp.path() / "none").string(), notes).files.empty());
}

TEST_CASE("safetensors: of several bad shards, the first in shard order is reported, every time") {
  TempDir tmp;
  const fs::path dir = tmp.path();
  constexpr int kShards = 12, kPer = 50;
  std::string index = "{\"weight_map\":{";
  for (int s = 0; s < kShards; ++s) {
    WriteShard(dir / ShardName(s, kShards), s * kPer, (s + 1) * kPer);
    for (int i = s * kPer; i < (s + 1) * kPer; ++i) {
      index += (i > 0 ? ",\"" : "\"") + Name(i) + "\":\"" + ShardName(s, kShards) + "\"";
    }
  }
  WriteFile(dir / "model.safetensors.index.json", index + "}}");
  std::vector<std::string> notes;
  auto read = [&] { return Message([&] { ReadSafetensors(dir.string(), notes); }); };
  REQUIRE(read() == "(no error)");
  // Shards 6, 9 and 12 broken three ways; 6's error stands, however the threads were scheduled.
  WriteFile(dir / ShardName(5, kShards), "abc");
  WriteFile(dir / ShardName(8, kShards), Le(100'000'001, 8));
  fs::remove(dir / ShardName(11, kShards));
  const std::string sixth = (dir / ShardName(5, kShards)).string() +
                            ": error: at byte 0: the file is 3 bytes, too short for the 8-byte "
                            "header length";
  for (int run = 0; run < 20; ++run) CHECK(read() == sixth);
  // A shard before them that lacks a tensor the index puts in it: the index's error comes first.
  WriteShard(dir / ShardName(2, kShards), 2 * kPer, 3 * kPer - 1);
  const std::string lacks = (dir / "model.safetensors.index.json").string() + ": error: 'weight_map' puts '" +
                            Name(3 * kPer - 1) + "' in " + ShardName(2, kShards) + ", which does not hold it";
  for (int run = 0; run < 5; ++run) CHECK(read() == lacks);
  // Without the index, the directory's files in name order: the sixth is again the first bad one.
  fs::remove(dir / "model.safetensors.index.json");
  for (int run = 0; run < 5; ++run) CHECK(read() == sixth);
}

}  // namespace
}  // namespace tally
