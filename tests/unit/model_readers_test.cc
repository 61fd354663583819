// Where MODEL lies: presets and aliases, snapshot directories, the local Hugging Face cache,
// safetensors and GGUF headers. Files are synthetic and written sparse: headers only, the data a
// hole of the right length, so a 16 GB checkpoint takes a few kilobytes.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "config/gguf.h"
#include "config/load_config.h"
#include "config/model_lookup.h"
#include "config/safetensors.h"
#include "estimate/estimate_graph.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "test_util.h"
#include "util/units.h"

namespace tally {
namespace {

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

void WriteFile(const fs::path& path, const std::string& bytes, uint64_t size = 0) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (size > bytes.size()) fs::resize_file(path, size);  // sparse: the data is a hole
}

std::string Le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

// The 8-byte length and the JSON; the data (zeros) only when `with_data`.
std::string Safetensors(const std::string& json, uint64_t data_bytes, bool with_data = true) {
  return Le(json.size(), 8) + json + (with_data ? std::string(data_bytes, '\0') : "");
}

// name -> {dtype, shape}; offsets laid end to end in the order given.
Json Header(const std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>, uint64_t>>& tensors,
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

std::string Message(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return FormatDiagnostic(e);
  }
  return "(no error)";
}

TEST_CASE("lookup: presets resolve before paths, and Hub short names are aliases") {
  CHECK(FindPresetOrAlias("gpt2") != nullptr);
  CHECK(std::string(FindPresetOrAlias("gpt2")->name) == "gpt2-small");  // as on the Hub
  CHECK(std::string(FindPresetOrAlias("GPT2-Medium")->name) == "gpt2-medium");
  CHECK(std::string(FindPresetOrAlias("Llama-2-7b-hf")->name) == "llama-2-7b");
  CHECK(std::string(FindPresetOrAlias("Meta-Llama-3-8B")->name) == "llama-3-8b");
  CHECK(FindPresetOrAlias("gpt3") == nullptr);
  // A dot is not an extension: these are names.
  CHECK_FALSE(LooksLikePath("llama-3.1-8b"));
  CHECK_FALSE(LooksLikePath("qwen2.5-7b"));
  CHECK(LooksLikePath("x.yaml"));
  CHECK(LooksLikePath("model.GGUF"));
  CHECK(LooksLikeHfId("meta-llama/Llama-3.1-8B"));
  CHECK(LooksLikeHfId("meta-llama/Llama-3.1-8B@main"));
  CHECK_FALSE(LooksLikeHfId("configs/none.yaml"));
  CHECK_FALSE(LooksLikeHfId("a/b/c"));
  CHECK(Message([] { ResolveModel("qwen2.5-7b"); }).rfind("tally: error: unknown model 'qwen2.5-7b'", 0) == 0);
  CHECK(Message([] { ResolveModel("configs/none.yaml"); }) == "configs/none.yaml: error: no such file");
  // 124,439,808: GPT-2 small (Hugging Face gpt2, the published count).
  CHECK(CountParams(testing::PresetGraph("gpt2")).total == 124'439'808);
}

TEST_CASE("lookup: org/name, org/name@main and a hash resolve in a fake Hugging Face cache") {
  TempDir tmp;
  const std::string hash = "0123456789abcdef0123456789abcdef01234567";
  const fs::path repo = tmp.path() / "hub" / "models--openai-community--gpt2";
  WriteFile(repo / "refs" / "main", hash);
  fs::create_directories(repo / "snapshots" / hash);
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "hf" / "gpt2.json", repo / "snapshots" / hash / "config.json");
  SUBCASE("HF_HUB_CACHE") {
    testing::ScopedEnv env("HF_HUB_CACHE", (tmp.path() / "hub").c_str());
    for (const std::string& id : std::vector<std::string>{"openai-community/gpt2", "openai-community/gpt2@main",
                                                          "openai-community/gpt2@" + hash}) {
      CAPTURE(id);
      const ModelSpec spec = ResolveModel(id);
      CHECK(spec.source == id);
      CHECK(CountParams(BuildGraph(spec, {})).total == 124'439'808);
      CHECK_FALSE(spec.checkpoint.has_value());
    }
    CHECK(Message([] { ResolveModel("openai-community/gpt2@v2"); }) ==
          "tally: error: 'openai-community/gpt2@v2' is not in the Hugging Face cache (" + (tmp.path() / "hub").string() +
              "); fetch its config with: huggingface-cli download openai-community/gpt2 config.json --revision v2, "
              "or use the preset 'gpt2-small'");
    CHECK(Message([] { ResolveModel("org/absent"); }) ==
          "tally: error: 'org/absent' is not in the Hugging Face cache (" + (tmp.path() / "hub").string() +
              "); fetch its config with: huggingface-cli download org/absent config.json");
  }
  SUBCASE("HF_HOME/hub when HF_HUB_CACHE is unset") {
    unsetenv("HF_HUB_CACHE");
    testing::ScopedEnv env("HF_HOME", tmp.path().c_str());
    CHECK(HfHubCache() == (tmp.path() / "hub").string());
    CHECK(ResolveModel("openai-community/gpt2").name == "openai-community/gpt2");
  }
}

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
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12) ==
        p + "62: tensor 'b' overlaps the one before it (its data begins at 4, before 8)");
  CHECK(parse(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12) ==
        p + "9: a hole of 4 bytes before tensor 'a' (no tensor covers them)");
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
  const std::string ok = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";
  const uint64_t whole = 8 + ok.size() + 16;  // 79
  CHECK(parse(ok, 16, -6) == p + std::to_string(whole - 6) + ": the file is truncated: the header describes " +
                                 std::to_string(whole) + " bytes, the file has " + std::to_string(whole - 6) +
                                 ", 6 bytes missing");
  CHECK(parse(ok, 16, 2) == p + std::to_string(whole) + ": 2 bytes follow the last tensor's data");
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
  const Report r = EstimateGraph(spec, {}, BuildGraph(spec, {}), {});
  CHECK(std::get<uint64_t>(r.Find("params.total")->value) == 8'030'261'248);
  CHECK(std::get<uint64_t>(r.Find("params.checkpoint")->value) == 8'030'261'248);
  CHECK(std::get<uint64_t>(r.Find("checkpoint.bytes")->value) == 16'060'522'496);
  CHECK(std::get<uint64_t>(r.Find("checkpoint.dtypes.bf16")->value) == 16'060'522'496);
  // One shard cut short: the error names it and the bytes missing.
  const fs::path shard = tmp.path() / "model-00002-of-00004.safetensors";
  const uint64_t size = fs::file_size(shard);
  fs::resize_file(shard, size - 1000);
  CHECK(Message([&] { ResolveModel(tmp.path().string()); }) ==
        shard.string() + ": error: at byte " + std::to_string(size - 1000) + ": the file is truncated: the header describes " +
            FormatGrouped(size) + " bytes, the file has " + FormatGrouped(size - 1000) + ", 1,000 bytes missing");
}

TEST_CASE("safetensors: an index without its shards is a note; with some of them, an error") {
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

TEST_CASE("safetensors: a tied head stored twice counts twice in params.checkpoint, once in params.total") {
  TempDir tmp;
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "hf" / "gpt2.json", tmp.path() / "config.json");
  // GPT-2 small as transformers saves it: wte and lm_head both stored (50257 x 768 each).
  uint64_t data = 0;
  const std::string json = Header({{"wte.weight", "F32", {50257, 768}, 4}, {"lm_head.weight", "F32", {50257, 768}, 4}}, &data).dump();
  WriteFile(tmp.path() / "model.safetensors", Safetensors(json, data, false), 8 + json.size() + data);
  const ModelSpec spec = ResolveModel((tmp.path() / "model.safetensors").string());
  REQUIRE(spec.checkpoint.has_value());
  CHECK(spec.checkpoint->elements == 2 * 38'597'376);  // 50,257 x 768
  CHECK(spec.checkpoint->bytes == 8 * 38'597'376);
}

// GGUF writer for the tests: little-endian, as docs/gguf.md specifies.
class Gguf {
 public:
  explicit Gguf(uint32_t version = 3) { out_ = "GGUF" + Le(version, 4); }
  Gguf& Str(const std::string& s) { body_ += Le(s.size(), 8) + s; return *this; }
  Gguf& U32(const std::string& key, uint32_t v) { Str(key); body_ += Le(4, 4) + Le(v, 4); ++kv_; return *this; }
  Gguf& U16(const std::string& key, uint16_t v) { Str(key); body_ += Le(2, 4) + Le(v, 2); ++kv_; return *this; }
  Gguf& Text(const std::string& key, const std::string& v) { Str(key); body_ += Le(8, 4); Str(v); ++kv_; return *this; }
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

// A two-block Llama, d_model 256, 4 heads (2 KV) of 64, d_ff 512, vocabulary 100, quantized as
// llama.cpp's Q4_K_M mixes types (q4_K, q6_K, q8_0 and f32 norms).
Gguf TinyLlama() {
  Gguf g;
  g.Text("general.architecture", "llama").Text("general.name", "tiny").U32("llama.block_count", 2);
  g.U32("llama.embedding_length", 256).U32("llama.feed_forward_length", 512).U32("llama.attention.head_count", 4);
  g.U32("llama.attention.head_count_kv", 2).U32("llama.context_length", 256).Tokens(100);
  g.Tensor("token_embd.weight", {256, 100}, 12, 14400).Tensor("output_norm.weight", {256}, 0, 1024);
  g.Tensor("output.weight", {256, 100}, 14, 21000);
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    g.Tensor(b + "attn_norm.weight", {256}, 0, 1024).Tensor(b + "attn_q.weight", {256, 256}, 12, 36864);
    g.Tensor(b + "attn_k.weight", {256, 128}, 12, 18432).Tensor(b + "attn_v.weight", {256, 128}, 8, 34816);
    g.Tensor(b + "attn_output.weight", {256, 256}, 12, 36864).Tensor(b + "ffn_norm.weight", {256}, 0, 1024);
    g.Tensor(b + "ffn_gate.weight", {256, 512}, 12, 73728).Tensor(b + "ffn_up.weight", {256, 512}, 12, 73728);
    g.Tensor(b + "ffn_down.weight", {512, 256}, 14, 107520);
  }
  return g;
}

TEST_CASE("gguf: bytes per block of every ggml type match the published bits per weight") {
  // ggml-common.h's comments and llama.cpp's quantize table: bits per weight = 8 x bytes / block.
  const std::vector<std::pair<uint32_t, double>> bpw = {
      {0, 32},      {1, 16},       {30, 16},     {2, 4.5},     {3, 5},     {6, 5.5},    {7, 6},
      {8, 8.5},     {10, 2.625},   {11, 3.4375}, {12, 4.5},    {13, 5.5},  {14, 6.5625}, {16, 2.0625},
      {17, 2.3125}, {22, 2.5625},  {18, 3.0625}, {21, 3.4375}, {19, 1.5625}, {29, 1.75}, {20, 4.5},
      {23, 4.25},   {34, 1.6875},  {35, 2.0625}, {39, 4.25},   {15, 9.125}};
  for (const auto& [id, bits] : bpw) {
    CAPTURE(id);
    const GgmlType* t = FindGgmlType(id);
    REQUIRE(t != nullptr);
    CHECK(8.0 * static_cast<double>(t->block_bytes) / static_cast<double>(t->block) == bits);
  }
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u}) CHECK(FindGgmlType(removed) == nullptr);
}

TEST_CASE("gguf: a tiny quantized Llama gives exact counts, bytes by type, and a ModelSpec") {
  TempDir tmp;
  uint64_t size = 0;
  const std::string header = TinyLlama().Bytes(&size);
  WriteFile(tmp.path() / "tiny.gguf", header, size);
  const ModelSpec spec = ResolveModel((tmp.path() / "tiny.gguf").string());
  REQUIRE(spec.checkpoint.has_value());
  const CheckpointInfo& c = *spec.checkpoint;
  CHECK(c.tensors.size() == 21);
  // Per block: norms 2 x 256, q 256², k and v 256 x 128, o 256², three MLP 256 x 512 = 590,336;
  // two blocks, an embedding and a head of 25,600 and a norm of 256.
  CHECK(c.elements == 1'232'128);
  // Bytes from ggml-common.h's blocks: q4_K 144 per 256, q6_K 210 per 256, q8_0 34 per 32, f32 4.
  CHECK(c.bytes_by_dtype.at("f32") == 5'120);    // 5 norms of 256
  CHECK(c.bytes_by_dtype.at("q4_k") == 493'632);  // 2 x (256 + 128 + 256 + 512 + 512) blocks x 144 + 100 x 144
  CHECK(c.bytes_by_dtype.at("q8_0") == 69'632);   // 2 x 1,024 blocks x 34
  CHECK(c.bytes_by_dtype.at("q6_k") == 236'040);  // 2 x 512 x 210 + 100 x 210
  CHECK(c.bytes == 804'424);
  const TransformerSpec& t = spec.transformer;
  CHECK(spec.name == "tiny");
  CHECK(t.n_layers == 2);
  CHECK(t.vocab_size == 100);
  CHECK(t.head_dim == 64);
  CHECK(t.n_kv_heads == 2);
  CHECK_FALSE(t.tied_embeddings);
  CHECK(t.mlp == MlpKind::kSwiglu);
  CHECK_FALSE(t.qkv_bias);
  // The graph instantiates exactly what the file stores.
  CHECK(CountParams(BuildGraph(spec, {})).total == 1'232'128);
}

TEST_CASE("gguf: GPT-2 small in F32 gives the published count, its vocabulary from the embedding") {
  // llama.cpp's gpt2 layout: fused attn_qkv, biases everywhere, learned positions, no output.weight
  // (the head is tied). No tokenizer metadata: the vocabulary is token_embd's ne[1].
  Gguf g;
  g.Text("general.architecture", "gpt2").U32("gpt2.block_count", 12).U32("gpt2.embedding_length", 768);
  g.U32("gpt2.feed_forward_length", 3072).U32("gpt2.attention.head_count", 12).U32("gpt2.context_length", 1024);
  g.Tensor("token_embd.weight", {768, 50257}, 0, 4 * 768 * 50257).Tensor("position_embd.weight", {768, 1024}, 0, 4 * 768 * 1024);
  g.Tensor("output_norm.weight", {768}, 0, 4 * 768).Tensor("output_norm.bias", {768}, 0, 4 * 768);
  for (int i = 0; i < 12; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const char* norm : {"attn_norm", "ffn_norm"}) {
      g.Tensor(b + norm + ".weight", {768}, 0, 4 * 768).Tensor(b + norm + ".bias", {768}, 0, 4 * 768);
    }
    g.Tensor(b + "attn_qkv.weight", {768, 2304}, 0, 4 * 768 * 2304).Tensor(b + "attn_qkv.bias", {2304}, 0, 4 * 2304);
    g.Tensor(b + "attn_output.weight", {768, 768}, 0, 4 * 768 * 768).Tensor(b + "attn_output.bias", {768}, 0, 4 * 768);
    g.Tensor(b + "ffn_up.weight", {768, 3072}, 0, 4 * 768 * 3072).Tensor(b + "ffn_up.bias", {3072}, 0, 4 * 3072);
    g.Tensor(b + "ffn_down.weight", {3072, 768}, 0, 4 * 3072 * 768).Tensor(b + "ffn_down.bias", {768}, 0, 4 * 768);
  }
  TempDir tmp;
  uint64_t size = 0;
  const std::string header = g.Bytes(&size);
  WriteFile(tmp.path() / "gpt2.gguf", header, size);
  const ModelSpec spec = ResolveModel((tmp.path() / "gpt2.gguf").string());
  CHECK(spec.transformer.vocab_size == 50'257);
  CHECK(spec.transformer.position == PositionKind::kLearned);
  CHECK(spec.transformer.tied_embeddings);
  // 124,439,808: GPT-2 small's published parameter count (Hugging Face gpt2).
  CHECK(CountParams(BuildGraph(spec, {})).total == 124'439'808);
  CHECK(spec.checkpoint->elements == 124'439'808);
  CHECK(spec.checkpoint->bytes == 4 * 124'439'808ULL);
}

TEST_CASE("gguf: split files are read together from the first") {
  TempDir tmp;
  uint64_t size = 0;
  // The first split holds the metadata and the embedding; the second the rest of the tiny Llama.
  Gguf first = TinyLlama();
  first.U16("split.no", 0).U16("split.count", 2);
  std::string header = first.Bytes(&size);
  WriteFile(tmp.path() / "tiny-00001-of-00002.gguf", header, size);
  Gguf second;
  second.U16("split.no", 1).U16("split.count", 2).Tensor("extra.weight", {256}, 0, 1024);
  header = second.Bytes(&size);
  WriteFile(tmp.path() / "tiny-00002-of-00002.gguf", header, size);
  const ModelSpec spec = ResolveModel((tmp.path() / "tiny-00001-of-00002.gguf").string());
  CHECK(spec.checkpoint->files.size() == 2);
  CHECK(spec.checkpoint->elements == 1'232'128 + 256);
  CHECK(spec.checkpoint->bytes == 804'424 + 1'024);
  const std::string second_path = (tmp.path() / "tiny-00002-of-00002.gguf").string();
  CHECK(Message([&] { ResolveModel(second_path); }) ==
        second_path + ": error: is one of 2 split files; give the first, named <prefix>-00001-of-00002.gguf");
}

TEST_CASE("gguf: hostile headers are errors with the file and the byte") {
  auto parse = [](const std::string& bytes, uint64_t size = 0) {
    return Message([&] { ParseGguf("m.gguf", bytes, size == 0 ? bytes.size() : size); });
  };
  const std::string p = "m.gguf: error: at byte ";
  CHECK(parse("GGML" + Le(3, 4)) == p + "0: not a GGUF file (no 'GGUF' magic)");
  CHECK(parse("GGUF" + Le(1, 4)) == p + "4: GGUF version 1 is not supported (2 and 3 are)");
  CHECK(parse("GGUF" + Le(3, 4) + Le(0, 8) + Le(~0ULL, 8)) ==
        p + "16: key-value count 18446744073709551615 is more than the rest of the file (0 bytes) can hold");
  CHECK(parse("GGUF" + Le(3, 4) + Le(~0ULL, 8) + Le(0, 8)) ==
        p + "8: tensor count 18446744073709551615 is more than the rest of the file (0 bytes) can hold");
  const std::string one_kv = "GGUF" + Le(3, 4) + Le(0, 8) + Le(1, 8);
  CHECK(parse(one_kv + Le(1000, 8) + "abcde") == p + "24: a key of 1000 bytes runs past the end of the file (37 bytes)");
  CHECK(parse(one_kv + Le(1, 8) + "k" + Le(9, 4) + Le(8, 4) + Le(~0ULL, 8)) ==
        p + "41: array length 18446744073709551615 is more than the rest of the file (0 bytes) can hold");
  uint64_t size = 0;
  std::string bad_type = Gguf().Tensor("w", {32}, 36, 18).Bytes(&size);
  // Header 24 bytes, then the name (8 + 1), n_dims (4), ne[0] (8): the type is at byte 45.
  CHECK(parse(bad_type, size) == p + "45: tensor 'w' has unknown ggml type 36");
  std::string bad_name = Gguf().Tensor("w\xc3", {32}, 0, 128).Bytes(&size);
  CHECK(parse(bad_name, size) == p + "24: a tensor name is not valid UTF-8");
  std::string ragged = Gguf().Tensor("w", {33}, 2, 18).Bytes(&size);
  CHECK(parse(ragged, size) == p + "45: tensor 'w': its first dimension 33 is not a multiple of Q4_0's block of 32");
  std::string cut = Gguf().Tensor("w", {32}, 0, 128).Bytes(&size);
  CHECK(parse(cut, size - 28) == p + std::to_string(size - 28) + ": the file is truncated: tensor 'w' ends at byte " +
                                     std::to_string(size) + ", the file has " + std::to_string(size - 28) + " bytes");
  CHECK(parse(Gguf().Text("general.architecture", "qwen3").Bytes(&size), size) == "(no error)");
  const GgufFile g = ParseGguf("m.gguf", Gguf().Text("general.architecture", "qwen3").Bytes(&size), size);
  CHECK(Message([&] { GgufModelSpec(g, "m.gguf"); }) ==
        p + "56: metadata 'general.architecture' is 'qwen3', which tally does not model from GGUF "
            "(it reads llama, mistral, qwen2, gemma, phi3, gpt2)");
}

}  // namespace
}  // namespace tally
