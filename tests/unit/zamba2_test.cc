// Issue 16's Zamba2 (transformers configuration_zamba2.py and modeling_zamba2.py): Mamba-2 blocks,
// and at the hybrid blocks a shared transformer block (one of num_mem_blocks, in turn) over
// [hidden, embedding] with per-block adapters and a per-block linear. Expected values are derived
// by hand from the modeling code (Zamba2MambaMixer, Zamba2Attention, Zamba2MLP,
// Zamba2AttentionDecoderLayer, Zamba2HybridLayer, Zamba2Model, Zamba2HybridDynamicCache); the real
// configs are tests/data/hf/zamba2-2.7b-instruct-v2.json and zamba2-1.2b.json (both reconstructed:
// see SOURCES.md).
#include <doctest/doctest.h>

#include <algorithm>

#include "config/load_config.h"
#include "estimate/evaluation.h"
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

// A tiny Zamba2 whose pieces are easy to count: h 8, 2 heads of 2·8/2 = 8, f 16, adapters of rank
// 2 on q, k, v and gate_up, V 10, four blocks of which the last three are hybrid, two shared
// blocks (block 0 at hybrids 1 and 3, block 1 at hybrid 2); Mamba-2 d_inner 16 in 4 heads of 4,
// one group, N 4, conv kernel 4.
const char* const kTiny = R"({
  "model_type": "zamba2", "hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16,
  "vocab_size": 10, "num_hidden_layers": 4, "layers_block_type": ["mamba", "hybrid", "hybrid", "hybrid"],
  "hybrid_layer_ids": [1, 2, 3], "num_mem_blocks": 2, "adapter_rank": 2,
  "use_shared_attention_adapter": true, "use_shared_mlp_adapter": true, "mamba_expand": 2,
  "n_mamba_heads": 4, "mamba_ngroups": 1, "mamba_d_state": 4, "mamba_d_conv": 4
})";

ModelSpec Tiny(const std::string& from = "", const std::string& to = "") {
  return LoadModelText("zamba2-tiny.json", testing::ReplacedOnce(kTiny, from, to));
}

ModelSpec Edited(const std::string& from, const std::string& to) {
  return testing::EditedHf("zamba2-2.7b-instruct-v2.json", from, to);
}

}  // namespace

