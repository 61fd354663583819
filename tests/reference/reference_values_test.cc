// Published values tally must reproduce, each row with its source. Copied from the team's
// reference notes (shared/reference/values.md); the project never reads that folder.
#include <doctest/doctest.h>

#include "estimate/flops.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::PresetGraph;

struct ParamRow {
  const char* preset;
  uint64_t total;
  uint64_t non_embedding;
  const char* source;
};

// non_embedding = total - token embedding - learned positions - untied LM head (Kaplan's N).
const ParamRow kParamRows[] = {
    {"gpt2-small", 124'439'808, 85'056'000, "keras-hub GPT-2 presets; HF gpt2 checkpoint"},
    {"gpt2-medium", 354'823'168, 302'311'424, "keras-hub GPT-2 presets"},
    {"gpt2-large", 774'030'080, 708'390'400, "keras-hub GPT-2 presets"},
    {"gpt2-xl", 1'557'611'200, 1'475'561'600, "keras-hub GPT-2 presets"},
    {"llama-2-7b", 6'738'415'616, 6'476'271'616, "keras-hub Llama presets; calflops README"},
    {"llama-3-8b", 8'030'261'248, 6'979'588'096, "keras-hub Llama 3 presets"},
};

TEST_CASE("reference: published parameter counts") {
  for (const ParamRow& row : kParamRows) {
    CAPTURE(row.preset);
    CAPTURE(row.source);
    ParamCounts p = CountParams(PresetGraph(row.preset));
    CHECK(p.total == row.total);
    CHECK(p.non_embedding == row.non_embedding);
  }
}

TEST_CASE("reference: nanoGPT GPT-2 without biases") {
  // karpathy/nanoGPT transformer_sizing.ipynb: 124,337,664 (bias=False, tied head, LayerNorm weight only
  // is nanoGPT's choice; tally's LayerNorm keeps its bias, so the count differs by the 25 norms' biases).
  LayerGraph g = testing::InlineGraph(R"(
family: transformer
vocab_size: 50257
context_length: 1024
d_model: 768
n_layers: 12
n_heads: 12
d_ff: 3072
bias: false
)");
  CHECK(CountParams(g).total == 124'337'664 + 25 * 768);
}

// karpathy/nanoGPT transformer_sizing.ipynb: GPT-2 small, one sequence of 1024 tokens.
TEST_CASE("reference: GPT-2 small forward FLOPs per piece (nanoGPT notebook)") {
  LayerGraph g = PresetGraph("gpt2-small", {.seq = 1024});
  auto forward = [&](const std::string& path) {
    for (const Layer& l : g.layers) {
      if (l.path == path) return CountLayerFlops(l).forward;
    }
    FAIL("no layer " << path);
    return uint64_t{0};
  };
  CHECK(forward("blocks.0.attn.qkv") == 3'623'878'656);
  CHECK(forward("blocks.0.attn.scores") == 1'610'612'736);
  CHECK(forward("blocks.0.attn.context") == 1'610'612'736);
  CHECK(forward("blocks.0.attn.out") == 1'207'959'552);
  CHECK(forward("blocks.0.mlp.up") + forward("blocks.0.mlp.down") == 9'663'676'416);
  CHECK(forward("lm_head") == 79'047'426'048);
  FlopCounts f = CountFlops(g);
  CHECK(f.forward == 291'648'307'200);
  CHECK(f.backward == 583'296'614'400);
  CHECK(f.forward + f.backward == 874'944'921'600);
}

TEST_CASE("reference: Megatron closed form equals the exact count for GPT-2 small") {
  // Narayanan et al. 2021, App.: 24·b·s·L·h²·(1 + s/(6h) + V/(12·L·h)), multiplied out to integers:
  // 24·b·s·L·h² + 4·b·s²·L·h + 2·b·s·V·h.
  const uint64_t b = 1, s = 1024, L = 12, h = 768, V = 50257;
  uint64_t closed = 24 * b * s * L * h * h + 4 * b * s * s * L * h + 2 * b * s * V * h;
  CHECK(closed == 291'648'307'200);
  CHECK(CountFlops(PresetGraph("gpt2-small")).forward == closed);
}

uint64_t KvElementsPerToken(const LayerGraph& g) {
  uint64_t n = 0;
  // Attention scores carry the cache; a repeated block's node stands for every block of its kind.
  for (const Layer& l : g.layers) n += l.kind == LayerKind::kAttentionScores ? l.kv_elements_per_token * l.repeat : 0;
  return n;
}

TEST_CASE("reference: KV cache bytes per token at 2 bytes per element") {
  struct Row {
    const char* preset;
    uint64_t bytes;
  };
  // 2 (K and V) · L · g · d · 2 bytes.
  const Row rows[] = {{"gpt2-small", 36'864}, {"gpt2-medium", 98'304}, {"gpt2-large", 184'320},
                      {"gpt2-xl", 307'200},   {"llama-2-7b", 524'288}, {"llama-3-8b", 131'072}};
  for (const Row& row : rows) {
    CAPTURE(row.preset);
    CHECK(2 * KvElementsPerToken(PresetGraph(row.preset)) == row.bytes);
  }
  // 4096 tokens of Llama-2-7B: 2 GiB.
  CHECK(2 * KvElementsPerToken(PresetGraph("llama-2-7b")) * 4096 == 2'147'483'648);
}

TEST_CASE("reference: mixed-precision Adam model states, 16 bytes per parameter (ZeRO §3.1)") {
  CHECK(16 * CountParams(PresetGraph("gpt2-small")).total == 1'991'036'928);
  CHECK(16 * CountParams(PresetGraph("llama-2-7b")).total == 107'814'649'856);
}

struct LectureRow {
  const char* preset;
  uint64_t batch;
  uint64_t params;
  uint64_t forward;
};

TEST_CASE("reference: the lecture's own models") {
  const LectureRow rows[] = {
      {"seed-mlp", 32, 1'055'242, 67'436'544},       {"cruncher", 8, 8'256, 132'096},
      {"memory-mlp", 32, 25'175'040, 1'610'612'736}, {"mixed-precision-mlp", 64, 71'218'152, 9'114'222'592},
      {"seed-cnn", 1, 76'938, 154'536'448},
  };
  for (const LectureRow& row : rows) {
    CAPTURE(row.preset);
    LayerGraph g = PresetGraph(row.preset, {.batch = row.batch});
    CHECK(CountParams(g).total == row.params);
    CHECK(CountFlops(g).forward == row.forward);
  }
}

TEST_CASE("reference: the Cruncher ledger's parameter formula D·D·L + D") {
  const uint64_t D = 64, L = 2;
  CHECK(CountParams(PresetGraph("cruncher")).total == D * D * L + D);
}

TEST_CASE("reference: fvcore conv2d MAC counts (tally's FLOPs are twice these)") {
  // facebookresearch/fvcore tests/test_flop_count.py.
  LayerGraph a = testing::InlineGraph(R"(
family: sequential
input: [10, 15, 15]
layers:
  - conv2d: {out: 3, kernel: 3, padding: 1}
)",
                                      {.batch = 5});
  CHECK(CountFlops(a).forward == 2 * 303'750);
  LayerGraph b = testing::InlineGraph(R"(
family: sequential
input: [10, 20, 20]
layers:
  - conv2d: {out: 6, kernel: 3, padding: 1, stride: 2}
)",
                                      {.batch = 2});
  CHECK(CountFlops(b).forward == 2 * 108'000);
}

}  // namespace
}  // namespace tally
