// safetensors headers: single files, sharded indexes and directories, exact counts and bytes,
// and hostile headers.
#include "config/safetensors.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include "config/load_config.h"
#include "config/resolve.h"
#include "graph/build_graph.h"
#include "sections/estimate_report.h"
#include "util/units.h"
#include "weights_test_util.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using testing::Header;
using testing::Json;
using testing::Le;
using testing::Message;
using testing::Safetensors;
using testing::TempDir;
using testing::WriteFile;

TEST_CASE("safetensors: one file's header gives names, dtypes, shapes and exact bytes") {
  uint64_t data = 0;
  // F32 [2, 3] = 24 bytes, BF16 [4] = 8 bytes, an empty I64 [0].
  const Json h = Header({{"a", "F32", {2, 3}, 4}, {"b", "BF16", {4}, 2}, {"c", "I64", {0}, 8}}, &data);
  std::string json = h.dump();
  json.insert(json.size() - 1, ",\"__metadata__\":{\"format\":\"pt\"}");
  const std::string file = Safetensors(json + "    ", data);  // padded with spaces, as writers do
  const SafetensorsHeader s = ParseSafetensorsHeader("m.safetensors", file, file.size());
  REQUIRE(s.tensors.size() == 3);
  CHECK(data == 32);
  CHECK(s.data_bytes == 32);
  CHECK(s.tensors[0].name == "a");
  CHECK(s.tensors[0].elements == 6);
  CHECK(s.tensors[0].bytes == 24);
  CHECK(s.tensors[1].dtype == "BF16");
  CHECK(s.tensors[1].bytes == 8);
  CHECK(s.tensors[2].elements == 0);
}

TEST_CASE("safetensors: hostile headers are errors with the file and the byte") {
  auto parse = [](const std::string& json, uint64_t data, int64_t size_change = 0) {
    const std::string f = Safetensors(json, data);
    return Message([&] {
      ParseSafetensorsHeader("m.safetensors", f, static_cast<uint64_t>(static_cast<int64_t>(f.size()) + size_change));
    });
  };
  const std::string p = "m.safetensors: error: at byte ";
  CHECK(Message([] { ParseSafetensorsHeader("m.safetensors", "abc", 3); }) ==
        p + "0: the file is 3 bytes, too short for the 8-byte header length");
  CHECK(Message([] { ParseSafetensorsHeader("m.safetensors", Le(1000, 8) + "{}", 10); }) ==
        p + "0: header length 1000 runs past the end of the file (10 bytes)");
  CHECK(Message([] { ParseSafetensorsHeader("m.safetensors", Le(100'000'001, 8), 1ULL << 40); }) ==
        p + "0: header length 100000001 is over the cap of 100,000,000 bytes; not a safetensors file?");
  CHECK(parse("{\"a\":1", 0) == p + "14: the header is not valid JSON: syntax error while parsing object - "
                                    "unexpected end of input; expected '}'");
  CHECK(
      parse(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          12) == p + "62: tensor 'b' overlaps the one before it (its data begins at 4, before 8)");
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12) ==
        p + "9: a hole of 4 bytes before tensor 'a' (no tensor covers them)");
  // A name given twice, whether its two entries differ or not, is neither a hole nor one tensor
  // (issue 28); the byte is its second entry's: 8 + 54.
  const std::string named_twice =
      "62: tensor 'a' is named twice in the header; a safetensors file names each tensor once";
  CHECK(
      parse(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          8) == p + named_twice);
  CHECK(
      parse(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
          4) == p + named_twice);
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8) ==
        p + "9: tensor 'a': data_offsets end before they begin");
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0) ==
        p + "9: tensor 'a': the shape's product exceeds 2^64 - 1");
  CHECK(parse(R"({"a":{"dtype":"F24","shape":[2],"data_offsets":[0,6]}})", 6) ==
        p + "9: tensor 'a' has an unknown dtype \"F24\"");
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8) ==
        p + "9: tensor 'a': data_offsets span 8 bytes, but F32 of this shape needs 12");
  CHECK(parse("{\"\xff\":{}}", 0) ==
        p + "10: the header is not valid JSON: syntax error while parsing object key - invalid string: "
            "ill-formed UTF-8 byte");
  // Found by safetensors_fuzzer: a number beyond double's range is nlohmann's out_of_range, not a parse_error.
  CHECK(parse("{\"a\":1e9999}", 0) == p + "8: the header is not valid JSON: a number out of range");
  const std::string ok = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  const uint64_t whole = 8 + ok.size() + 16;  // 79
  CHECK(parse(ok, 16, -6) == p + std::to_string(whole - 6) + ": the file is truncated: the header describes " +
                                 std::to_string(whole) + " bytes, the file has " + std::to_string(whole - 6) +
                                 ", 6 bytes missing");
  CHECK(parse(ok, 16, 2) == p + std::to_string(whole) + ": 2 bytes follow the last tensor's data");
}

