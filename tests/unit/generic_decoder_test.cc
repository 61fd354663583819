// A config.json of a model_type tally has no row for, whose keys are the standard decoder set: read
// as a generic Llama decoder with a warning (config/hf_config.cc, ReadGenericDecoder), confirmed or
// refuted by a checkpoint beside it (ConfirmGuessedLayout, estimate/checkpoint_match.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "config/load_config.h"
#include "estimate/evaluation.h"
#include "estimate/params.h"
#include "unit/test_util.h"
#include "weights_test_util.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using testing::Header;
using testing::Message;
using testing::Safetensors;
using testing::TempDir;
using testing::WriteFile;

const std::string kWarning =
    ": read as a generic decoder (Llama layout: RMSNorm, gated MLP, rotary, q, k and v projections stored "
    "apart; no biases unless "
    "attention_bias/mlp_bias say so); ";

uint64_t Total(const ModelSpec& spec) { return CountParams(testing::GraphOf(spec, 16)).total; }

bool HasNote(const ModelSpec& spec, const std::string& note) {
  return std::find(spec.notes.begin(), spec.notes.end(), note) != spec.notes.end();
}

TEST_CASE("generic decoder: an unknown model_type with the standard keys is read as a Llama, with a warning") {
  // V 10, h 8, 4 heads of 2 and 2 K/V heads, a SwiGLU MLP of 16, 2 layers, untied, no biases:
  //   embedding 10·8 = 80; per block two RMSNorms 2·8 = 16, q 8·8 = 64, k and v 8·(2·2) = 32 each,
  //   o 8·8 = 64, gate/up/down 3·8·16 = 384: 592, two blocks 1,184; final RMSNorm 8; head 10·8 = 80.
  //   80 + 1,184 + 8 + 80 = 1,352.
  const ModelSpec spec = LoadModelText("zebra/config.json", R"({"model_type": "zebra_lm", "vocab_size": 10,
    "hidden_size": 8, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16,
    "num_hidden_layers": 2, "max_position_embeddings": 64})");
  CHECK(Total(spec) == 1'352);
  CHECK(spec.notes == std::vector<std::string>{"zebra/config.json: unknown model_type 'zebra_lm'" + kWarning +
                                               "verify against its checkpoint"});
}

TEST_CASE("generic decoder: the common MoE keys, biases from attention_bias and a tied head") {
  // V 10, h 8, 4 heads of 2 and 2 K/V heads, one layer; tied; attention_bias; 4 experts of 4 (top 2)
  // and one shared expert of 6 without a gate:
  //   embedding 80 (the head is the embedding: 0); two RMSNorms 16; attention 192 and its biases
  //   q 8 + k 4 + v 4 + o 8 = 24; router 8·4 = 32; experts 4·3·8·4 = 384; shared expert 3·8·6 = 144;
  //   block 16 + 216 + 32 + 384 + 144 = 792; final RMSNorm 8. 80 + 792 + 8 = 880.
  const ModelSpec spec = LoadModelText("zebra/config.json", R"({"model_type": "zebra_moe", "vocab_size": 10,
    "hidden_size": 8, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16,
    "num_hidden_layers": 1, "max_position_embeddings": 64, "tie_word_embeddings": true,
    "attention_bias": true, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4,
    "shared_expert_intermediate_size": 6})");
  CHECK(Total(spec) == 880);
  CHECK(spec.transformer.n_experts == 4);
  CHECK(spec.transformer.top_k == 2);
}

TEST_CASE("generic decoder: a missing key, or a key of another layout, is the refusal naming it") {
  CHECK(Message([] {
          LoadModelText("zebra/config.json", R"({"model_type": "zebra_lm", "vocab_size": 10, "hidden_size": 8,
            "num_attention_heads": 4, "num_hidden_layers": 2})");
        })
            .rfind("zebra/config.json:1:16: error: unsupported model_type 'zebra_lm' (and not a generic decoder: "
                   "no 'intermediate_size'); tally reads apertus, ",
                   0) == 0);
  CHECK(Message([] { LoadModelText("zebra/config.json", R"({"model_type": "zebra_lm", "hidden_size": 8})"); })
            .rfind("zebra/config.json:1:16: error: unsupported model_type 'zebra_lm' (and not a generic decoder: "
                   "no 'num_attention_heads', 'num_hidden_layers', 'intermediate_size' or 'vocab_size'); ",
                   0) == 0);
  CHECK(Message([] {
          LoadModelText("zebra/config.json", R"({"model_type": "zebra_lm", "vocab_size": 10, "hidden_size": 8,
            "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 16, "kv_lora_rank": 4})");
        })
            .rfind("zebra/config.json:1:16: error: unsupported model_type 'zebra_lm' (and not a generic decoder: "
                   "'kv_lora_rank' is no key of the Llama layout); ",
                   0) == 0);
}

