// Issue 30's hybrid and state-space families from real config.json files (tests/data/hf/,
// provenance in SOURCES.md): parameter counts against the published checkpoint totals, or where only
// a rounded total is published, against a count derived by hand from the tensors transformers'
// modeling file builds (listed in each case); and the constant recurrent state inference keeps.
#include <doctest/doctest.h>

#include <string>

#include "config/load_config.h"
#include "estimate/kv_cache.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::EditedHf;
using testing::GraphOf;
using testing::Hf;
using testing::SummaryOf;

// `memory --mode infer --get KEY` at `seq` tokens and batch 2.
std::string InferKey(const std::string& file, const std::string& seq, const std::string& key) {
  return testing::RunTally({"memory", Hf(file), "--mode", "infer", "--batch", "2", "--seq", seq, "--get", key}).out;
}

TEST_CASE("hybrids: falcon-mamba-7b by hand from its tensors") {
  // https://huggingface.co/tiiuae/falcon-mamba-7b publishes "7.27B" only (no exact count was found),
  // so the count is derived from the tensors modular_falcon_mamba.py builds (MambaModel's, with
  // d_inner = the config's intermediate_size 8192, not expand 16 · h): h 4096, N 16, r 256, k 4,
  // V 65024, 64 layers, untied head. Per layer:
  //   norm.weight [4096]                                  4,096
  //   mixer.in_proj.weight [16384, 4096]             67,108,864
  //   mixer.conv1d.weight [8192, 1, 4], bias [8192]      40,960
  //   mixer.x_proj.weight [288, 8192]                  2,359,296
  //   mixer.dt_proj.weight [8192, 256], bias [8192]   2,105,344
  //   mixer.A_log [8192, 16], mixer.D [8192]            139,264
  //   mixer.out_proj.weight [4096, 8192]             33,554,432   → 105,312,256
  // The Δ/B/C norms (b_c_rms, dt_rms) are non-persistent buffers, not parameters.
  // 64 · 105,312,256 + embeddings [65024, 4096] + lm_head [65024, 4096] + norm_f [4096]
  //   = 6,739,984,384 + 532,676,608 + 4,096 = 7,272,665,088 ("7.27B").
  const ModelSpec spec = LoadModelFile(Hf("falcon-mamba-7b.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 7'272'665'088ULL);
  CHECK(p.embedding == 2ULL * 65024 * 4096);  // the embeddings and the untied lm_head
  CHECK(testing::RunTally({"params", Hf("falcon-mamba-7b.json"), "--get", "params.total"}).out == "7272665088\n");
}

TEST_CASE("hybrids: falcon-mamba's weightless norms on delta, B and C") {
  // The same graph as Mamba's but for three RMSNorms without weights over x_proj's r + 2N = 288
  // columns: 3 FLOPs per element (square, accumulate, scale), in flops.non_matmul; no parameters,
  // no matmul FLOPs.
  const ModelSpec spec = LoadModelFile(Hf("falcon-mamba-7b.json"));
  ModelSpec plain = spec;
  plain.transformer.ssm.unit_inner_norms = false;
  Settings s;
  s.seq = 512;
  CHECK(CountParams(GraphOf(spec, 512)).total == CountParams(GraphOf(plain, 512)).total);
  CHECK(SummaryOf(spec, s)->flops.forward == SummaryOf(plain, s)->flops.forward);
  CHECK(SummaryOf(spec, s)->flops.non_matmul_forward - SummaryOf(plain, s)->flops.non_matmul_forward ==
        64ULL * 512 * 288 * 3);
}

TEST_CASE("hybrids: falcon-mamba keeps a constant state, no KV cache") {
  // FalconMambaCache per layer and sequence: conv_states [8192, 4] and ssm_states [8192, 16], 163,840
  // elements; 64 layers at bf16: 20,971,520 bytes, whatever the context.
  CHECK(InferKey("falcon-mamba-7b.json", "1024", "memory.infer.ssm_state") == "41943040\n");
  CHECK(InferKey("falcon-mamba-7b.json", "65536", "memory.infer.ssm_state") == "41943040\n");
  CHECK(InferKey("falcon-mamba-7b.json", "65536", "memory.infer.kv_cache") == "0\n");
}

TEST_CASE("hybrids: recurrentgemma-2b against its published count") {
  // google/recurrentgemma-2b (https://huggingface.co/google/recurrentgemma-2b): 2,682,862,080
  // parameters in its safetensors metadata (F32, 10,731,506,136 bytes; index id 66310473402, and the
  // same count for recurrentgemma-2b-it, index id 65845283788). By hand from modeling_recurrent_gemma.py
  // (h 2560, lru_width 2560, 10 heads of 256, 1 K/V head, conv 4, MLP 15360 / 2 = 7680, V 256000,
  // 26 layers: (recurrent, recurrent, attention) repeated, 18 recurrent and 8 attention):
  //   recurrent temporal block: linear_y, linear_x [2560, 2560] + bias 2560, linear_out the same:
  //     3 · 6,556,160; conv_1d [2560, 1, 4] + bias 2560: 12,800; rg_lru: recurrent_param [2560],
  //     input_gate_weight and recurrent_gate_weight [10, 256, 256], their biases [10, 256]:
  //     2560 + 2 · (655,360 + 2560) = 1,318,400                               → 20,999,680
  //   attention temporal block: q_proj [2560, 2560], k_proj, v_proj [256, 2560], o_proj [2560, 2560]
  //     + bias 2560                                                            → 14,420,480
  //   mlp_block: gate_proj, up_proj [7680, 2560] + bias 7680, down_proj [2560, 7680] + bias 2560
  //                                                                            → 59,000,320
  //   temporal_pre_norm, channel_pre_norm 2 · 2560
  //   18 · (20,999,680 + 59,000,320 + 5120) + 8 · (14,420,480 + 59,000,320 + 5120)
  //     + embed_tokens [256000, 2560] (tied head) + final_norm 2560 = 2,682,862,080.
  const ModelSpec spec = LoadModelFile(Hf("recurrentgemma-2b.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 2'682'862'080ULL);
  CHECK(p.embedding == 256000ULL * 2560);
  CHECK(testing::RunTally({"params", Hf("recurrentgemma-2b.json"), "--get", "params.total"}).out == "2682862080\n");
}

TEST_CASE("hybrids: recurrentgemma's recurrent block by hand") {
  // Matmul FLOPs per token of block 0 (recurrent), 2 per multiply-add: linear_y, linear_x and
  // linear_out 3 · 2 · 2560 · 2560 = 39,321,600; the depthwise conv 2 · 4 · 2560 = 20,480; the two
  // block-diagonal gates 2 · 2 · 10 · 256 · 256 = 2,621,440; the MLP 3 · 2 · 2560 · 7680 =
  // 117,964,800: 159,928,320.
  const uint64_t seq = 8;
  const LayerGraph g = GraphOf(LoadModelFile(Hf("recurrentgemma-2b.json")), seq);
  uint64_t params = 0, matmul = 0;
  for (const Layer& l : g.layers) {
    if (l.block != 0) continue;
    params += l.params;
    for (const Gemm& gemm : l.gemms) matmul += 2 * gemm.m * gemm.n * gemm.k * gemm.count;
  }
  CHECK(params == 20'999'680 + 59'000'320 + 5120);
  CHECK(matmul == 159'928'320ULL * seq);
}

TEST_CASE("hybrids: recurrentgemma keeps a window of KV and a constant state") {
  // Attention layers: a KV cache of attention_window_size 2048 tokens (the model's _setup_cache),
  // K and V of 1 head of 256: 8 layers · 2048 · 2 · 256 · 2 bytes = 16,777,216 per sequence from 2048
  // tokens on. Recurrent layers: conv1d_state [2560, 3] and recurrent_states [2560], 10,240
  // elements; 18 layers at bf16: 368,640 bytes per sequence, whatever the context.
  CHECK(InferKey("recurrentgemma-2b.json", "4096", "memory.infer.kv_cache") == "33554432\n");
  CHECK(InferKey("recurrentgemma-2b.json", "65536", "memory.infer.kv_cache") == "33554432\n");
  CHECK(InferKey("recurrentgemma-2b.json", "4096", "memory.infer.ssm_state") == "737280\n");
  CHECK(InferKey("recurrentgemma-2b.json", "65536", "memory.infer.ssm_state") == "737280\n");
  // Training activations of the RG-LRU's eager loop are refused, with the way to inference memory.
  const auto train = testing::RunTally({"memory", Hf("recurrentgemma-2b.json"), "--seq", "256"});
  CHECK(train.code == 2);
  CHECK(train.err.find("RG-LRU") != std::string::npos);
}

TEST_CASE("hybrids: Qwen3-Next-80B-A3B against its checkpoint") {
  // Qwen/Qwen3-Next-80B-A3B-Instruct (https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct):
  // model.safetensors.index.json total_size 162,649,725,440 bytes of BF16, 81,324,862,720 stored
  // parameters (index ids 71348481447, 62751147890; the kvfit table's HF safetensors total, index id
  // 70911651117). By hand from modular_qwen3_next.py (h 2048, V 151936, 48 layers, every 4th gated
  // attention, the rest Gated DeltaNet, every layer MoE):
  //   linear_attn: in_proj_qkvz [12288, 2048] 25,165,824; in_proj_ba [64, 2048] 131,072; conv1d
  //     [8192, 1, 4] 32,768; dt_bias, A_log [32] 64; norm [128]; out_proj [2048, 4096] 8,388,608
  //                                                                            → 33,718,464
  //   self_attn: q_proj [8192, 2048] 16,777,216; k_proj, v_proj [512, 2048]; o_proj [2048, 4096];
  //     q_norm, k_norm [256]                                                   → 27,263,488
  //   mlp: gate [512, 2048] 1,048,576; 512 experts of gate/up [512, 2048] and down [2048, 512]
  //     512 · 3,145,728; shared_expert 3,145,728; shared_expert_gate [1, 2048] → 1,614,809,088
  //   input_layernorm, post_attention_layernorm 2 · 2048
  //   36 · 1,648,531,648 + 12 · 1,642,076,672 + embed_tokens and lm_head 2 · 151936 · 2048
  //     + norm 2048 = 79,674,391,296 (transformers' count: "80B total").
  // The checkpoint's mtp.*, skipped on load: fc [2048, 4096] 8,388,608, pre_fc_norm_embedding,
  // pre_fc_norm_hidden and norm 3 · 2048, one gated-attention MoE layer 1,642,076,672: 1,650,471,424.
  const ModelSpec spec = LoadModelFile(Hf("qwen3-next-80b-a3b-instruct.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 79'674'391'296ULL);
  CHECK(p.mtp == 1'650'471'424ULL);
  CHECK(p.total + p.mtp == 162'649'725'440ULL / 2);
  // Active per token: 10 of the 512 experts in each of the 48 layers, the router and the shared
  // expert whole: 79,674,391,296 − 48 · 502 · 3,145,728 = 3,874,929,408 ("A3B"); without the input
  // embedding 3,563,764,480 (a ledger of the release, index id 70129236398, has 3,563,766,528: one
  // embedding row instead of none).
  CHECK(p.active == 3'874'929'408ULL);
  CHECK(p.active_non_embedding == 3'874'929'408ULL - 151936ULL * 2048);
  const auto mtp = testing::RunTally({"params", Hf("qwen3-next-80b-a3b-instruct.json"), "--get", "params.mtp"});
  CHECK(mtp.out == "1650471424\n");
}

TEST_CASE("hybrids: Qwen3-Next's Gated DeltaNet block by hand") {
  // Block 0 (Gated DeltaNet with the experts), per token, 2 FLOPs per multiply-add: in_proj_qkvz
  // 2 · 2048 · 12288 = 50,331,648; in_proj_ba 2 · 2048 · 64 = 262,144; conv1d 2 · 4 · 8192 = 65,536;
  // out_proj 2 · 4096 · 2048 = 16,777,216; router 2 · 2048 · 512 = 2,097,152; 10 experts 10 · 2 ·
  // 3,145,728 = 62,914,560; the shared expert 6,291,456 and its gate 4,096: 138,743,808.
  // The recurrence (build_ssm.cc): 7 FLOPs per state element, 32 heads · 128 · 128 = 524,288 of
  // them, 3,670,016; per key channel of the 32 heads 7 · 32 · 128 = 28,672; per head 5 · 32 = 160;
  // per value channel 2 · 4096 = 8,192: 3,707,040.
  const uint64_t seq = 8;
  const LayerGraph g = GraphOf(LoadModelFile(Hf("qwen3-next-80b-a3b-instruct.json")), seq);
  uint64_t params = 0, matmul = 0, rule = 0;
  for (const Layer& l : g.layers) {
    if (l.block != 0) continue;
    params += l.params;
    for (const Gemm& gemm : l.gemms) matmul += 2 * gemm.m * gemm.n * gemm.k * gemm.count;
    if (l.kind == LayerKind::kDeltaRule) rule += l.non_matmul_flops;
  }
  CHECK(params == 1'648'531'648ULL);
  CHECK(matmul == 138'743'808ULL * seq);
  CHECK(rule == 3'707'040ULL * seq);
}

TEST_CASE("hybrids: Qwen3-Next keeps KV on its attention layers and a constant state on the others") {
  // KV per token: 12 layers · 2 (K, V) · 2 heads · 256 · 2 bytes = 24,576. The cache's state per
  // Gated DeltaNet layer and sequence: conv_states [8192, 4] and recurrent_states [32, 128, 128],
  // 557,056 elements; 36 layers at bf16: 40,108,032 bytes, whatever the context.
  const ModelSpec spec = LoadModelFile(Hf("qwen3-next-80b-a3b-instruct.json"));
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 24'576);
  CHECK(SsmStateBytes(m, 1, s, 0) == 40'108'032);
  CHECK(InferKey("qwen3-next-80b-a3b-instruct.json", "4096", "memory.infer.kv_cache") ==
        std::to_string(2ULL * 4096 * 24'576) + "\n");
  CHECK(InferKey("qwen3-next-80b-a3b-instruct.json", "4096", "memory.infer.ssm_state") == "80216064\n");
  CHECK(InferKey("qwen3-next-80b-a3b-instruct.json", "131072", "memory.infer.ssm_state") == "80216064\n");
}

TEST_CASE("hybrids: Qwen3-Next's layer_types and what is refused") {
  // layer_types, when a config spells it out, names the same layers as full_attention_interval.
  std::string types;
  for (int i = 0; i < 48; ++i)
    types += std::string(i == 0 ? "" : ", ") + ((i + 1) % 4 == 0 ? "\"full_attention\"" : "\"linear_attention\"");
  const ModelSpec listed = EditedHf("qwen3-next-80b-a3b-instruct.json", "\"mlp_only_layers\": [],",
                                    "\"mlp_only_layers\": [], \"layer_types\": [" + types + "],");
  CHECK(CountParams(GraphOf(listed, 16)).total == 79'674'391'296ULL);
  CHECK_THROWS_WITH_AS(EditedHf("qwen3-next-80b-a3b-instruct.json", "\"mlp_only_layers\": [],",
                                "\"mlp_only_layers\": [], \"layer_types\": [\"mamba\"],"),
                       doctest::Contains("'layer_types' must list the 48 layers"), InputError);
  // Dense layers (mlp_only_layers) take the SwiGLU MLP of intermediate_size instead of the experts:
  // 3 · 2048 · 5120 = 31,457,280 for 1,614,809,088.
  const ModelSpec dense =
      EditedHf("qwen3-next-80b-a3b-instruct.json", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0]");
  CHECK(CountParams(GraphOf(dense, 16)).total == 79'674'391'296ULL - 1'614'809'088ULL + 31'457'280ULL);
}

TEST_CASE("hybrids: granite-4.0-h-tiny against its published count") {
  // ibm-granite/granite-4.0-h-tiny(-base) (https://huggingface.co/ibm-granite/granite-4.0-h-tiny-base,
  // revision f95c8e83): 6,939,037,248 parameters in its safetensors metadata (index ids 70196246186,
  // 68997933905). By hand from modular_granitemoehybrid.py (h 1536, 40 layers, attention at 5, 15,
  // 25 and 35, Mamba-2 elsewhere, every layer the experts and the shared MLP; V 100352, tied):
  //   mamba: in_proj [3072 + 3328 + 48, 1536] 9,904,128; conv1d [3328, 1, 4] + bias 16,640;
  //     dt_bias, A_log, D [48] 144; norm [3072]; out_proj [1536, 3072] 4,718,592  → 14,642,576
  //   self_attn: q_proj, o_proj [1536, 1536], k_proj, v_proj [512, 1536]         →  6,291,456
  //   block_sparse_moe: router [64, 1536] 98,304; input_linear [64, 1024, 1536] and output_linear
  //     [64, 1536, 512] 150,994,944; shared_mlp input_linear [2048, 1536] and output_linear
  //     [1536, 1024] 4,718,592                                                 → 155,811,840
  //   input_layernorm, post_attention_layernorm 2 · 1536
  //   36 · 170,457,488 + 4 · 162,106,368 + embed_tokens [100352, 1536] + norm 1536 = 6,939,037,248.
  const ModelSpec spec = LoadModelFile(Hf("granite-4.0-h-tiny.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 6'939'037'248ULL);
  // Active: 6 of the 64 experts per layer: 6,939,037,248 − 40 · 58 · 3 · 1536 · 512.
  CHECK(p.active == 1'465'470'528ULL);
  // KV: 4 layers · 2 · 4 heads · 128 · 2 bytes = 8,192 per token. State per Mamba-2 layer:
  // conv_states [3328, 4] and ssm_states [48, 64, 128], 406,528 elements; 36 layers at bf16.
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 8'192);
  CHECK(SsmStateBytes(m, 1, s, 0) == 36ULL * 406'528 * 2);
  CHECK(InferKey("granite-4.0-h-tiny.json", "131072", "memory.infer.ssm_state") ==
        std::to_string(2ULL * 36 * 406'528 * 2) + "\n");
  // Without experts the shared MLP is the whole feed-forward (granite-4.0-h-1b): each layer loses
  // the router and the experts.
  const ModelSpec dense = EditedHf("granite-4.0-h-tiny.json", "\"num_local_experts\": 64", "\"num_local_experts\": 0");
  CHECK(CountParams(GraphOf(dense, 16)).total == 6'939'037'248ULL - 40ULL * (98'304 + 150'994'944));
}

TEST_CASE("hybrids: Nemotron-Nano-9B-v2 against its published count") {
  // nvidia/NVIDIA-Nemotron-Nano-9B-v2 (https://huggingface.co/nvidia/NVIDIA-Nemotron-Nano-9B-v2,
  // revision 6533e8de): 8,888,227,328 parameters in its safetensors metadata (index ids 67346663044,
  // 66176815206; the kvfit table, 70911651117). By hand from modular_nemotron_h.py (h 4480, the
  // pattern's 27 M, 4 * and 25 - blocks, V 131072, untied):
  //   M: in_proj [10240 + 12288 + 128, 4480] 101,498,880; conv1d [12288, 1, 4] + bias 61,440;
  //     dt_bias, A_log, D [128] 384; norm [10240]; out_proj [4480, 10240] 45,875,200 → 147,446,144
  //   *: q_proj [5120, 4480], k_proj, v_proj [1024, 4480], o_proj [4480, 5120]   →  55,050,240
  //   -: up_proj [15680, 4480], down_proj [4480, 15680]                          → 140,492,800
  //   a norm [4480] per block; embeddings and lm_head 2 · 131072 · 4480; norm_f 4480:
  //   27 · 147,450,624 + 4 · 55,054,720 + 25 · 140,497,280 + 1,174,405,120 + 4480 = 8,888,227,328.
  const ModelSpec spec = LoadModelFile(Hf("nemotron-nano-9b-v2.json"));
  CHECK(CountParams(GraphOf(spec, 16)).total == 8'888'227'328ULL);
  // KV: 4 layers · 2 · 8 heads · 128 · 2 bytes = 16,384 per token. State per M block:
  // conv_states [12288, 4] and ssm_states [128, 80, 128], 1,359,872 elements; 27 blocks at bf16.
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 16'384);
  CHECK(SsmStateBytes(m, 1, s, 0) == 27ULL * 1'359'872 * 2);
  CHECK(InferKey("nemotron-nano-9b-v2.json", "65536", "memory.infer.ssm_state") ==
        std::to_string(2ULL * 27 * 1'359'872 * 2) + "\n");
  // An E block for the first - (4 routed experts of 1024, 2 per token, a shared MLP of 2048):
  // router [4, 4480] and e_score_correction_bias [4], experts 4 · 2 · 4480 · 1024, shared 2 · 4480 ·
  // 2048: 55,068,164 for the MLP's 140,492,800.
  std::string text = ReadFileText(Hf("nemotron-nano-9b-v2.json"));
  text = testing::ReplacedOnce(text, "\"M-M-M-MM", "\"MEM-M-MM");
  text = testing::ReplacedOnce(text, "\"model_type\"",
                               "\"moe_intermediate_size\": 1024, \"moe_shared_expert_intermediate_size\": 2048, "
                               "\"n_routed_experts\": 4, \"num_experts_per_tok\": 2, \"model_type\"");
  CHECK(CountParams(GraphOf(LoadModelText("nemotron.json", text), 16)).total ==
        8'888'227'328ULL - 140'492'800 + 55'068'164);
}

TEST_CASE("hybrids: LFM2-1.2B against its published count") {
  // LiquidAI/LFM2-1.2B (https://huggingface.co/LiquidAI/LFM2-1.2B): "1,170,340,608" parameters in
  // the model card's table (index ids 42798516307, 60099840099). By hand from modeling_lfm2.py (h
  // 2048, 16 layers, attention at 2, 5, 8, 10, 12, 14, short convolutions elsewhere, 32 heads of 64,
  // 8 K/V heads, the MLP's block_ff_dim 12288 → int(2 · 12288 / 3) = 8192, V 65536, tied):
  //   conv: in_proj [6144, 2048] 12,582,912; conv [2048, 1, 3] 6,144; out_proj [2048, 2048]
  //     4,194,304                                                              → 16,783,360
  //   self_attn: q_proj, out_proj [2048, 2048], k_proj, v_proj [512, 2048], q_layernorm and
  //     k_layernorm [64]                                                       → 10,485,888
  //   feed_forward: w1, w3 [8192, 2048], w2 [2048, 8192]                        → 50,331,648
  //   operator_norm, ffn_norm 2 · 2048
  //   10 · 67,119,104 + 6 · 60,821,632 + embed_tokens [65536, 2048] + embedding_norm 2048
  //   = 1,170,340,608.
  const ModelSpec spec = LoadModelFile(Hf("lfm2-1.2b.json"));
  CHECK(spec.transformer.d_ff == 8192);
  CHECK(CountParams(GraphOf(spec, 16)).total == 1'170'340'608ULL);
  // KV: 6 layers · 2 · 8 heads · 64 · 2 bytes = 12,288 per token. Lfm2Cache's conv_cache per conv
  // layer and sequence: [2048, 3]; 10 layers at bf16: 122,880 bytes, whatever the context.
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 12'288);
  CHECK(SsmStateBytes(m, 1, s, 0) == 122'880);
  CHECK(InferKey("lfm2-1.2b.json", "100000", "memory.infer.ssm_state") == "245760\n");
  // Matmul FLOPs per token of block 0 (a conv block): in_proj 2 · 2048 · 6144, the conv 2 · 3 ·
  // 2048, out_proj 2 · 2048 · 2048 and the MLP 2 · 3 · 2048 · 8192: 134,230,016.
  uint64_t matmul = 0;
  for (const Layer& l : GraphOf(spec, 8).layers) {
    if (l.block != 0) continue;
    for (const Gemm& gemm : l.gemms) matmul += 2 * gemm.m * gemm.n * gemm.k * gemm.count;
  }
  CHECK(matmul == 134'230'016ULL * 8);
}

TEST_CASE("hybrids: Falcon-H1-0.5B against its published count") {
  // tiiuae/Falcon-H1-0.5B-Base (https://huggingface.co/tiiuae/Falcon-H1-0.5B-Base): 521,411,104
  // parameters as transformers loads it (index ids 62405531367, 60921870048). By hand from
  // modeling_falcon_h1.py (h 1024, 36 blocks of attention and Mamba-2 side by side, V 32784,
  // untied):
  //   self_attn: q_proj [512, 1024], k_proj, v_proj [128, 1024], o_proj [1024, 512] → 1,310,720
  //   mamba: in_proj [1536 + 1792 + 24, 1024] 3,432,448; conv1d [1792, 1, 4] + bias 8,960; dt_bias,
  //     A_log, D [24] 72; no norm (mamba_rms_norm false); out_proj [1024, 1536] 1,572,864
  //                                                                              → 5,014,344
  //   feed_forward: gate_proj, up_proj [2048, 1024], down_proj [1024, 2048]     → 6,291,456
  //   input_layernorm, pre_ff_layernorm 2 · 1024
  //   36 · 12,618,568 + embed_tokens and lm_head 2 · 32784 · 1024 + final_layernorm 1024
  //   = 521,411,104.
  const ModelSpec spec = LoadModelFile(Hf("falcon-h1-0.5b.json"));
  CHECK(CountParams(GraphOf(spec, 16)).total == 521'411'104ULL);
  // With mamba_rms_norm, each block's mixer gains its gated norm's weight [1536].
  const ModelSpec normed = EditedHf("falcon-h1-0.5b.json", "\"mamba_rms_norm\": false", "\"mamba_rms_norm\": true");
  CHECK(CountParams(GraphOf(normed, 16)).total == 521'411'104ULL + 36 * 1536);
  // Every block keeps both: KV of 36 layers · 2 · 2 heads · 64 · 2 bytes = 18,432 per token, and the
  // Mamba-2 state conv_states [1792, 4] and ssm_states [24, 64, 128], 203,776 elements per layer.
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 18'432);
  CHECK(SsmStateBytes(m, 1, s, 0) == 36ULL * 203'776 * 2);
  CHECK(InferKey("falcon-h1-0.5b.json", "8192", "memory.infer.ssm_state") ==
        std::to_string(2ULL * 36 * 203'776 * 2) + "\n");
}

TEST_CASE("hybrids: Kimi-Linear-48B-A3B against its checkpoint") {
  // moonshotai/Kimi-Linear-48B-A3B-Instruct (https://huggingface.co/moonshotai/Kimi-Linear-48B-A3B-Instruct):
  // 49,122,681,728 parameters, its HF safetensors total (index ids 69615480373, 62691149540; the
  // model card says "48B"). By hand from the checkpoint's modeling_kimi.py, each tensor in the weight
  // list of index id 62691149540 (h 2304, V 163840, 27 layers; kda_layers 1–3, 5–7, …, 25, 26
  // numbered from 1, so MLA on layers 3, 7, 11, 15, 19, 23 and 26; layer 0 dense, 1–26 MoE):
  //   KDA self_attn: q_proj, k_proj, v_proj [4096, 2304] 3 · 9,437,184; q_conv1d, k_conv1d, v_conv1d
  //     [4096, 1, 4] 3 · 16,384; A_log [1, 1, 32, 1]; dt_bias [4096]; f_a_proj, g_a_proj [128, 2304]
  //     2 · 294,912; f_b_proj, g_b_proj [4096, 128] 2 · 524,288; b_proj [32, 2304] 73,728; o_norm
  //     [128]; o_proj [2304, 4096] 9,437,184                                     → 39,514,272
  //   MLA self_attn: q_proj [6144, 2304] 14,155,776; kv_a_proj_with_mqa [576, 2304] 1,327,104;
  //     kv_a_layernorm [512]; kv_b_proj [8192, 512] 4,194,304; o_proj [2304, 4096] → 29,114,880
  //   layer 0's mlp: gate_proj, up_proj [9216, 2304], down_proj [2304, 9216]    →     63,700,992
  //   block_sparse_moe: gate [256, 2304] 589,824 and e_score_correction_bias [256]; 256 experts of
  //     w1, w3 [1024, 2304] and w2 [2304, 1024] 256 · 7,077,888; shared_experts 7,077,888
  //                                                                            → 1,819,607,296
  //   input_layernorm, post_attention_layernorm 2 · 2304
  //   20 · 39,514,272 + 7 · 29,114,880 + 63,700,992 + 26 · 1,819,607,296 + 27 · 4,608
  //     + embed_tokens and lm_head 2 · 163840 · 2304 + norm 2304 = 49,122,681,728.
  const ModelSpec spec = LoadModelFile(Hf("kimi-linear-48b-a3b-instruct.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 49'122'681'728ULL);
  // Active per token: 8 of the 256 experts in each of the 26 MoE layers, the router and the shared
  // expert whole: 49,122,681,728 − 26 · 248 · 7,077,888 = 3,484,459,904 ("A3B"); without the input
  // embedding 3,106,972,544, which is a ledger's 3,106,750,464 active matrix and conv weights (index
  // id 56747956596) plus the 222,080 norm, dt_bias, A_log and score-bias values it leaves out.
  CHECK(p.active == 3'484'459'904ULL);
  CHECK(p.active_non_embedding == 3'106'972'544ULL);
  CHECK(testing::RunTally({"params", Hf("kimi-linear-48b-a3b-instruct.json"), "--get", "params.total"}).out ==
        "49122681728\n");
}

TEST_CASE("hybrids: Kimi-Linear's KDA block by hand") {
  // Block 0 (KDA with the dense MLP), per token, 2 FLOPs per multiply-add: q, k, v 3 · 2 · 2304 ·
  // 4096 = 56,623,104; the three short convolutions 2 · 4 · 12288 = 98,304; f_a, g_a 2 · 2 · 2304 ·
  // 128 = 1,179,648; f_b, g_b 2 · 2 · 128 · 4096 = 2,097,152; b_proj 2 · 2304 · 32 = 147,456; the
  // chunkwise delta rule, Kimi Linear §6.3 Eq. 13 per head 6 · 128² + 3 · 64 · 128 + 64² = 126,976,
  // for 32 heads 4,063,232; o_proj 2 · 4096 · 2304 = 18,874,368; the MLP 2 · 3 · 2304 · 9216 =
  // 127,401,984: 210,485,248. The gate, L2 norms and β beside them: 11 · 4096 + 32 = 45,088.
  const uint64_t seq = 8;
  const LayerGraph g = GraphOf(LoadModelFile(Hf("kimi-linear-48b-a3b-instruct.json")), seq);
  uint64_t params = 0, matmul = 0, rule = 0;
  for (const Layer& l : g.layers) {
    if (l.block != 0) continue;
    params += l.params;
    for (const Gemm& gemm : l.gemms) matmul += 2 * gemm.m * gemm.n * gemm.k * gemm.count;
    if (l.kind == LayerKind::kDeltaRule) rule += l.non_matmul_flops;
  }
  CHECK(params == 39'514'272ULL + 63'700'992ULL + 2 * 2304);
  CHECK(matmul == 210'485'248ULL * seq);
  CHECK(rule == 45'088ULL * seq);
}

TEST_CASE("hybrids: Kimi-Linear keeps a latent cache on its MLA layers and a constant state on KDA") {
  // KV per token: 7 MLA layers · (kv_lora_rank 512 + rope 64) · 2 bytes = 8,064. Per KDA layer and
  // sequence KimiDynamicCache keeps the three conv states [4096, 4] and the recurrent state [32,
  // 128, 128]: 573,440 elements; 20 layers at bf16: 22,937,600 bytes, whatever the context.
  const ModelSpec spec = LoadModelFile(Hf("kimi-linear-48b-a3b-instruct.json"));
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 8'064);
  CHECK(SsmStateBytes(m, 1, s, 0) == 22'937'600);
  CHECK(InferKey("kimi-linear-48b-a3b-instruct.json", "4096", "memory.infer.kv_cache") ==
        std::to_string(2ULL * 4096 * 8'064) + "\n");
  CHECK(InferKey("kimi-linear-48b-a3b-instruct.json", "4096", "memory.infer.ssm_state") == "45875200\n");
  CHECK(InferKey("kimi-linear-48b-a3b-instruct.json", "131072", "memory.infer.ssm_state") == "45875200\n");
}

TEST_CASE("hybrids: Kimi-Linear's layer numbering and what is refused") {
  // kda_layers counts from 1: naming layer 27 makes the last layer KDA (39,514,272 for 29,114,880).
  const ModelSpec last = EditedHf("kimi-linear-48b-a3b-instruct.json", "      26\n    ]", "      26,\n      27\n    ]");
  CHECK(CountParams(GraphOf(last, 16)).total == 49'122'681'728ULL - 29'114'880ULL + 39'514'272ULL);
  CHECK_THROWS_WITH_AS(EditedHf("kimi-linear-48b-a3b-instruct.json", "      26\n    ]", "      26,\n      28\n    ]"),
                       doctest::Contains("'kda_layers' has 28, past the 27 layers"), InputError);
  CHECK_THROWS_WITH_AS(EditedHf("kimi-linear-48b-a3b-instruct.json", "\"q_lora_rank\": null", "\"q_lora_rank\": 8"),
                       doctest::Contains("no query LoRA"), InputError);
  CHECK_THROWS_WITH_AS(
      EditedHf("kimi-linear-48b-a3b-instruct.json", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"situ\""),
      doctest::Contains("unsupported hidden_act 'situ'"), InputError);
  // Without linear_attn_config every layer is MLA.
  const ModelSpec mla =
      EditedHf("kimi-linear-48b-a3b-instruct.json", "\"linear_attn_config\"", "\"no_linear_attn_config\"");
  CHECK(CountParams(GraphOf(mla, 16)).total == 49'122'681'728ULL - 20ULL * (39'514'272ULL - 29'114'880ULL));
}

TEST_CASE("hybrids: MiniMax-M1 against its checkpoint") {
  // MiniMaxAI/MiniMax-M1-40k and -80k (https://huggingface.co/MiniMaxAI/MiniMax-M1-40k): 456,089,655,296
  // parameters in a table of HF totals (index id 69468411049; the card says "456B"). By hand from the
  // checkpoint's modeling_minimax_m1.py (h 6144, V 200064, 80 layers, 64 heads of 128, 8 K/V heads;
  // attn_type_list 0 (lightning) seven times then 1 (softmax), ten times over; every layer 32 experts):
  //   lightning self_attn: qkv_proj [24576, 6144] 150,994,944; output_gate [8192, 6144] 50,331,648;
  //     norm [8192]; out_proj [6144, 8192] 50,331,648                         →   251,666,432
  //   softmax self_attn: q_proj [8192, 6144], o_proj [6144, 8192] 2 · 50,331,648; k_proj, v_proj
  //     [1024, 6144] 2 · 6,291,456                                             →   113,246,208
  //   block_sparse_moe: gate [32, 6144] 196,608; 32 experts of w1, w3 [9216, 6144] and w2 [6144,
  //     9216] 32 · 169,869,312                                                 → 5,436,014,592
  //   input_layernorm, post_attention_layernorm 2 · 6144
  //   70 · 251,666,432 + 10 · 113,246,208 + 80 · (5,436,014,592 + 12,288)
  //     + embed_tokens and lm_head 2 · 200064 · 6144 + norm 6144 = 456,089,655,296.
  const ModelSpec spec = LoadModelFile(Hf("minimax-m1-40k.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 456'089'655'296ULL);
  // Active per token: 2 of the 32 experts in each of the 80 layers: 456,089,655,296 − 80 · 30 ·
  // 169,869,312 = 48,403,306,496; less both tables 45,944,920,064, the card's "45.9 billion
  // activated"; tally's active_non_embedding leaves out the input table only.
  CHECK(p.active == 48'403'306'496ULL);
  CHECK(p.active_non_embedding == 48'403'306'496ULL - 200064ULL * 6144);
  CHECK(p.active_non_embedding - 200064ULL * 6144 == 45'944'920'064ULL);
  // transformers' minimax reads MiniMax-Text-01 (the same architecture) from layer_types.
  CHECK(CountParams(GraphOf(LoadModelFile(Hf("minimax-text-01-hf.json")), 16)).total == 456'089'655'296ULL);
}

TEST_CASE("hybrids: MiniMax's lightning attention by hand") {
  // Block 0 (lightning attention and the experts), per token, 2 FLOPs per multiply-add: qkv_proj
  // 2 · 6144 · 24576 = 301,989,888; output_gate and out_proj 2 · 2 · 6144 · 8192 = 201,326,592;
  // the router 2 · 6144 · 32 = 393,216; 2 experts 2 · 2 · 3 · 6144 · 9216 = 679,477,248. The
  // lightning products (MiniMaxLightningAttention.forward) per head: Q·Kᵀ and its product with V
  // inside a block of b = min(256, seq) tokens, 2 · 2 · b · 128, Q·KV and Kᵀ·V 2 · 2 · 128²:
  // at seq 8, 4 · 8 · 128 + 65,536 = 69,632, for 64 heads 4,456,448; at seq 512 (b = 256)
  // 131,072 + 65,536 = 196,608 = 12 · 128², the attention term of MiniMax-01's FLOPs table
  // (72·b·n·l·D²/(2h) over three passes; quoted in index id 60363724054), for 64 heads 12,582,912.
  // Beside them 64 · b decay-masked scores
  // and 3 · 8192 decays and sums: 25,088 per token at seq 8.
  for (const uint64_t seq : {8ULL, 512ULL}) {
    CAPTURE(seq);
    const LayerGraph g = GraphOf(LoadModelFile(Hf("minimax-m1-40k.json")), seq);
    uint64_t params = 0, matmul = 0, lightning = 0, extra = 0;
    for (const Layer& l : g.layers) {
      if (l.block != 0) continue;
      params += l.params;
      for (const Gemm& gemm : l.gemms) {
        matmul += 2 * gemm.m * gemm.n * gemm.k * gemm.count;
        if (l.kind == LayerKind::kLightning) lightning += 2 * gemm.m * gemm.n * gemm.k * gemm.count;
      }
      if (l.kind == LayerKind::kLightning) extra += l.non_matmul_flops;
    }
    CHECK(params == 251'666'432ULL + 5'436'014'592ULL + 2 * 6144);
    const uint64_t core = seq == 8 ? 4'456'448ULL : 12'582'912ULL;
    CHECK(lightning == core * seq);
    CHECK(matmul == (301'989'888ULL + 201'326'592ULL + 393'216ULL + 679'477'248ULL + core) * seq);
    if (seq == 8) CHECK(extra == 25'088ULL * seq);
  }
}

TEST_CASE("hybrids: MiniMax keeps KV on its softmax layers and a constant state on lightning") {
  // KV per token: 10 softmax layers · 2 (K, V) · 8 heads · 128 · 2 bytes = 40,960. MiniMaxCache's
  // linear_cache per lightning layer and sequence: Kᵀ·V [64, 128, 128], 1,048,576 elements; 70
  // layers at bf16: 146,800,640 bytes, whatever the context.
  const ModelSpec spec = LoadModelFile(Hf("minimax-m1-40k.json"));
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(KvBytesPerToken(m, DType::kBf16) == 40'960);
  CHECK(SsmStateBytes(m, 1, s, 0) == 146'800'640);
  CHECK(InferKey("minimax-m1-40k.json", "4096", "memory.infer.ssm_state") == "293601280\n");
  CHECK(InferKey("minimax-m1-40k.json", "131072", "memory.infer.ssm_state") == "293601280\n");
}

TEST_CASE("hybrids: MiniMax's layer kinds and what is refused") {
  // attn_type_list and layer_types name the same layers; without either, transformers'
  // MiniMaxConfig puts full attention on the even layers (40 lightning, 40 softmax).
  const ModelSpec hf = LoadModelFile(Hf("minimax-text-01-hf.json"));
  CHECK(hf.transformer.layer_specs == LoadModelFile(Hf("minimax-m1-40k.json")).transformer.layer_specs);
  std::string both;
  for (int i = 0; i < 80; ++i)
    both += std::string(i == 0 ? "" : ", ") + (i % 2 == 0 ? "\"full_attention\"" : "\"linear_attention\"");
  const ModelSpec alternate =
      EditedHf("minimax-text-01-hf.json", "\"layer_types\"", "\"layer_types\": [" + both + "], \"no_layer_types\"");
  const ModelSpec fallback = EditedHf("minimax-text-01-hf.json", "\"layer_types\"", "\"no_layer_types\"");
  CHECK(CountParams(GraphOf(fallback, 16)).total == CountParams(GraphOf(alternate, 16)).total);
  CHECK(CountParams(GraphOf(fallback, 16)).total == 456'089'655'296ULL - 30ULL * (251'666'432ULL - 113'246'208ULL));
  CHECK_THROWS_WITH_AS(EditedHf("minimax-m1-40k.json", "\"attn_type_list\"", "\"no_attn_type_list\""),
                       doctest::Contains("needs its layers' kinds: 'attn_type_list'"), InputError);
  CHECK_THROWS_WITH_AS(
      EditedHf("minimax-m1-40k.json", "\"shared_intermediate_size\": 0", "\"shared_intermediate_size\": 512"),
      doctest::Contains("shared expert (shared_intermediate_size) is not read"), InputError);
}

TEST_CASE("hybrids: every command through the consistency checks") {
  for (const char* file : {"falcon-mamba-7b.json", "recurrentgemma-2b.json", "qwen3-next-80b-a3b-instruct.json",
                           "granite-4.0-h-tiny.json", "nemotron-nano-9b-v2.json", "lfm2-1.2b.json",
                           "falcon-h1-0.5b.json", "kimi-linear-48b-a3b-instruct.json", "minimax-m1-40k.json"}) {
    CAPTURE(file);
    const bool trains = std::string(file).rfind("recurrentgemma", 0) != 0;  // RG-LRU: inference only
    CHECK(testing::RunTally({"estimate", Hf(file), "--mode", "infer", "--seq", "256", "--batch", "2"}).code == 0);
    CHECK(testing::RunTally({"estimate", Hf(file), "--mode", "infer", "--seq", "256", "--layers"}).code == 0);
    CHECK(testing::RunTally({"flops", Hf(file), "--seq", "256"}).code == 0);
    CHECK(testing::RunTally({"time", Hf(file), "--hardware", "h100-sxm", "--mode", "infer", "--seq", "512"}).code == 0);
    CHECK(testing::RunTally({"memory", Hf(file), "--mode", "infer", "--seq", "256", "--pp", "2", "--gpus", "2"}).code ==
          0);
    if (!trains) continue;
    CHECK(testing::RunTally({"estimate", Hf(file), "--seq", "256", "--batch", "2"}).code == 0);
    CHECK(testing::RunTally({"memory", Hf(file), "--seq", "256", "--pp", "2", "--gpus", "2"}).code == 0);
  }
}

}  // namespace
}  // namespace tally
