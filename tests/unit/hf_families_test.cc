// The table of Hugging Face model_type values (config/hf_families.cc): every row reads a config of
// its type, the error for any other type lists exactly the rows, and docs/models.md names the same
// types (its table of families and its `tally models` example).
#include "config/hf_families.h"

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/hf_config.h"
#include "config/load_config.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The fixture in tests/data/hf whose top-level model_type is `type` (the first by name), or "".
std::string FixtureOf(const std::string& type) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TALLY_TEST_DATA) + "/hf")) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    const YAML::Node root = YAML::LoadFile(f);
    if (root.IsMap() && root["model_type"] && root["model_type"].Scalar() == type) return f;
  }
  return "";
}

// The types with no fixture, as small configs whose parameters are counted by hand below.
// UMT5 (modeling_umt5.py): V 10, d 4, 2 heads of d_kv 2, d_ff 8, relu, 32 buckets, one encoder
// and one decoder block, untied.
const char* const kUmt5 = R"({"model_type": "umt5", "vocab_size": 10, "d_model": 4, "d_kv": 2,
  "num_heads": 2, "d_ff": 8, "num_layers": 1, "num_decoder_layers": 1,
  "relative_attention_num_buckets": 32, "tie_word_embeddings": false})";
// Llama 4's language model (modeling_llama4.py): V 10, h 4, 2 heads of 2 and one K/V head, two
// layers, experts of 8 (2, top-1) on every second layer, the dense layer's MLP of 16, untied.
const char* const kLlama4Text = R"({"model_type": "llama4_text", "vocab_size": 10, "hidden_size": 4,
  "intermediate_size": 8, "intermediate_size_mlp": 16, "num_hidden_layers": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 2, "num_local_experts": 2,
  "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "attention_chunk_size": 8,
  "max_position_embeddings": 64, "tie_word_embeddings": false})";

// Issue 30's families without a real config in tests/data/hf: V 10, h 8, 4 heads of 2 and 2 K/V
// heads, an MLP of 16, untied.
const char* const kSmall = R"("vocab_size": 10, "hidden_size": 8, "intermediate_size": 16,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 2, "max_position_embeddings": 64,
  "tie_word_embeddings": false)";

// dots.llm1 (modular_dots1.py): V 10, h 4, 2 heads of 2 and one K/V head, two layers, the first
// dense (intermediate 16), then two routed experts of 8 (top-1) and one shared, untied.
const char* const kDots1 = R"({"model_type": "dots1", "vocab_size": 10, "hidden_size": 4,
  "intermediate_size": 16, "moe_intermediate_size": 8, "num_hidden_layers": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 2, "n_routed_experts": 2,
  "n_shared_experts": 1, "num_experts_per_tok": 1, "first_k_dense_replace": 1,
  "max_position_embeddings": 64, "tie_word_embeddings": false})";

uint64_t Total(const ModelSpec& spec) { return CountParams(testing::GraphOf(spec, 16)).total; }

ModelSpec Small(const std::string& type, const std::string& extra) {
  return LoadModelText(type + ".json", "{\"model_type\": \"" + type + "\", " + kSmall + ", " + extra + "}");
}

// docs/models.md's "Hugging Face config.json" table: the model_type values of its first column (the
// words in backticks before any " with ").
std::set<std::string> ReadmeTypes() {
  std::ifstream in(std::string(TALLY_SOURCE_DIR) + "/docs/models.md");
  REQUIRE(in);
  std::set<std::string> types;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("| `model_type` | models |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.empty() || line[0] != '|') break;
    if (line.rfind("|---", 0) == 0) continue;
    std::string cell = line.substr(1, line.find('|', 1) - 1);
    cell = cell.substr(0, cell.find(" with "));
    for (size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', at)) {
      const size_t end = cell.find('`', at + 1);
      REQUIRE(end != std::string::npos);
      types.insert(cell.substr(at + 1, end - at - 1));
      at = end + 1;
    }
  }
  return types;
}

}  // namespace