TEST_CASE("safetensors: headers in rarer JSON read as the common form does") {
  // Each header holds a (F32 [2], 8 bytes) and b (BF16 [3], 6 bytes after it) in some other
  // spelling: escapes, non-ASCII, other metadata, extra keys, keys out of order, a repeated key
  // inside an entry (the last stands, as nlohmann::json keeps it), a byte-order mark. A repeated
  // tensor name is an error (the hostile headers above).
  const std::string a = R"("dtype":"F32","shape":[2],"data_offsets":[0,8])";
  const std::string b = R"("dtype":"BF16","shape":[3],"data_offsets":[8,14])";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"plain", "{\"b\":{" + b + "},\"a\":{" + a + "}}"},
      {"escaped name", "{\"\\u0061\":{" + a + "},\"b\":{" + b + "}}"},
      {"escaped dtype", R"({"a":{"dtype":"F\u0033\u0032","shape":[2],"data_offsets":[0,8]},"b":{)" + b + "}}"},
      {"metadata of numbers", "{\"__metadata__\":{\"n\":1,\"o\":[true]},\"a\":{" + a + "},\"b\":{" + b + "}}"},
      {"an extra key", "{\"a\":{" + a + ",\"note\":null},\"b\":{" + b + "}}"},
      {"keys reordered", R"({"a":{"data_offsets":[0,8],"shape":[2],"dtype":"F32"},"b":{)" + b + "}}"},
      {"a repeated key", R"({"a":{"dtype":"I8","dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{)" + b + "}}"},
      {"a byte-order mark", "\xef\xbb\xbf{\"a\":{" + a + "},\"b\":{" + b + "}}"},
      {"newlines and tabs", "{\n\t\"a\" : {" + a + "} ,\r\n \"b\":{" + b + "}\n}\n"},
  };
  for (const auto& entry : cases) {
    const std::string& what = entry.first;  // clang cannot CAPTURE a structured binding
    CAPTURE(what);
    const std::string file = Safetensors(entry.second, 14);
    const SafetensorsHeader h = ParseSafetensorsHeader("m.safetensors", file, file.size());
    REQUIRE(h.tensors.size() == 2);
    CHECK(h.tensors[0].name == "a");
    CHECK(h.tensors[0].dtype == "F32");
    CHECK(h.tensors[0].shape == std::vector<uint64_t>{2});
    CHECK(h.tensors[0].bytes == 8);
    CHECK(h.tensors[1].name == "b");
    CHECK(h.tensors[1].bytes == 6);
    CHECK(h.data_bytes == 14);
  }
  // Names beyond ASCII, sorted by their bytes: "z" (0x7a) before "é" (0xc3 0xa9).
  const std::string json = "{\"\xc3\xa9\":{" + b + "},\"z\":{" + a + "}}";
  const SafetensorsHeader h = ParseSafetensorsHeader("m.safetensors", Safetensors(json, 14), 8 + json.size() + 14);
  REQUIRE(h.tensors.size() == 2);
  CHECK(h.tensors[0].name == "z");
  CHECK(h.tensors[1].name == "\xc3\xa9");
}