TEST_CASE("zamba2: Zamba2-2.7B's parameters by hand") {
  // h 2560, 54 blocks, hybrids at 6, 12, 18, 24, 30, 36, 42, 47, 51 (9), 2 shared blocks; attention
  // 32 heads of 2·2560/32 = 160 (K/V too); f 10240; adapter rank 128 (gate_up only:
  // use_shared_attention_adapter is false); V 32000, tied head; Mamba-2 d_inner 2·2560 = 5120 in 80
  // heads of 64, 1 group, N 64, conv kernel 4; no biases but conv1d's.
  //   Mamba-2 block (every one of the 54): in_proj 2560·(5120 + 5248 + 80) = 26,746,880 (conv_dim
  //     5120 + 2·1·64 = 5248); conv1d 5248·4 + 5248 = 26,240; dt_bias, A_log, D 3·80 = 240; gated
  //     norm 5120; out_proj 5120·2560 = 13,107,200; input_layernorm 2560: 39,888,240
  //   shared block (each of the 2): input_layernorm 2·2560 = 5120; q, k, v 3·5120·5120 =
  //     78,643,200; o_proj 5120·2560 = 13,107,200; pre_ff_layernorm 2560; gate_up_proj
  //     2560·20480 = 52,428,800; down_proj 10240·2560 = 26,214,400: 170,401,280
  //   per hybrid block (9): linear 2560² = 6,553,600; gate_up adapter 2560·128 + 128·20480 =
  //     2,949,120: 9,502,720
  //   embedding 32000·2560 = 81,920,000; final_layernorm 2560
  //   total: 54·39,888,240 + 2·170,401,280 + 9·9,502,720 + 81,920,000 + 2560 = 2,662,214,560
  // No exact published total: the checkpoint (Zyphra/Zamba2-2.7B: shards of 4.99 GB and 384 MB in
  // bf16, about 2.69 B stored elements) stores more than transformers builds (SOURCES.md).
  const ModelSpec spec = LoadModelFile(Hf("zamba2-2.7b-instruct-v2.json"));
  const LayerGraph g = GraphOf(spec, 16);
  const ParamCounts p = CountParams(g);
  CHECK(p.total == 2'662'214'560ULL);
  CHECK(p.embedding == 81'920'000ULL);
  // Every hybrid block is its own block type (its adapters and cache are its own); the 45 Mamba-2
  // blocks are one.
  int types = 0;
  for (const BlockRun& run : g.runs) types = std::max(types, run.type + 1);
  CHECK(types == 1 + 9);
  // The shared weights belong to the first use of each block (blocks 6 and 12); the seven later
  // uses point at them.
  uint64_t tied = 0;
  for (const Layer& l : g.layers) tied += l.weights_of && l.component != Component::kLmHead ? 1U : 0U;
  CHECK(tied == 7 * 8);  // attn_norm, q, k, v, out, mlp_norm, gate_up, down
  const auto r = testing::RunTally({"params", Hf("zamba2-2.7b-instruct-v2.json"), "--get", "params.total"});
  CHECK(r.out == "2662214560\n");
}

TEST_CASE("zamba2: Zamba2-1.2B's parameters by hand, against its checkpoint's size") {
  // h 2048, 38 blocks, hybrids at 5, 11, 17, 23, 29, 35 (6), one shared block; 32 heads of
  // 2·2048/32 = 128; f 8192; adapters of rank 128 on q, k, v and gate_up; V 32000, tied head;
  // Mamba-2 d_inner 4096 in 64 heads of 64, 1 group, N 128, conv kernel 4.
  //   Mamba-2 block (38): in_proj 2048·(4096 + 4352 + 64) = 17,432,576 (conv_dim 4096 + 2·128 =
  //     4352); conv1d 4352·4 + 4352 = 21,760; dt_bias, A_log, D 3·64 = 192; gated norm 4096;
  //     out_proj 4096·2048 = 8,388,608; input_layernorm 2048: 25,849,280
  //   shared block (1): norms 4096 + 2048; q, k, v 3·4096² = 50,331,648; o_proj 4096·2048 =
  //     8,388,608; gate_up_proj 2048·16384 = 33,554,432; down_proj 8192·2048 = 16,777,216:
  //     109,058,048
  //   per hybrid block (6): linear 2048² = 4,194,304; gate_up adapter 2048·128 + 128·16384 =
  //     2,359,296; q, k, v adapters 3·(4096·128 + 128·4096) = 3,145,728: 9,699,328
  //   embedding 32000·2048 = 65,536,000; final_layernorm 2048
  //   total: 38·25,849,280 + 109,058,048 + 6·9,699,328 + 65,536,000 + 2048 = 1,215,064,704
  // At 2 bytes each: 2,430,129,408 B, the "2.43 GB" of Zyphra/Zamba2-1.2B's one bf16
  // model.safetensors (hub file listing; SOURCES.md).
  const std::string file = Hf("zamba2-1.2b.json");
  CHECK(CountParams(GraphOf(LoadModelFile(file), 16)).total == 1'215'064'704ULL);
  CHECK(testing::RunTally({"memory", file, "--mode", "infer", "--get", "memory.infer.weights"}).out == "2430129408\n");
  // KV per token: 6 hybrid blocks · 2 · 32 · 128 · 2 bytes = 98,304; SSM state per sequence:
  // 38 · (4352·4 + 64·64·128) = 38 · 541,696 elements, 41,168,896 bytes.
  const auto kv =
      testing::RunTally({"memory", file, "--mode", "infer", "--seq", "4096", "--get", "memory.infer.kv_cache"});
  CHECK(kv.out == std::to_string(4096ULL * 98'304) + "\n");
  const auto state = testing::RunTally({"memory", file, "--mode", "infer", "--get", "memory.infer.ssm_state"});
  CHECK(state.out == "41168896\n");
}

TEST_CASE("zamba2: a tiny config counted by hand") {
  // Mamba-2 block (4): in_proj 8·(16 + 24 + 4) = 352 (conv_dim 16 + 2·4 = 24); conv1d 24·4 + 24 =
  //   120; dt_bias, A_log, D 3·4 = 12; gated norm 16; out_proj 16·8 = 128; input_layernorm 8: 636
  // shared block (2 used): norms 16 + 8; q, k, v 3·16·16 = 768; o 16·8 = 128; gate_up 8·32 = 256;
  //   down 16·8 = 128: 1304
  // per hybrid block (3): linear 8·8 = 64; gate_up adapter 8·2 + 2·32 = 80; q, k, v adapters
  //   3·(16·2 + 2·16) = 192: 336
  // embedding 10·8 = 80 (tied head), final norm 8
  // total: 4·636 + 2·1304 + 3·336 + 80 + 8 = 6248
  CHECK(CountParams(GraphOf(Tiny(), 4)).total == 6248);
  // Without the attention adapters: 3·192 fewer.
  CHECK(
      CountParams(GraphOf(Tiny("\"use_shared_attention_adapter\": true", "\"use_shared_attention_adapter\": false"), 4))
          .total == 6248 - 3 * 192);
  // One hybrid block uses one shared block only: 4·636 + 1304 + 336 + 88 = 4272.
  const ModelSpec one = Tiny("[\"mamba\", \"hybrid\", \"hybrid\", \"hybrid\"],\n  \"hybrid_layer_ids\": [1, 2, 3]",
                             "[\"mamba\", \"mamba\", \"mamba\", \"hybrid\"],\n  \"hybrid_layer_ids\": [3]");
  CHECK(CountParams(GraphOf(one, 4)).total == 4272);
  // One shared block for all three hybrid blocks: 1304 fewer.
  CHECK(CountParams(GraphOf(Tiny("\"num_mem_blocks\": 2", "\"num_mem_blocks\": 1"), 4)).total == 6248 - 1304);
}

TEST_CASE("zamba2: the shared block runs at every hybrid block") {
  // Forward GEMM FLOPs per token at 4 tokens, no causal discount (2 per multiply-add):
  //   Mamba-2 block (4): in_proj 2·8·44 = 704; conv1d 2·4·24 = 192; out_proj 2·16·8 = 256: 1152
  //   hybrid block (3): q, k, v 3·2·16·16 = 1536; QKᵀ and AV 2 · 2·4·8·2 = 256; o 2·16·8 = 256;
  //     gate_up 2·8·32 = 512; down 2·16·8 = 256; gate_up adapter 2·(8·2 + 2·32) = 160; q, k, v
  //     adapters 3·2·(16·2 + 2·16) = 384; linear 2·8·8 = 128: 3488
  //   head 2·8·10 = 160
  //   4·1152 + 3·3488 + 160 = 15,232 per token, 60,928 for the 4 tokens
  Settings s;
  s.seq = 4;
  CHECK(SummaryOf(Tiny(), s)->flops.forward == 60'928);
  // One shared block instead of two: the same FLOPs (compute per use), fewer parameters.
  CHECK(SummaryOf(Tiny("\"num_mem_blocks\": 2", "\"num_mem_blocks\": 1"), s)->flops.forward == 60'928);
}

TEST_CASE("zamba2: RoPE, the first block hybrid, the keys Zamba2Config reads its own way") {
  // use_mem_rope: RoPE on q and k at each use, 3 FLOPs per element of the 2 + 2 heads of 8: at 4
  // tokens 3 hybrid blocks · 4 · 4 · 8 · 3 = 1152 more non-matmul FLOPs, no parameters.
  Settings s;
  s.seq = 4;
  const ModelSpec rope = Tiny("\"mamba_d_conv\": 4", "\"mamba_d_conv\": 4, \"use_mem_rope\": true");
  CHECK(SummaryOf(rope, s)->flops.non_matmul_forward - SummaryOf(Tiny(), s)->flops.non_matmul_forward == 1152);
  CHECK(CountParams(GraphOf(rope, 4)).total == 6248);
  // A hybrid first block (hybrid_layer_ids [0]): 4·636 + 1304 + 336 + 88 = 4272, as with the last.
  const ModelSpec first = Tiny("[\"mamba\", \"hybrid\", \"hybrid\", \"hybrid\"],\n  \"hybrid_layer_ids\": [1, 2, 3]",
                               "[\"hybrid\", \"mamba\", \"mamba\", \"mamba\"],\n  \"hybrid_layer_ids\": [0]");
  CHECK(CountParams(GraphOf(first, 4)).total == 4272);
  // use_long_context sets max_position_embeddings to 16384 (Zamba2Config).
  CHECK(Tiny("\"mamba_d_conv\": 4", "\"mamba_d_conv\": 4, \"use_long_context\": true").transformer.context_length ==
        16384);
  // transformers builds the gate_up adapters whatever use_shared_mlp_adapter says: the same count,
  // and a note.
  const ModelSpec no_mlp = Tiny("\"use_shared_mlp_adapter\": true", "\"use_shared_mlp_adapter\": false");
  CHECK(CountParams(GraphOf(no_mlp, 4)).total == 6248);
  REQUIRE(no_mlp.notes.size() == 1);
  CHECK(no_mlp.notes[0].find("whatever it says") != std::string::npos);
}

TEST_CASE("zamba2: inference keeps KV at each hybrid block and SSM state in every block") {
  // Zamba2HybridDynamicCache: each hybrid block caches its own K and V (2 · 32 heads · 160);
  // every block's conv_states [5120 + 2·64, 4] and ssm_states [80, 64, 64].
  //   KV per token: 9 · 2 · 32 · 160 · 2 bytes (bf16) = 184,320
  //   SSM state per sequence: 54 · (5248·4 + 80·64·64) = 54 · 348,672 elements, 37,656,576 bytes
  const ModelSpec spec = LoadModelFile(Hf("zamba2-2.7b-instruct-v2.json"));
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 184'320);
  CHECK(SsmStateBytes(m, 1, s, 0) == 37'656'576);
  const std::string file = Hf("zamba2-2.7b-instruct-v2.json");
  const auto kv = testing::RunTally(
      {"memory", file, "--mode", "infer", "--batch", "2", "--seq", "4096", "--get", "memory.infer.kv_cache"});
  CHECK(kv.out == std::to_string(2ULL * 4096 * 184'320) + "\n");
  const auto state = testing::RunTally(
      {"memory", file, "--mode", "infer", "--batch", "2", "--seq", "4096", "--get", "memory.infer.ssm_state"});
  CHECK(state.out == std::to_string(2ULL * 37'656'576) + "\n");
  // The tiny model: 3 hybrid blocks · 2 · 2 heads · 8 = 96 elements per token (192 B at bf16); 4
  // blocks · (24·4 + 4·4·4) = 640 state elements per sequence (1280 B).
  const MemoryModel tiny = testing::MemoryOf(Tiny(), s);
  CHECK(KvBytesPerToken(tiny, DType::kBf16) == 192);
  CHECK(SsmStateBytes(tiny, 1, s, 0) == 1280);
}

TEST_CASE("zamba2: what is refused") {
  const std::string file = Hf("zamba2-2.7b-instruct-v2.json");
  for (const char* command : {"memory", "estimate"}) {
    CAPTURE(command);
    const auto train = testing::RunTally({command, file, "--seq", "256"});
    CHECK(train.code == 2);
    CHECK(train.err.find("training activations of 'zamba2-2.7b-instruct-v2' (Zamba2: shared transformer blocks") !=
          std::string::npos);
  }
  const auto pp = testing::RunTally({"memory", file, "--mode", "infer", "--pp", "2", "--gpus", "2"});
  CHECK(pp.code == 2);
  CHECK(pp.err.find("--pp: pipeline stages of 'zamba2-2.7b-instruct-v2'") != std::string::npos);
  CHECK(testing::RunTally({"estimate", file, "--mode", "infer", "--tp", "2"}).code == 2);
  CHECK_THROWS_WITH_AS(Edited("\"add_bias_linear\": false", "\"add_bias_linear\": true"),
                       doctest::Contains("'add_bias_linear: true' is not modelled for zamba2"), InputError);
  CHECK_THROWS_WITH_AS(Edited("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\""),
                       doctest::Contains("unsupported hidden_act 'relu'"), InputError);
  CHECK_THROWS_WITH_AS(Edited("\"attention_head_dim\": 160", "\"attention_head_dim\": 80"),
                       doctest::Contains("attention_head_dim 80 is not the 160 Zamba2Config derives"), InputError);
  CHECK_THROWS_WITH_AS(Edited("\"hybrid_layer_ids\": [\n    6,", "\"hybrid_layer_ids\": [\n    5,"),
                       doctest::Contains("hybrid_layer_ids does not list the 'hybrid' entries"), InputError);
  // Zyphra's earlier format (Zamba2-1.2B before its transformers port): "m" and "g".
  CHECK_THROWS_WITH_AS(Tiny("[\"mamba\", \"hybrid\", \"hybrid\", \"hybrid\"]", "[\"m\", \"g\", \"g\", \"g\"]"),
                       doctest::Contains("Zyphra's earlier 'm'/'g' config format is not read"), InputError);
  CHECK_THROWS_WITH_AS(Tiny("\"num_attention_heads\": 2", "\"num_attention_heads\": 2, \"num_key_value_heads\": 1"),
                       doctest::Contains("the attention adapters need as many key/value heads as heads"), InputError);
}

TEST_CASE("zamba2: every command through the consistency checks") {
  const std::string file = Hf("zamba2-2.7b-instruct-v2.json");
  CHECK(testing::RunTally({"estimate", file, "--mode", "infer", "--seq", "256", "--batch", "2"}).code == 0);
  CHECK(testing::RunTally({"estimate", file, "--mode", "infer", "--seq", "256", "--layers"}).code == 0);
  CHECK(testing::RunTally(
            {"time", file, "--hardware", "h100-sxm", "--mode", "infer", "--prompt", "1Ki", "--generate", "64"})
            .code == 0);
  CHECK(testing::RunTally({"flops", file, "--seq", "256"}).code == 0);
  CHECK(testing::RunTally({"time", file, "--hardware", "h100-sxm", "--mode", "infer", "--seq", "512"}).code == 0);
}

}  // namespace tally
