// Issue 16's hybrid Jamba (ai21labs/Jamba-v0.1, tests/data/hf/jamba-v0.1.json, reconstructed: see
// SOURCES.md): attention every 8th block from block 4, Mamba mixers with Δ/B/C RMSNorms elsewhere,
// experts every 2nd block from block 1. Expected values are derived by hand from transformers'
// modeling_jamba.py (JambaAttention, JambaMambaMixer, JambaMLP, JambaSparseMoeBlock,
// Jamba*DecoderLayer) and checked against the published "52B total, 12B active" (the model card
// and transformers' docs/source/en/model_doc/jamba.md).
#include <doctest/doctest.h>

#include <algorithm>

#include "config/load_config.h"
#include "estimate/kv_cache.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::GraphOf;
using testing::Hf;
using testing::SummaryOf;

ModelSpec Edited(const std::string& from, const std::string& to) {
  return testing::EditedHf("jamba-v0.1.json", from, to);
}

}  // namespace

TEST_CASE("jamba: Jamba-v0.1's parameters by hand") {
  // h 4096, d_inner 2·4096 = 8192, N 16, dt_rank 256, d_conv 4, V 65536, f 14336, 16 experts (top 2),
  // 32 heads of 128, 8 K/V heads; no biases but conv1d's and dt_proj's; untied head.
  //   attention (blocks 4, 12, 20, 28): q, o 4096² each, k, v 4096·1024 each = 41,943,040
  //   Mamba mixer (the other 28): in_proj 4096·16384 = 67,108,864; conv1d 8192·4 + 8192 = 40,960;
  //     x_proj 8192·(256 + 32) = 2,359,296; dt_proj 256·8192 + 8192 = 2,105,344; A_log 8192·16 =
  //     131,072; D 8192; out_proj 8192·4096 = 33,554,432; dt/B/C norms 256 + 16 + 16 = 288:
  //     105,308,448
  //   dense MLP (even blocks) 3·4096·14336 = 176,160,768; MoE (odd blocks) 16 · that + router
  //     4096·16 = 2,818,637,824
  //   per block input_layernorm + pre_ff_layernorm 2·4096; final norm 4096; embedding and head
  //     2·65536·4096 = 536,870,912
  //   total: 4·41,943,040 + 28·105,308,448 + 16·176,160,768 + 16·2,818,637,824 + 32·8192 +
  //     536,870,912 + 4096 = 51,570,323,328 (published: "52B")
  //   active: 14 of the 16 experts idle in each of the 16 MoE blocks: total − 16·14·176,160,768 =
  //     12,110,311,296 (published: "12B active")
  const ModelSpec spec = LoadModelFile(Hf("jamba-v0.1.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 51'570'323'328ULL);
  CHECK(p.active == 12'110'311'296ULL);
  CHECK(p.active_non_embedding == 12'110'311'296ULL - 65536ULL * 4096);
  // Three distinct blocks (Mamba + dense MLP, Mamba + MoE, attention + dense MLP) held once each.
  int types = 0;
  for (const BlockRun& run : GraphOf(spec, 16).runs) types = std::max(types, run.type + 1);
  CHECK(types == 3);
  const auto r = testing::RunTally({"params", Hf("jamba-v0.1.json"), "--get", "params.total"});
  CHECK(r.out == "51570323328\n");
}

TEST_CASE("jamba: the inner norms of the Mamba mixer") {
  // Without them (the same mixer as Mamba's) each of the 28 Mamba blocks has 288 parameters fewer,
  // and the forward pass 4 non-matmul FLOPs fewer per element of x_proj's 288 columns (RMSNorm with
  // a weight: square, mean, scale, weight) per token; the GEMMs are the same.
  const ModelSpec spec = LoadModelFile(Hf("jamba-v0.1.json"));
  ModelSpec plain = spec;
  plain.transformer.ssm.inner_norms = false;
  CHECK(CountParams(GraphOf(spec, 16)).total - CountParams(GraphOf(plain, 16)).total == 28 * 288);
  Settings s;
  s.seq = 512;
  const auto with = SummaryOf(spec, s);
  const auto without = SummaryOf(plain, s);
  CHECK(with->flops.forward == without->flops.forward);
  CHECK(with->flops.non_matmul_forward - without->flops.non_matmul_forward == 28ULL * 512 * 288 * 4);
}

TEST_CASE("jamba: the forward GEMMs per token") {
  // At 4096 tokens, per token (2 FLOPs per multiply-add; no causal discount):
  //   attention projections 4 · 2 · 41,943,040 = 335,544,320; QKᵀ and AV 4 · 4 · 4096 · 4096 =
  //   268,435,456; Mamba 28 · (2·4096·16384 + 2·8192·288 + 2·256·8192 + 2·8192·4096 + conv 2·4·8192)
  //   = 5,888,540,672; MLPs 16 · 2·3·4096·14336 + 16 · 2 experts · that = 16,911,433,728; routers
  //   16 · 2·4096·16 = 2,097,152; head 2·65536·4096 = 536,870,912: 23,942,922,240.
  const ModelSpec spec = LoadModelFile(Hf("jamba-v0.1.json"));
  Settings s;
  s.seq = 4096;
  CHECK(SummaryOf(spec, s)->flops.forward == 23'942'922'240ULL * 4096);
}

TEST_CASE("jamba: inference keeps KV on the attention layers and SSM state on the Mamba layers") {
  // KV per token: 4 attention layers · 2 (K, V) · 8 heads · 128 · 2 bytes (bf16) = 16,384.
  // HybridMambaAttentionDynamicCache per Mamba layer and sequence: conv_states [8192, 4] and
  // ssm_states [8192, 16]: 163,840 elements; 28 layers at bf16: 9,175,040 bytes.
  const ModelSpec spec = LoadModelFile(Hf("jamba-v0.1.json"));
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 16'384);
  CHECK(SsmStateBytes(m, 1, s, 0) == 9'175'040);
  const auto kv = testing::RunTally({"memory", Hf("jamba-v0.1.json"), "--mode", "infer", "--batch", "2", "--seq",
                                     "4096", "--get", "memory.infer.kv_cache"});
  CHECK(kv.out == std::to_string(2ULL * 4096 * 16'384) + "\n");
  const auto state = testing::RunTally({"memory", Hf("jamba-v0.1.json"), "--mode", "infer", "--batch", "2", "--seq",
                                        "4096", "--get", "memory.infer.ssm_state"});
  CHECK(state.out == std::to_string(2ULL * 9'175'040) + "\n");
}

TEST_CASE("jamba: what is refused") {
  // Training activations: tests/unit/jamba_activations_test.cc (the unfused mixer).
  CHECK_THROWS_WITH_AS(Edited("\"attn_layer_offset\": 4", "\"attn_layer_offset\": 8"),
                       doctest::Contains("attn_layer_offset 8 must be smaller than attn_layer_period 8"), InputError);
  CHECK_THROWS_WITH_AS(Edited("\"sliding_window\": null", "\"sliding_window\": 4096"),
                       doctest::Contains("a sliding window on Jamba's attention layers is not modelled"), InputError);
}

TEST_CASE("jamba: every command through the consistency checks") {
  const std::string file = Hf("jamba-v0.1.json");
  CHECK(testing::RunTally({"estimate", file, "--mode", "infer", "--seq", "256", "--batch", "2"}).code == 0);
  CHECK(testing::RunTally({"estimate", file, "--mode", "infer", "--seq", "256", "--layers"}).code == 0);
  CHECK(testing::RunTally({"flops", file, "--seq", "256"}).code == 0);
  CHECK(testing::RunTally({"time", file, "--hardware", "h100-sxm", "--mode", "infer", "--seq", "512"}).code == 0);
  CHECK(testing::RunTally({"memory", file, "--mode", "infer", "--seq", "256", "--pp", "2", "--gpus", "2"}).code == 0);
}

}  // namespace tally