TEST_CASE("safetensors: 20,000 tensors in one header: read in order, an error's byte where its entry is") {
  // Written out of name order, as writers order by dtype and offset; each F32 [1] takes 4 bytes.
  const int n = 20'000;
  std::string json = "{";
  uint64_t hole_entry = 0;  // where the entry of the tensor after the hole starts, in the JSON
  for (int i = n - 1; i >= 0; --i) {
    const uint64_t begin = 4 * static_cast<uint64_t>(n - 1 - i) + (i == 0 ? 4 : 0);  // a hole before t0
    if (i == 0) hole_entry = json.size();
    json += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
            std::to_string(begin) + "," + std::to_string(begin + 4) + "]}" + (i > 0 ? "," : "}");
  }
  const uint64_t data = 4 * n + 4;
  CHECK(Message([&] { ParseSafetensorsHeader("m.safetensors", Safetensors(json, data), 8 + json.size() + data); }) ==
        "m.safetensors: error: at byte " + std::to_string(8 + hole_entry) +
            ": a hole of 4 bytes before tensor 't0' (no tensor covers them)");
  // Without the hole: every tensor, by name ("t0" < "t1" < "t10" ...), and their bytes.
  json.replace(hole_entry, json.size() - hole_entry,
               "\"t0\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" + std::to_string(4 * (n - 1)) + "," +
                   std::to_string(4 * n) + "]}}");
  const SafetensorsHeader h =
      ParseSafetensorsHeader("m.safetensors", Safetensors(json, 4 * n), 8 + json.size() + 4 * n);
  REQUIRE(h.tensors.size() == n);
  CHECK(h.tensors[0].name == "t0");
  CHECK(h.tensors[1].name == "t1");
  CHECK(h.tensors[2].name == "t10");
  CHECK(h.tensors[n - 1].name == "t9999");
  CHECK(h.data_bytes == 4 * n);
}

// Llama-3.1-8B's shapes (its model.safetensors.index.json names them; config: hidden 4096,
// intermediate 14336, 32 layers, 8 KV heads of 128, vocabulary 128,256, untied), all BF16.
std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>, uint64_t>> LlamaLayer(int i) {
  const std::string l = "model.layers." + std::to_string(i) + ".";
  return {{l + "input_layernorm.weight", "BF16", {4096}, 2},
          {l + "mlp.down_proj.weight", "BF16", {4096, 14336}, 2},
          {l + "mlp.gate_proj.weight", "BF16", {14336, 4096}, 2},
          {l + "mlp.up_proj.weight", "BF16", {14336, 4096}, 2},
          {l + "post_attention_layernorm.weight", "BF16", {4096}, 2},
          {l + "self_attn.k_proj.weight", "BF16", {1024, 4096}, 2},
          {l + "self_attn.o_proj.weight", "BF16", {4096, 4096}, 2},
          {l + "self_attn.q_proj.weight", "BF16", {4096, 4096}, 2},
          {l + "self_attn.v_proj.weight", "BF16", {1024, 4096}, 2}};
}