// A snapshot directory: the tiny Llama of tests/data/weights/tiny-llama under an unknown
// model_type (h 32, 2 heads, 1 K/V head of 16, MLP 32, V 8, one layer), and its tensors stored.
fs::path Snapshot(const TempDir& tmp, bool tied) {
  WriteFile(tmp.path() / "config.json", R"({"model_type": "zebra_lm", "vocab_size": 8, "hidden_size": 32,
    "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 32, "num_hidden_layers": 1,
    "max_position_embeddings": 64, "tie_word_embeddings": )" +
                                            std::string(tied ? "true" : "false") + "}");
  std::vector<std::tuple<std::string, std::string, std::vector<uint64_t>, uint64_t>> tensors = {
      {"model.embed_tokens.weight", "F16", {8, 32}, 2},
      {"lm_head.weight", "F16", {8, 32}, 2},
      {"model.norm.weight", "F16", {32}, 2},
      {"model.layers.0.input_layernorm.weight", "F16", {32}, 2},
      {"model.layers.0.post_attention_layernorm.weight", "F16", {32}, 2},
      {"model.layers.0.self_attn.q_proj.weight", "F16", {32, 32}, 2},
      {"model.layers.0.self_attn.k_proj.weight", "F16", {16, 32}, 2},
      {"model.layers.0.self_attn.v_proj.weight", "F16", {16, 32}, 2},
      {"model.layers.0.self_attn.o_proj.weight", "F16", {32, 32}, 2},
      {"model.layers.0.mlp.gate_proj.weight", "F16", {32, 32}, 2},
      {"model.layers.0.mlp.up_proj.weight", "F16", {32, 32}, 2},
      {"model.layers.0.mlp.down_proj.weight", "F16", {32, 32}, 2}};
  uint64_t data = 0;
  const std::string json = Header(tensors, &data).dump();
  WriteFile(tmp.path() / "model.safetensors", Safetensors(json, data));
  return tmp.path();
}

TEST_CASE("generic decoder: a checkpoint beside the config that matches says so in the warning") {
  // Stored: 256 + 256 + 32 + 2·32 + 1,024 + 2·512 + 1,024 + 3·1,024 = 6,752 elements in 12
  // tensors, each one a parameter of the untied graph.
  TempDir tmp;
  const fs::path dir = Snapshot(tmp, false);
  const Evaluation evaluation(ResolveModel(dir.string()));
  CHECK(HasNote(evaluation.spec(), (dir / "config.json").string() + ": unknown model_type 'zebra_lm'" + kWarning +
                                       "matches the checkpoint exactly (12 tensors, 6,752 elements)"));
  CHECK(evaluation.spec().guessed_layout.empty());
  // On the command line: the report, and the warning on stderr.
  std::ostringstream out, err;
  CHECK(RunMain({"params", dir.string()}, out, err) == 0);
  CHECK(err.str().find("matches the checkpoint exactly") != std::string::npos);
}

TEST_CASE("generic decoder: a checkpoint that differs is an error naming the tensor") {
  // Tied, the graph has no head, and the stored lm_head.weight [8, 32] is left over.
  TempDir tmp;
  const fs::path dir = Snapshot(tmp, true);
  ModelSpec spec = ResolveModel(dir.string());
  CHECK(Message([&] { Evaluation evaluation(spec); }) ==
        (dir / "config.json").string() + ": error: unknown model_type 'zebra_lm'" +
            kWarning.substr(0, kWarning.size() - 2) +
            ", but its checkpoint differs from that layout in 1 place; lm_head.weight [8, 32]: only in the "
            "checkpoint (256 elements); write a tally YAML config for it (README, \"Model configs\")");
  // On the command line: exit 2, nothing on stdout, the error naming the tensor.
  std::ostringstream out, err;
  CHECK(RunMain({"params", dir.string()}, out, err) == 2);
  CHECK(out.str().empty());
  CHECK(err.str().find("lm_head.weight [8, 32]: only in the checkpoint") != std::string::npos);
}

}  // namespace
}  // namespace tally
