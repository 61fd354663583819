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

TEST_CASE("hybrids: every command through the consistency checks") {
  for (const char* file :
       {"falcon-mamba-7b.json", "recurrentgemma-2b.json", "qwen3-next-80b-a3b-instruct.json", "granite-4.0-h-tiny.json",
        "nemotron-nano-9b-v2.json", "lfm2-1.2b.json", "falcon-h1-0.5b.json"}) {
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
