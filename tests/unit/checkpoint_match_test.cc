// --layers with weights: stored tensors the graph does not predict and graph parameters the
// checkpoint lacks, matched block by block and role by role (estimate/checkpoint_match.h).
#include <doctest/doctest.h>

#include <algorithm>

#include "config/load_config.h"
#include "config/resolve.h"
#include "sections/estimate_report.h"
#include "weights_test_util.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using testing::Header;
using testing::Safetensors;
using testing::TempDir;
using testing::WriteFile;

// The `unmatched` table's rows as "tensor in stored graph tensors" lines.
std::vector<std::string> Unmatched(const std::string& model) {
  Evaluation evaluation(ResolveModel(model));
  const Report r = EstimateReport(evaluation, ResolveSettings({}, evaluation.spec()), {.layers = true});
  std::vector<std::string> out;
  const ReportNode* node = r.Find("unmatched");
  REQUIRE(node != nullptr);
  for (const auto& row : node->table->rows) {
    out.push_back(std::get<std::string>(*row[0]) + " " + std::get<std::string>(*row[1]) + " " +
                  std::to_string(std::get<uint64_t>(*row[2])) + " " + std::to_string(std::get<uint64_t>(*row[3])) +
                  " " + std::get<std::string>(*row[4]));
  }
  CHECK(std::get<uint64_t>(r.Find("checkpoint.unmatched")->value) == out.size());
  return out;
}

TEST_CASE("checkpoint vs graph: a tied head the file stores is the one tensor the graph does not predict") {
  // tests/data/weights/tiny-llama: tie_word_embeddings true, yet model.safetensors holds lm_head.weight
  // [8, 32]; q, k, v (32 x 32, 16 x 32, 16 x 32) match the graph's three qkv tensors by their sum.
  CHECK(Unmatched((fs::path(TALLY_TEST_DATA) / "weights" / "tiny-llama").string()) ==
        std::vector<std::string>{"lm_head.weight checkpoint 256 0 1/0"});
}

TEST_CASE("checkpoint vs graph: a buffer, an extra block and a missing norm, one row each") {
  TempDir tmp;
  fs::copy_file(fs::path(TALLY_TEST_DATA) / "weights" / "tiny-llama" / "config.json", tmp.path() / "config.json");
  // The tiny Llama (1 block of width 32, 2 heads, 1 KV head of 16, MLP 32) stored with a rotary
  // inv_freq buffer in block 0, a second block the config does not have, and no model.norm.weight.
  std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>, uint64_t>> tensors = {
      {"model.embed_tokens.weight", "F16", {8, 32}, 2}, {"lm_head.weight", "F16", {8, 32}, 2}};
  for (const std::string b : {"0", "1"}) {
    const std::string p = "model.layers." + b + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"})
      tensors.push_back({p + n + ".weight", "F16", {32}, 2});
    tensors.push_back({p + "self_attn.q_proj.weight", "F16", {32, 32}, 2});
    tensors.push_back({p + "self_attn.k_proj.weight", "F16", {16, 32}, 2});
    tensors.push_back({p + "self_attn.v_proj.weight", "F16", {16, 32}, 2});
    tensors.push_back({p + "self_attn.o_proj.weight", "F16", {32, 32}, 2});
    for (const char* n : {"gate_proj", "up_proj", "down_proj"})
      tensors.push_back({p + "mlp." + n + ".weight", "F16", {32, 32}, 2});
  }
  tensors.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", {8}, 4});
  uint64_t data = 0;
  const std::string json = Header(tensors, &data).dump();
  WriteFile(tmp.path() / "model.safetensors", Safetensors(json, data));
  // Block 0's attention: 32·32 + 2·16·32 + 32·32 + 8 stored against 3,072 in the graph's 4 tensors.
  // Block 1: norms 2·32, attention 3,072, MLP 3·32·32 only in the checkpoint. Outside the blocks
  // the embedding pairs with embed.tokens; lm_head.weight has no partner (the head is tied), and
  // the graph's final norm (32) none either.
  CHECK(Unmatched(tmp.path().string()) == std::vector<std::string>{
                                              "blocks.1.norm checkpoint 64 0 2/0",
                                              "blocks.0.attention - 3080 3072 5/4",
                                              "blocks.1.attention checkpoint 3072 0 4/0",
                                              "blocks.1.mlp checkpoint 3072 0 3/0",
                                              "lm_head.weight checkpoint 256 0 1/0",
                                              "final_norm graph 0 32 0/1",
                                          });
}

TEST_CASE("checkpoint vs graph: a GGUF file that matches has no table, and a count of 0") {
  // tests/data/weights/tiny-llama.gguf stores the tied head once (token_embd.weight).
  Evaluation evaluation(ResolveModel((fs::path(TALLY_TEST_DATA) / "weights" / "tiny-llama.gguf").string()));
  const Report r = EstimateReport(evaluation, ResolveSettings({}, evaluation.spec()), {.layers = true});
  CHECK(r.Find("unmatched") == nullptr);
  CHECK(std::get<uint64_t>(r.Find("checkpoint.unmatched")->value) == 0);
}

TEST_CASE("checkpoint vs graph: a quantized checkpoint is not compared, and says so") {
  TempDir tmp;
  WriteFile(tmp.path() / "config.json",
            R"({"model_type": "llama", "hidden_size": 32, "intermediate_size": 32, "num_attention_heads": 2,
                "num_hidden_layers": 1, "vocab_size": 8, "max_position_embeddings": 64,
                "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}})");
  uint64_t data = 0;
  const std::string json = Header({{"model.layers.0.self_attn.q_proj.qweight", "I32", {32, 4}, 4}}, &data).dump();
  WriteFile(tmp.path() / "model.safetensors", Safetensors(json, data));
  const ModelSpec spec = ResolveModel(tmp.path().string());
  REQUIRE(spec.checkpoint.has_value());
  Evaluation evaluation(spec);
  const Report r = EstimateReport(evaluation, ResolveSettings({}, evaluation.spec()), {.layers = true});
  CHECK(r.Find("unmatched") == nullptr);
  CHECK(r.Find("checkpoint.unmatched") == nullptr);
  CHECK(std::find(r.notes.begin(), r.notes.end(),
                  "--layers: the checkpoint's tensors are packed by awq, so they are not compared with the graph's "
                  "parameters") != r.notes.end());
}

TEST_CASE("checkpoint vs graph: without weights nothing is compared") {
  Evaluation evaluation(ResolveModel("llama-2-7b"));
  const Report r = EstimateReport(evaluation, ResolveSettings({}, evaluation.spec()), {.layers = true});
  CHECK(r.Find("unmatched") == nullptr);
  CHECK(r.Find("checkpoint.unmatched") == nullptr);
}

}  // namespace
}  // namespace tally