TEST_CASE("hf families: the table is sorted, each type once, and HfFamilies() is its rows") {
  const std::span<const HfFamily> table = HfFamilyTable();
  REQUIRE(table.size() == HfFamilies().size());
  for (size_t i = 0; i < table.size(); ++i) {
    CAPTURE(table[i].model_type);
    CHECK(HfFamilies()[i] == table[i].model_type);
    CHECK(static_cast<bool>(table[i].read));
    CHECK(FindHfFamily(table[i].model_type) == &table[i]);
    if (i > 0) CHECK(Lower(table[i - 1].model_type) < Lower(table[i].model_type));
  }
  CHECK(FindHfFamily("xlnet") == nullptr);
  // A look-alike is never a supported type (else its "no suggestion" would hide nothing).
  for (std::string_view other : HfLookalikeTypes()) {
    CAPTURE(other);
    CHECK(FindHfFamily(other) == nullptr);
  }
}

TEST_CASE("hf families: every model class names a row") {
  for (const HfArchitecture& a : HfArchitectureTable()) {
    CAPTURE(a.architecture);
    REQUIRE(FindHfFamily(a.model_type) != nullptr);
    CHECK(FindHfFamilyByArchitecture(a.architecture) == FindHfFamily(a.model_type));
  }
  CHECK(FindHfFamilyByArchitecture("XLNetLMHeadModel") == nullptr);
  CHECK(FindHfFamilyByArchitecture("") == nullptr);
}

// Qwen3-VL-MoE (modeling_qwen3_vl_moe.py): Qwen3-VL's tower and mergers before a Qwen3-MoE text model.
// Text: V 10, h 8, 4 heads of 2 and 2 K/V heads, two layers, 2 experts of 4 (top-1), untied.
// Vision: width 8, one block, MLP 16, 2 heads, patches of 2 x 2 x 2 frames, 4 positions, one
// deepstack merger over block 0, out 8.
const char* const kQwen3VlMoe = R"({"model_type": "qwen3_vl_moe", "tie_word_embeddings": false,
  "text_config": {"model_type": "qwen3_vl_moe_text", "vocab_size": 10, "hidden_size": 8,
    "intermediate_size": 16, "moe_intermediate_size": 4, "num_experts": 2, "num_experts_per_tok": 1,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 2,
    "max_position_embeddings": 64},
  "vision_config": {"model_type": "qwen3_vl_moe", "depth": 1, "hidden_size": 8, "intermediate_size": 16,
    "num_heads": 2, "patch_size": 2, "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 8,
    "num_position_embeddings": 4, "deepstack_visual_indexes": [0]}})";

