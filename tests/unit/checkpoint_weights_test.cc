// Inference weights from the checkpoint's own bytes (estimate/checkpoint_weights.h), and a config's
// quantization_config reaching training (the frozen base under --lora).
#include "estimate/checkpoint_weights.h"

#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/roofline.h"
#include "graph/build_graph.h"
#include "run_tally.h"
#include "sections/estimate_report.h"
#include "unit/test_util.h"
#include "weights_test_util.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using testing::Gguf;
using testing::ResolvedGraph;
using testing::RunTally;
using testing::TempDir;
using testing::WriteFile;

uint64_t Get(const std::vector<std::string>& args) {
  const testing::TallyRun r = RunTally(args);
  REQUIRE(r.code == 0);
  return std::stoull(r.out);
}

// A two-block Llama (d_model 256, 4 heads, 2 KV heads of 64, d_ff 512, vocabulary 100) in
// llama.cpp's Q4_K_M mix: q4_K, with q6_K for the head and ffn_down, q8_0 for attn_v, f32 norms.
// Bytes per tensor from ggml-common.h's blocks: q4_K 144 per 256, q6_K 210 per 256, q8_0 34 per 32.
Gguf Q4KLlama(const std::string& final_norm = "output_norm.weight") {
  Gguf g;
  g.Text("general.architecture", "llama").Text("general.name", "q4k").U32("llama.block_count", 2);
  g.U32("llama.embedding_length", 256).U32("llama.feed_forward_length", 512).U32("llama.attention.head_count", 4);
  g.U32("llama.attention.head_count_kv", 2).U32("llama.context_length", 256).Tokens(100);
  g.Tensor("token_embd.weight", {256, 100}, 12, 100 * 144).Tensor(final_norm, {256}, 0, 1024);
  g.Tensor("output.weight", {256, 100}, 14, 100 * 210);
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    g.Tensor(b + "attn_norm.weight", {256}, 0, 1024).Tensor(b + "attn_q.weight", {256, 256}, 12, 256 * 144);
    g.Tensor(b + "attn_k.weight", {256, 128}, 12, 128 * 144).Tensor(b + "attn_v.weight", {256, 128}, 8, 1024 * 34);
    g.Tensor(b + "attn_output.weight", {256, 256}, 12, 256 * 144).Tensor(b + "ffn_norm.weight", {256}, 0, 1024);
    g.Tensor(b + "ffn_gate.weight", {256, 512}, 12, 512 * 144).Tensor(b + "ffn_up.weight", {256, 512}, 12, 512 * 144);
    g.Tensor(b + "ffn_down.weight", {512, 256}, 14, 512 * 210);
  }
  return g;
}

