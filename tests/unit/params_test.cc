#include "estimate/params.h"

#include <doctest/doctest.h>

#include "unit/test_util.h"

namespace tally {
namespace {

TEST_CASE("params: one GPT-2 small block by hand") {
  // attention: 768·2304 + 2304 + 768·768 + 768 = 2,362,368; mlp: 768·3072 + 3072 + 3072·768 + 768
  // = 4,722,432; two LayerNorms 2·2·768 = 3,072; block 7,087,872.
  ParamCounts p = CountParams(testing::PresetGraph("gpt2-small"));
  CHECK(p.per_layer == 7'087'872);
  CHECK(p.by_component.at(Component::kAttention) == 12ULL * 2'362'368);
  CHECK(p.by_component.at(Component::kMlp) == 12ULL * 4'722'432);
  CHECK(p.by_component.at(Component::kNorm) == 25ULL * 2 * 768);  // 24 in blocks + final
  CHECK(p.by_component.at(Component::kEmbedding) == 50257ULL * 768 + 1024 * 768);
  CHECK(p.by_component.at(Component::kLmHead) == 0);
}

TEST_CASE("params: an untied head counts as embedding for Kaplan's N") {
  ParamCounts p = CountParams(testing::PresetGraph("llama-2-7b"));
  CHECK(p.embedding == 2ULL * 32000 * 4096);
  CHECK(p.non_embedding == p.total - p.embedding);
  // Llama-2 block: 4·4096² attention + 3·4096·11008 MLP + 2·4096 RMSNorm.
  CHECK(p.per_layer == 4ULL * 4096 * 4096 + 3ULL * 4096 * 11008 + 2 * 4096);
}

TEST_CASE("params: sequential layers") {
  LayerGraph g = testing::InlineGraph(R"(
family: sequential
input: [16]
layers:
  - linear: {out: 32}
  - layernorm
  - gelu
  - dropout: {p: 0.1}
  - linear: {out: 4, bias: false}
)");
  ParamCounts p = CountParams(g);
  CHECK(p.total == (16 * 32 + 32) + 2 * 32 + 32 * 4);
  CHECK(p.embedding == 0);
  CHECK(p.per_layer == 0);
}

TEST_CASE("params: overflow is an error, never a wrapped number") {
  CHECK_THROWS_AS(testing::InlineGraph(R"(
family: transformer
vocab_size: 9000000000000000000
context_length: 8
d_model: 9000000000
n_layers: 1
n_heads: 1
d_ff: 8
)"),
                  InputError);
}

}  // namespace
}  // namespace tally