TEST_CASE("hf families: every row reads a config of its type") {
  for (const HfFamily& f : HfFamilyTable()) {
    const std::string type(f.model_type);
    CAPTURE(type);
    const std::string fixture = FixtureOf(type);
    ModelSpec spec;
    if (!fixture.empty()) {
      spec = LoadModelFile(fixture);
    } else if (type == "umt5") {
      // Shared embedding 10·4 = 40. Encoder block: q, k, v, o 4·(4·4) = 64, a relative bias in
      // every UMT5 block 32·2 = 64, two norms 8, wi and wo 2·4·8 = 64: 200. Decoder block:
      // self-attention 64 and its bias 64, cross-attention 64 (no bias), three norms 12, MLP 64:
      // 268. A final norm per stack 2·4, the untied head 40: 40 + 200 + 268 + 8 + 40 = 556.
      spec = LoadModelText("umt5.json", kUmt5);
      CHECK(Total(spec) == 556);
    } else if (type == "llama4_text") {
      // Embedding and untied head 2·40 = 80, final norm 4. Per layer: q 4·4, k 4·2, v 4·2, o 4·4 =
      // 48 and two norms 8. Layer 0 dense: gate, up, down 3·4·16 = 192. Layer 1 MoE: router 4·2 = 8,
      // two experts 2·3·4·8 = 192, the shared expert 3·4·8 = 96: 296.
      // 80 + 4 + 2·56 + 192 + 296 = 684.
      spec = LoadModelText("llama4_text.json", kLlama4Text);
      CHECK(Total(spec) == 684);
    } else if (type == "seed_oss") {
      // modeling_seed_oss.py, 2 layers: q 8·8 and its bias 8, k and v 8·4 and biases 4 each (the
      // default attention_bias true), o 8·8 without one (attention_out_bias false), MLP 3·8·16 = 384,
      // two norms 16: 608 a layer. Embedding and head 2·80, final norm 8: 1216 + 168 = 1384.
      spec = Small(type, R"("num_hidden_layers": 2)");
      CHECK(Total(spec) == 1384);
    } else if (type == "olmo3") {
      // modeling_olmo3.py (OLMo 2's block), 4 layers: q, k, v, o 64 + 32 + 32 + 64 = 192, q_norm over
      // a·d = 8 and k_norm over g·d = 4, MLP 384, two post-norms 16: 604 a layer. 2416 + 168 = 2584.
      spec = Small(type, R"("num_hidden_layers": 4, "sliding_window": 16)");
      CHECK(Total(spec) == 2584);
    } else if (type == "exaone4") {
      // modular_exaone4.py, 4 layers: attention 192, q_norm and k_norm over head_dim 2 + 2, MLP 384,
      // two post-norms 16: 596 a layer. 2384 + 168 = 2552.
      spec = Small(type, R"("num_hidden_layers": 4, "sliding_window": 16, "sliding_window_pattern": "LLLG")");
      CHECK(Total(spec) == 2552);
    } else if (type == "glm" || type == "glm4") {
      // modular_glm.py, 2 layers: attention 192 with q/k/v biases 8 + 4 + 4 (attention_bias true by
      // default, none on o), the fused gate_up and down 384, two norms 16: 608 a layer; 1216 + 168 =
      // 1384. modular_glm4.py adds two norms a layer: 1384 + 2·16 = 1416.
      spec = Small(type, R"("num_hidden_layers": 2)");
      CHECK(Total(spec) == (type == "glm" ? 1384 : 1416));
    } else if (type == "hunyuan_v1_dense") {
      // modular_hunyuan_v1_dense.py, 2 layers: attention 192, query_layernorm and key_layernorm over
      // head_dim 2 + 2, MLP 384 (no biases), two norms 16: 596 a layer. 1192 + 168 = 1360.
      spec = Small(type, R"("num_hidden_layers": 2)");
      CHECK(Total(spec) == 1360);
    } else if (type == "dots1") {
      // Embedding and untied head 2·40 = 80, final norm 4. Per layer: q 4·4, k 4·2, v 4·2, o 4·4 =
      // 48, q/k norms over head_dim 2·2 and two norms 8: 60. Layer 0 dense: 3·4·16 = 192. Layer 1:
      // router 2·4 = 8 and its e_score_correction_bias 2, experts 2·3·4·8 = 192, the shared expert
      // 3·4·8 = 96: 298. 80 + 4 + 2·60 + 192 + 298 = 694.
      spec = LoadModelText("dots1.json", kDots1);
      CHECK(Total(spec) == 694);
    } else if (type == "bailing_moe_v2") {
      // modeling_bailing_moe_v2.py, 2 layers: query_key_value 8·(8 + 4 + 4) = 128, dense 8·8 = 64, q/k
      // norms over head_dim 2 + 2, two norms 16: 212 a layer. Layer 0 dense: 3·8·16 = 384. Layer 1:
      // router 2·8 = 16 and its expert_bias 2, experts 2·3·8·4 = 192, the shared expert 3·8·4 = 96:
      // 306. Embedding and head 2·80, final norm 8: 2·212 + 384 + 306 + 168 = 1282.
      spec = Small(type, R"("num_hidden_layers": 2, "num_experts": 2, "num_experts_per_tok": 1,
          "moe_intermediate_size": 4, "num_shared_experts": 1, "first_k_dense_replace": 1)");
      CHECK(Total(spec) == 1282);
    } else if (type == "hunyuan_v1_moe") {
      // modeling_hunyuan_v1_moe.py, 2 layers: attention 192, query_layernorm and key_layernorm 2 + 2,
      // two norms 16; router 2·8 = 16, two experts 2·3·8·16 = 768 and the shared MLP 384: 1380 a
      // layer. 2760 + 168 = 2928.
      spec = Small(type, R"("num_hidden_layers": 2, "num_experts": 2, "moe_topk": [1, 1])");
      CHECK(Total(spec) == 2928);
    } else if (type == "qwen3_vl_moe") {
      // Text: embedding and head 2·80, final norm 8; per layer q 8·8, k and v 8·4, o 8·8 = 192,
      // q_norm and k_norm 2 + 2, two norms 16, router 8·2 = 16, experts 2·3·8·4 = 192: 420; 1008.
      // Vision: Conv3d 8·3·2·2·2 + 8 = 200, positions 4·8 = 32, the block (norms 32, qkv 8·24 + 24,
      // proj 8·8 + 8, fc1 8·16 + 16, fc2 16·8 + 8) 600; merger (norm 2·8, fc1 32·32 + 32, fc2 32·8 +
      // 8) 1,336; the deepstack merger (its norm 2·32) 1,384: 3,552. 1008 + 3552 = 4560.
      spec = LoadModelText("qwen3_vl_moe.json", kQwen3VlMoe);
      CHECK(Total(spec) == 4560);
    } else if (type == "smolvlm") {
      // modeling_smolvlm.py builds Idefics3's modules: SmolVLM-256M's layout under its own type has
      // its count (tests/reference/vision_families_test.cc).
      std::string text = ReadFileText(std::string(TALLY_TEST_DATA) + "/hf/smolvlm-256m-instruct.json");
      text.replace(text.find("\"idefics3\""), 10, "\"smolvlm\"");
      spec = LoadModelText("smolvlm.json", text);
      CHECK(Total(spec) == 256'484'928);
    } else {
      FAIL_CHECK("no fixture in tests/data/hf and no config here for " << type);
      continue;
    }
    CHECK(spec.description == "Hugging Face config.json, model_type " + type);
  }
}