TEST_CASE("checkpoint weights: a GGUF of k-quants holds its stored bytes in inference memory") {
  TempDir tmp;
  uint64_t size = 0;
  const std::string header = Q4KLlama().Bytes(&size);
  WriteFile(tmp.path() / "q4k.gguf", header, size);
  const std::string file = (tmp.path() / "q4k.gguf").string();
  // The header's tensors: embedding 100·144, head 100·210, norms 5·1024; per block q and o 256·144,
  // k 128·144, v 1024·34, gate and up 512·144, down 512·210.
  const uint64_t block = 2 * 256 * 144 + 128 * 144 + 1024 * 34 + 2 * 512 * 144 + 512 * 210 + 2 * 1024;
  const uint64_t stored = 100 * 144 + 100 * 210 + 1024 + 2 * block;
  CHECK(stored == 804'424);
  CHECK(Get({"memory", file, "--get", "memory.infer.weights"}) == stored);
  const testing::TallyRun source = RunTally({"memory", file, "--get", "memory.weights_source"});
  CHECK(source.out == "checkpoint\n");
  // --param-dtype asks for another storage: the rules again, every parameter at 2 bytes.
  CHECK(Get({"memory", file, "--param-dtype", "bf16", "--get", "memory.infer.weights"}) == 2 * 1'232'128);
  // Two pipeline stages: the first holds block 0 and the embedding, the second block 1, the norm
  // and the head; the most-loaded is the second.
  CHECK(Get({"memory", file, "--pp", "2", "--get", "memory.infer.weights"}) == block + 1024 + 100 * 210);
}

TEST_CASE("checkpoint weights: a role whose tensors have no name tally places keeps the rules") {
  // The final norm stored under a name no role convention knows: the graph's final norm (256
  // elements) falls back to the weight dtype (bf16), everything else is the stored bytes.
  const Gguf g = Q4KLlama("final.weight");
  TempDir tmp;
  uint64_t size = 0;
  const std::string header = g.Bytes(&size);
  WriteFile(tmp.path() / "q4k.gguf", header, size);
  const std::string file = (tmp.path() / "q4k.gguf").string();
  CHECK(RunTally({"memory", file, "--get", "memory.weights_source"}).out == "checkpoint and rules\n");
  CHECK(Get({"memory", file, "--get", "memory.infer.weights"}) == 804'424 - 1024 + 256 * 2);
}

TEST_CASE("checkpoint weights: a decode step reads the stored bytes") {
  TempDir tmp;
  uint64_t size = 0;
  const std::string header = Q4KLlama().Bytes(&size);
  WriteFile(tmp.path() / "q4k.gguf", header, size);
  const std::string file = (tmp.path() / "q4k.gguf").string();
  // One token: every block matrix and norm and the head are read once; the embedding only its row.
  // Against the bf16 rule, the stored bytes save Σ (2·elements - stored) over those tensors, and the
  // row read (256 elements) costs 256 · (14,400 / 25,600) instead of 256 · 2.
  const double block_elements = 2 * 256 + 2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 512;
  const double block = 2 * 256 * 144 + 128 * 144 + 1024 * 34 + 2 * 512 * 144 + 512 * 210 + 2 * 1024;
  const double saved =
      2 * (2 * block_elements - block) + (2 * 256 - 1024) + (2 * 25'600 - 21'000) + 256 * (2 - 14'400.0 / 25'600);
  const ModelSpec spec = ResolveModel(file);
  auto bytes = [&](bool rule) {
    Settings s;
    s.dtypes = PolicyDtypes(Precision::kMixedBf16);
    s.param_dtype_given = rule;  // --param-dtype bf16: the rules
    s.seq = 1;
    s.context = 128;
    return ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                           {.peak = 1e18, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 1e12})
        .bytes;
  };
  CHECK(bytes(true) - bytes(false) == doctest::Approx(saved));
}

TEST_CASE("checkpoint weights: a W4A16 snapshot's stored bytes are what the compressed-tensors rule predicts") {
  // Llama-3.1-8B as llm-compressor saves W4A16 (PackedQuantizationCompressor): per Linear
  // weight_packed I32 [out, in/8], weight_scale BF16 [out, in/128], weight_shape I64 [2]; the norms,
  // the embedding and lm_head (ignored) in BF16. One sparse file: headers only.
  TempDir tmp;
  std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>, uint64_t>> tensors = {
      {"model.embed_tokens.weight", "BF16", {128256, 4096}, 2}};
  const std::pair<const char*, std::pair<uint64_t, uint64_t>> linears[] = {
      {"self_attn.q_proj", {4096, 4096}}, {"self_attn.k_proj", {1024, 4096}}, {"self_attn.v_proj", {1024, 4096}},
      {"self_attn.o_proj", {4096, 4096}}, {"mlp.gate_proj", {14336, 4096}},   {"mlp.up_proj", {14336, 4096}},
      {"mlp.down_proj", {4096, 14336}}};
  for (int i = 0; i < 32; ++i) {
    const std::string b = "model.layers." + std::to_string(i) + ".";
    tensors.push_back({b + "input_layernorm.weight", "BF16", {4096}, 2});
    tensors.push_back({b + "post_attention_layernorm.weight", "BF16", {4096}, 2});
    for (const auto& [name, shape] : linears) {
      const auto [out, in] = shape;
      tensors.push_back({b + name + ".weight_packed", "I32", {out, in / 8}, 4});
      tensors.push_back({b + name + ".weight_scale", "BF16", {out, in / 128}, 2});
      tensors.push_back({b + name + ".weight_shape", "I64", {2}, 8});
    }
  }
  tensors.push_back({"model.norm.weight", "BF16", {4096}, 2});
  tensors.push_back({"lm_head.weight", "BF16", {128256, 4096}, 2});
  uint64_t data = 0;
  const std::string json = testing::Header(tensors, &data).dump();
  WriteFile(tmp.path() / "model.safetensors", testing::Safetensors(json, data, false), 8 + json.size() + data);
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "hf" / "llama-3.1-8b-w4a16.json", tmp.path() / "config.json");
  const std::string dir = tmp.path().string();
  // The stored bytes: compressed_tensors_test.cc derives the same 5,700,595,200 from the config alone.
  CHECK(Get({"params", dir, "--get", "checkpoint.bytes"}) == 5'700'595'200);
  CHECK(Get({"memory", dir, "--get", "memory.infer.weights"}) == 5'700'595'200);
  CHECK(RunTally({"memory", dir, "--get", "memory.weights_source"}).out == "checkpoint\n");
}

TEST_CASE("checkpoint weights: a config's quantization_config keeps the frozen base quantized under --lora") {
  const std::string dir = std::string(TALLY_TEST_DATA) + "/hf/";
  auto weights = [&](const std::string& config) {
    return Get({"memory", dir + config, "--lora", "16", "--get", "memory.train.weights"});
  };
  // The same model unquantized (llama-3.1-8b.json) differs only in the 32 blocks' seven matrices:
  // W4A16 per Linear out·in/2 + 16 + out·in/64 bytes (compressed_tensors_test.cc) instead of
  // 2·out·in, plus QLoRA's dequantization buffer: the largest frozen matrix (14336 x 4096) in bf16.
  auto w4 = [](uint64_t out, uint64_t in) { return out * (in / 8) * 4 + 16 + out * (in / 128) * 2; };
  const uint64_t quantized = 32 * (2 * w4(4096, 4096) + 2 * w4(1024, 4096) + 2 * w4(14336, 4096) + w4(4096, 14336));
  const uint64_t bf16 = 32 * 2 * (2 * 4096ULL * 4096 + 2 * 1024 * 4096 + 3 * 14336ULL * 4096);
  const uint64_t buffer = 2 * 14336ULL * 4096;
  CHECK(weights("llama-3.1-8b.json") - weights("llama-3.1-8b-w4a16.json") == bf16 - quantized - buffer);
  // Full training is costed on the weights at the training dtype, and says so.
  const testing::TallyRun full = RunTally({"memory", dir + "llama-3.1-8b-w4a16.json", "--mode", "train"});
  CHECK(full.code == 0);
  CHECK(full.err.find("warning: training: the config's quantization_config (compressed-tensors) stores the weights "
                      "quantized") != std::string::npos);
}

}  // namespace
}  // namespace tally