// Four sparse shards of eight layers, the embedding in the first, the norm and head in the last.
void WriteLlama31(const fs::path& dir) {
  Json index = {{"metadata", {{"total_size", 16'060'522'496ULL}}}, {"weight_map", Json::object()}};
  for (int s = 0; s < 4; ++s) {
    auto tensors = s == 0 ? decltype(LlamaLayer(0)){{"model.embed_tokens.weight", "BF16", {128256, 4096}, 2}}
                          : decltype(LlamaLayer(0)){};
    for (int i = 8 * s; i < 8 * s + 8; ++i) {
      for (auto& t : LlamaLayer(i)) tensors.push_back(t);
    }
    if (s == 3) {
      tensors.push_back({"model.norm.weight", "BF16", {4096}, 2});
      tensors.push_back({"lm_head.weight", "BF16", {128256, 4096}, 2});
    }
    uint64_t data = 0;
    const std::string json = Header(tensors, &data).dump();
    const std::string shard = "model-0000" + std::to_string(s + 1) + "-of-00004.safetensors";
    WriteFile(dir / shard, Safetensors(json, data, false), 8 + json.size() + data);
    for (auto& t : tensors) index["weight_map"][std::get<0>(t)] = shard;
  }
  WriteFile(dir / "model.safetensors.index.json", index.dump(2));
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "hf" / "Meta-Llama-3-8B.json", dir / "config.json");
}

TEST_CASE("safetensors: a sharded Llama-3.1-8B reproduces its index total_size from the headers") {
  TempDir tmp;
  WriteLlama31(tmp.path());
  std::vector<std::string> notes;
  const CheckpointInfo c = ReadSafetensors((tmp.path() / "model.safetensors.index.json").string(), notes);
  // meta-llama/Llama-3.1-8B model.safetensors.index.json: "total_size": 16060522496, which is
  // 2 bytes (BF16) x 8,030,261,248 parameters (the count the Hub shows for the model).
  CHECK(c.bytes == 16'060'522'496);
  CHECK(c.elements == 8'030'261'248);
  CHECK(c.files.size() == 4);
  CHECK(c.tensors.size() == 291);  // 32 x 9 + embedding, norm, head
  CHECK(c.bytes_by_dtype.at("bf16") == 16'060'522'496);
  CHECK(notes.empty());
  // The snapshot directory: config.json plus the weights; untied, so the three counts agree.
  const ModelSpec spec = ResolveModel(tmp.path().string());
  REQUIRE(spec.checkpoint.has_value());
  Evaluation evaluation(spec);
  const Report r = EstimateReport(evaluation, ResolveSettings({}, spec), {});
  CHECK(std::get<uint64_t>(r.Find("params.total")->value) == 8'030'261'248);
  CHECK(std::get<uint64_t>(r.Find("params.checkpoint")->value) == 8'030'261'248);
  CHECK(std::get<uint64_t>(r.Find("checkpoint.bytes")->value) == 16'060'522'496);
  CHECK(std::get<uint64_t>(r.Find("checkpoint.dtypes.bf16")->value) == 16'060'522'496);
  // One shard cut short: the error names it and the bytes missing.
  const fs::path shard = tmp.path() / "model-00002-of-00004.safetensors";
  const uint64_t size = fs::file_size(shard);
  fs::resize_file(shard, size - 1000);
  CHECK(Message([&] { ResolveModel(tmp.path().string()); }) ==
        shard.string() + ": error: at byte " + std::to_string(size - 1000) +
            ": the file is truncated: the header describes " + FormatGrouped(size) + " bytes, the file has " +
            FormatGrouped(size - 1000) + ", 1,000 bytes missing");
}

TEST_CASE("safetensors: an index without its shards is a note — with some of them, an error") {
  TempDir tmp;
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "hf" / "gpt2.json", tmp.path() / "config.json");
  const Json index = {{"weight_map", {{"a", "model-1.safetensors"}, {"b", "model-2.safetensors"}}}};
  WriteFile(tmp.path() / "model.safetensors.index.json", index.dump());
  const std::string index_path = (tmp.path() / "model.safetensors.index.json").string();
  ModelSpec spec = ResolveModel(tmp.path().string());
  CHECK_FALSE(spec.checkpoint.has_value());
  REQUIRE(spec.notes.size() == 1);
  CHECK(spec.notes[0] == index_path + " names 2 shards and none is present; the checkpoint was not read");
  uint64_t data = 0;
  const std::string json = Header({{"a", "F32", {2}, 4}}, &data).dump();
  WriteFile(tmp.path() / "model-1.safetensors", Safetensors(json, data));
  CHECK(Message([&] { ResolveModel(tmp.path().string()); }) ==
        (tmp.path() / "model-2.safetensors").string() + ": error: no such file");
}

TEST_CASE("safetensors: an index out of order, with a repeated tensor, reads as nlohmann::json reads it") {
  TempDir tmp;
  uint64_t d1 = 0, d2 = 0;
  const std::string s1 = Header({{"a", "F32", {2}, 4}, {"b", "F32", {1}, 4}}, &d1).dump();  // 12 bytes
  const std::string s2 = Header({{"c", "BF16", {5}, 2}}, &d2).dump();                       // 10 bytes
  WriteFile(tmp.path() / "s1.safetensors", Safetensors(s1, d1));
  WriteFile(tmp.path() / "s2.safetensors", Safetensors(s2, d2));
  const std::string index = (tmp.path() / "model.safetensors.index.json").string();
  auto read = [&](const std::string& text, std::vector<std::string>& notes) {
    WriteFile(index, text);
    return ReadSafetensors(index, notes);
  };
  // The last "a" stands; metadata may hold more than total_size; the second spells "a" as \u0061.
  for (const std::string& map :
       {std::string(R"({"c":"s2.safetensors","b":"s1.safetensors","a":"s2.safetensors",)"
                    R"("a":"s1.safetensors"})"),
        std::string(R"({"c":"s2.safetensors","b":"s1.safetensors","\u0061":"s1.safetensors"})")}) {
    CAPTURE(map);
    std::vector<std::string> notes;
    const CheckpointInfo c = read(R"({"weight_map":)" + map + R"(,"metadata":{"format":"pt","total_size":22}})", notes);
    CHECK(c.files ==
          std::vector<std::string>{(tmp.path() / "s1.safetensors").string(), (tmp.path() / "s2.safetensors").string()});
    REQUIRE(c.tensors.size() == 3);
    CHECK(c.tensors[0].name == "a");
    CHECK(c.tensors[2].name == "c");
    CHECK(c.bytes == 22);
    CHECK(notes.empty());
  }
  std::vector<std::string> notes;
  read(R"({"metadata":{"total_size":99},"weight_map":{"a":"s1.safetensors","c":"s2.safetensors"}})", notes);
  CHECK(notes ==
        std::vector<std::string>{index + ": metadata.total_size is 99 bytes, the shards' headers describe 22"});
  // Errors name the first entry at fault in tensor order, whatever the file's order.
  CHECK(Message([&] { read(R"({"weight_map":{"z":"/abs.safetensors","y":""}})", notes); }) ==
        index + ": error: 'weight_map' entry 'y' must name a shard file beside the index");
  CHECK(Message([&] { read(R"({"weight_map":{"z":"s1.safetensors","y":7}})", notes); }) ==
        index + ": error: 'weight_map' entry 'y' must name a shard file beside the index");
  CHECK(Message([&] {
          read(R"({"weight_map":{"a":"s1.safetensors","q":"s1.safetensors","p":"s1.safetensors"}})", notes);
        }) == index + ": error: 'weight_map' puts 'p' in s1.safetensors, which does not hold it");
}

// Issue 28: an index entry may not reach outside the snapshot, in the scanned form or the rare one.
TEST_CASE("safetensors: an index entry with a '..' component is refused, naming the entry") {
  TempDir tmp;
  const std::string index = (tmp.path() / "model.safetensors.index.json").string();
  std::vector<std::string> notes;
  auto read = [&](const std::string& text) {
    WriteFile(index, text);
    return ReadSafetensors(index, notes);
  };
  const std::string outside = "', which is outside the index's folder (a shard file must be beside it)";
  CHECK(Message([&] { read(R"({"weight_map":{"w":"../../../etc/passwd"}})"); }) ==
        index + ": error: 'weight_map' entry 'w' names '../../../etc/passwd" + outside);
  CHECK(Message([&] { read(R"({"weight_map":{"w":"sub/../../x.safetensors"}})"); }) ==
        index + ": error: 'weight_map' entry 'w' names 'sub/../../x.safetensors" + outside);
  // metadata with a list is past JsonScan's subset: the nlohmann::json path checks the same.
  CHECK(Message([&] { read(R"({"metadata":{"l":[1]},"weight_map":{"w":"../s.safetensors"}})"); }) ==
        index + ": error: 'weight_map' entry 'w' names '../s.safetensors" + outside);
  // A long entry is quoted up to 80 bytes.
  const std::string deep = "../" + std::string(100, 'x');
  CHECK(Message([&] { read(R"({"weight_map":{"w":")" + deep + R"("}})"); }) ==
        index + ": error: 'weight_map' entry 'w' names '" + deep.substr(0, 80) + "..." + outside);
}

TEST_CASE("safetensors: a FIFO shard is not a regular file — a link loop is named as one") {
  TempDir tmp;
  const std::string fifo = (tmp.path() / "fifo.safetensors").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(Message([&] { ReadSafetensorsFile(fifo); }) ==
        fifo +
            ": error: is not a regular file (a FIFO, a device or a socket); safetensors weights are read from "
            "files");
  const fs::path loop = tmp.path() / "loop.safetensors";
  fs::create_symlink("loop.safetensors", loop);  // relative, to itself
  CHECK(Message([&] { ReadSafetensorsFile(loop.string()); }) ==
        loop.string() + ": error: is a symbolic link loop (its links lead back to themselves); nothing to read");
}

// Issue 28: __metadata__ nested 4 x 10^7 deep took 12.8 s and 3 GB; past the configs' cap it is refused.
TEST_CASE("safetensors: values nested more than 2,000 deep are refused at the bracket") {
  const std::string open = R"({"__metadata__":{"a":)";
  auto nested = [&](size_t arrays) { return open + std::string(arrays, '[') + std::string(arrays, ']') + "}}"; };
  // 2 objects + 1,998 lists: 2,000 levels, read (a header without tensors).
  const std::string ok = Safetensors(nested(1998), 0);
  CHECK(ParseSafetensorsHeader("m.safetensors", ok, ok.size()).tensors.empty());
  // One more: the 2,001st bracket opens at the text's offset open.size() + 1,999 - 1, after the 8 bytes.
  const std::string deep = Safetensors(nested(1999), 0);
  CHECK(Message([&] { ParseSafetensorsHeader("m.safetensors", deep, deep.size()); }) ==
        "m.safetensors: error: at byte " + std::to_string(8 + open.size() + 1998) +
            ": the header's values are nested more than 2000 levels deep");
  // Brackets inside a string do not count.
  const std::string quoted = Safetensors(open + "\"" + std::string(3000, '[') + "\"}}", 0);
  CHECK(ParseSafetensorsHeader("m.safetensors", quoted, quoted.size()).tensors.empty());
}

TEST_CASE("safetensors: a tied head stored twice counts twice in params.checkpoint, once in params.total") {
  TempDir tmp;
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "hf" / "gpt2.json", tmp.path() / "config.json");
  // GPT-2 small as transformers saves it: wte and lm_head both stored (50257 x 768 each).
  uint64_t data = 0;
  const std::string json =
      Header({{"wte.weight", "F32", {50257, 768}, 4}, {"lm_head.weight", "F32", {50257, 768}, 4}}, &data).dump();
  WriteFile(tmp.path() / "model.safetensors", Safetensors(json, data, false), 8 + json.size() + data);
  const ModelSpec spec = ResolveModel((tmp.path() / "model.safetensors").string());
  REQUIRE(spec.checkpoint.has_value());
  CHECK(spec.checkpoint->elements == 2 * 38'597'376);  // 50,257 x 768
  CHECK(spec.checkpoint->bytes == 8 * 38'597'376);
}

}  // namespace
}  // namespace tally
