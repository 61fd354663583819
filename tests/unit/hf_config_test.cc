// Hugging Face config.json: the model named after its folder, and a partial rotary factor rounded
// down as transformers computes it (issue 20).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "config/load_config.h"
#include "graph/build_graph.h"
#include "unit/test_util.h"

namespace tally {

TEST_CASE("hf config: ./config.json is named after the working directory, not '.'") {
  const std::string json =
      "{\"model_type\": \"gpt2\", \"vocab_size\": 100, \"n_positions\": 64, \"n_embd\": 64, "
      "\"n_layer\": 2, \"n_head\": 4}";
  const std::string cwd = std::filesystem::current_path().filename().string();
  CHECK(LoadModelText("./config.json", json).name == cwd);
  CHECK(LoadModelText("gpt2-tiny/config.json", json).name == "gpt2-tiny");
}

TEST_CASE("hf config: partial_rotary_factor 0.01 rotates int(head_dim x 0.01) = 0 dimensions") {
  // phi: head_dim 2560 / 32 = 80; int(80 x 0.01) = 0 as transformers computes it: no rotation.
  const std::string json =
      "{\"model_type\": \"phi\", \"vocab_size\": 51200, \"hidden_size\": 2560, "
      "\"intermediate_size\": 10240, \"num_hidden_layers\": 2, \"num_attention_heads\": 32, "
      "\"max_position_embeddings\": 2048, \"partial_rotary_factor\": 0.01}";
  const ModelSpec spec = LoadModelText("phi/config.json", json);
  CHECK(spec.transformer.rotary_dim == 0);
  CHECK(spec.transformer.position == PositionKind::kNone);
  const LayerGraph g = testing::ResolvedGraph(spec);
  for (const Layer& l : g.layers) CHECK(l.kind != LayerKind::kRope);
}

}  // namespace tally