TEST_CASE("hf families: an unsupported model_type lists the table") {
  std::string list;
  for (const HfFamily& f : HfFamilyTable()) list += (list.empty() ? "" : ", ") + std::string(f.model_type);
  // 1:16: the value's opening quote.
  const std::string expected =
      "x.json:1:16: error: unsupported model_type 'xlnet' (and not a generic decoder: no "
      "'hidden_size', 'num_attention_heads', 'num_hidden_layers', 'intermediate_size' or "
      "'vocab_size'); tally reads " +
      list + "; for another model, write a tally YAML config (docs/models.md, \"Model configs\")";
  CHECK_THROWS_WITH_AS(LoadModelText("x.json", R"({"model_type": "xlnet"})"), expected.c_str(), InputError);
  // A near misspelling of a row gets a suggestion; a look-alike of another architecture does not.
  try {
    LoadModelText("x.json", R"({"model_type": "lama"})");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("(did you mean 'llama'?)") != std::string::npos);
  }
  for (std::string_view other : HfLookalikeTypes()) {
    CAPTURE(other);
    try {
      LoadModelText("x.json", "{\"model_type\": \"" + std::string(other) + "\"}");
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("did you mean") == std::string::npos);
    }
  }
}

// docs/models.md's `tally models` example ends with the types tally reads, in the table's order.
TEST_CASE("hf families: docs/models.md's `tally models` example lists the table") {
  std::ifstream in(std::string(TALLY_SOURCE_DIR) + "/docs/models.md");
  REQUIRE(in);
  const std::string label = "Hugging Face config.json model_type values read ";
  std::string list;
  for (const HfFamily& f : HfFamilyTable()) list += (list.empty() ? "" : ", ") + std::string(f.model_type);
  int found = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(label, 0) != 0) continue;
    ++found;
    CHECK(line.substr(label.size()) == list);
  }
  CHECK(found == 1);
}

TEST_CASE("hf families: docs/models.md's table of families names exactly the table's types") {
  std::set<std::string> table;
  for (const HfFamily& f : HfFamilyTable()) table.emplace(f.model_type);
  const std::set<std::string> readme = ReadmeTypes();
  for (const std::string& t : table) {
    CAPTURE(t);
    CHECK_MESSAGE(readme.count(t) == 1, "docs/models.md's table of Hugging Face families lacks " << t);
  }
  for (const std::string& t : readme) {
    CAPTURE(t);
    CHECK_MESSAGE(table.count(t) == 1,
                  "docs/models.md's table of Hugging Face families names " << t << ", which tally does not read");
  }
}

}  // namespace tally
