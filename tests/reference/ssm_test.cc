// Issue 16's state-space models (Mamba, Mamba-2) from real config.json files (tests/data/hf/,
// provenance in SOURCES.md): parameter counts against published or hand-derived totals, one Mamba
// block against a hand derivation, and the SSM state inference keeps instead of a KV cache.
#include <doctest/doctest.h>

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

TEST_CASE("ssm: mamba-130m against its published count") {
  // state-spaces/mamba-130m-hf, MambaForCausalLM with lm_head tied to the embedding:
  // sum(p.numel() for p in model.parameters()) == 129135360 (index id 71178565889), and the model
  // size table "mamba-130m-hf"="129135360" (index id 49071488734). By hand (h 768, d_inner 1536,
  // N 16, r 48, k 4, V 50280, 24 layers): per layer 3,771,648 (below), 24 · 3,771,648
  // + 50280 · 768 + 768 = 129,135,360.
  const ModelSpec spec = LoadModelFile(Hf("mamba-130m-hf.json"));
  const ParamCounts p = CountParams(GraphOf(spec, 16));
  CHECK(p.total == 129'135'360);
  CHECK(p.embedding == 38'615'040);  // 50280 · 768, the head tied to it
}

TEST_CASE("ssm: the larger Mamba sizes from the same layout") {
  // The same model-size table (index id 49071488734) gives "mamba-370m-hf"="371516416" and
  // "mamba-1_4b-hf"="1372178432". Their configs differ from 130m's in hidden_size, the layer count
  // and time_step_rank (⌈h/16⌉) among the keys tally reads, so the 130m file is edited to them.
  // 370m, h 1024, 48 layers, r 64: 48 · 6,667,264 + 50280 · 1024 + 1024 = 371,516,416.
  // 1.4b, h 2048, 48 layers, r 128: 48 · 26,441,728 + 50280 · 2048 + 2048 = 1,372,178,432.
  for (const auto& [h, expected] : {std::pair<const char*, uint64_t>{"1024", 371'516'416}, {"2048", 1'372'178'432}}) {
    const std::string hidden = h;  // clang refuses CAPTURE of a structured binding
    CAPTURE(hidden);
    std::string text = ReadFileText(Hf("mamba-130m-hf.json"));
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"\"hidden_size\": 768", "\"hidden_size\": " + std::string(h)},
          {"\"num_hidden_layers\": 24", "\"num_hidden_layers\": 48"},
          {"\"time_step_rank\": 48", "\"time_step_rank\": \"auto\""}}) {
      const size_t at = text.find(from);
      REQUIRE(at != std::string::npos);
      text.replace(at, from.size(), to);
    }
    CHECK(CountParams(GraphOf(LoadModelText("mamba.json", text), 16)).total == expected);
  }
}

TEST_CASE("ssm: one Mamba block against a hand derivation") {
  // modeling_mamba.py, MambaBlock of mamba-130m (h = 768, d_inner = 2·768 = 1536, N = 16, r = 48,
  // conv_kernel 4, use_bias false, use_conv_bias true). Parameters:
  //   norm 768; in_proj 768·3072 = 2,359,296; conv1d 1536·4 + 1536 = 7,680;
  //   x_proj 1536·(48 + 32) = 122,880; dt_proj 48·1536 + 1536 = 75,264; A_log 1536·16 = 24,576;
  //   D 1536; out_proj 1536·768 = 1,179,648: 3,771,648.
  // Matmul FLOPs per token, 2·in·out per linear and 2·k per channel for the depthwise conv:
  //   2·(2,359,296 + 1536·4 + 122,880 + 48·1536 + 1,179,648) = 2·3,741,696 = 7,483,392.
  // Non-matmul FLOPs per token: RMSNorm 4·768 = 3,072; conv bias 1,536; SiLU 1,536; dt_proj bias
  //   1,536; scan 9·1536·16 = 221,184 (state-spaces/mamba#110) + softplus and D·x 2·1536 = 3,072;
  //   gate y·SiLU(z) 2·1536 = 3,072; residual 768: 235,776.
  const uint64_t seq = 8;
  const LayerGraph g = GraphOf(LoadModelFile(Hf("mamba-130m-hf.json")), seq);
  uint64_t params = 0, matmul = 0, non_matmul = 0;
  for (const Layer& l : g.layers) {
    if (l.block != 0) continue;
    params += l.params;
    for (const Gemm& gemm : l.gemms) matmul += 2 * gemm.m * gemm.n * gemm.k * gemm.count;
    non_matmul += l.non_matmul_flops;
  }
  CHECK(params == 3'771'648);
  CHECK(matmul == 7'483'392 * seq);
  CHECK(non_matmul == 235'776 * seq);
  // With use_bias: in_proj gains 3072 and out_proj 768.
  const ModelSpec biased = EditedHf("mamba-130m-hf.json", "\"use_bias\": false", "\"use_bias\": true");
  CHECK(CountParams(GraphOf(biased, seq)).total == 129'135'360 + 24 * (3072 + 768));
  // time_step_rank "auto" is ceil(768 / 16) = 48, the value the config spells out.
  const ModelSpec automatic = EditedHf("mamba-130m-hf.json", "\"time_step_rank\": 48", "\"time_step_rank\": \"auto\"");
  CHECK(CountParams(GraphOf(automatic, seq)).total == 129'135'360);
}

TEST_CASE("ssm: the whole model's FLOPs") {
  // Per token: 24 blocks · 7,483,392 + the tied head 2·768·50280 = 77,230,080: 256,831,488; no
  // attention, so the same at any length. Backward: dX and dW of every GEMM, twice the forward.
  const ModelSpec spec = LoadModelFile(Hf("mamba-130m-hf.json"));
  Settings s;
  s.seq = 2048;
  const auto summary = SummaryOf(spec, s);
  CHECK(summary->flops.forward == 256'831'488ULL * 2048);
  CHECK(summary->flops.backward == 2 * summary->flops.forward);
}

TEST_CASE("ssm: inference keeps a constant state, no KV cache") {
  // MambaCache per layer and sequence: conv_states [1536, 4] and ssm_states [1536, 16]:
  // 6,144 + 24,576 = 30,720 elements; 24 layers at bf16: 24 · 30,720 · 2 = 1,474,560 bytes.
  const ModelSpec spec = LoadModelFile(Hf("mamba-130m-hf.json"));
  Settings s;
  s.seq = 4096;
  const MemoryModel m = testing::MemoryOf(spec, s);
  CHECK(m.kv.empty());
  CHECK(KvBytesPerToken(m, DType::kBf16) == 0);
  s.batch = 3;
  CHECK(SsmStateBytes(m, 3, s, 0) == 3 * 1'474'560);
  const auto r = testing::RunTally({"memory", Hf("mamba-130m-hf.json"), "--mode", "infer", "--batch", "3", "--seq",
                                    "4096", "--get", "memory.infer.ssm_state"});
  CHECK(r.out == "4423680\n");
  // The same whatever the context.
  const auto longer = testing::RunTally({"memory", Hf("mamba-130m-hf.json"), "--mode", "infer", "--batch", "3", "--seq",
                                         "65536", "--get", "memory.infer.ssm_state"});
  CHECK(longer.out == "4423680\n");
  const auto kv = testing::RunTally({"memory", Hf("mamba-130m-hf.json"), "--get", "memory.infer.kv_cache"});
  CHECK(kv.out == "0\n");
  // --kv-dtype changes nothing, and says so.
  const auto fp8 = testing::RunTally({"memory", Hf("mamba-130m-hf.json"), "--mode", "infer", "--batch", "3", "--seq",
                                      "4096", "--kv-dtype", "fp8", "--get", "memory.infer.ssm_state"});
  CHECK(fp8.out == "4423680\n");
  CHECK(fp8.err.find("--kv-dtype: 'mamba-130m-hf' has no KV cache") != std::string::npos);
}

TEST_CASE("ssm: training activations of one block") {
  // Per token at bf16 (fp32: 4 bytes): the RMSNorm's fp32 input (768·4; PyTorch 2's mean keeps no
  // x², graph/node_costs.h), fp32 rstd (4), normed x (768·2); in_proj's input (768·2); MambaInnerFn's
  // xz (3072·2), x_dbl (80·2), B and C copies (2·16·2) and the scan output (1536·2): 15,588 bytes.
  // Per sequence the scan's fp32 chunk states 1536·⌈2048/2048⌉·2·16·4 = 196,608. At 2048 tokens:
  // 15,588·2048 + 196,608.
  const auto r = testing::RunTally(
      {"memory", Hf("mamba-130m-hf.json"), "--seq", "2048", "--mode", "train", "--get", "activations.per_layer"});
  CHECK(r.out == "32120832\n");
}

TEST_CASE("ssm: Mamba-2 (Mamba-Codestral-7B)") {
  // mistralai/Mamba-Codestral-7B-v0.1, derived by hand from modeling_mamba2.py (no published exact
  // count was found): h 4096, d_inner 8192, N 128, G 8, H 128, k 4, V 32768, 64 layers, untied.
  //   in_proj 4096·(2·8192 + 2·8·128 + 128) = 4096·18,560 = 76,021,760; conv over 8192 + 2048 =
  //   10,240 channels: 10,240·4 + 10,240 = 51,200; dt_bias, A_log, D 3·128 = 384; gated norm 8,192;
  //   out_proj 8192·4096 = 33,554,432; block norm 4,096: 109,640,064 per layer.
  //   64 · 109,640,064 + 2 · 32768·4096 + 4096 = 7,285,403,648.
  const ModelSpec spec = LoadModelFile(Hf("mamba-codestral-7b.json"));
  CHECK(CountParams(GraphOf(spec, 16)).total == 7'285'403'648);
  // Mamba2Cache per layer: conv_states [10,240, 4] and ssm_states [128, 64, 128]:
  // 40,960 + 1,048,576 = 1,089,536 elements; 64 layers at bf16: 139,460,608 bytes.
  Settings s;
  s.seq = 16;
  CHECK(SsmStateBytes(testing::MemoryOf(spec, s), 1, s, 0) == 139'460'608);
}

TEST_CASE("ssm: what is refused") {
  const auto tp = testing::RunTally({"estimate", Hf("mamba-130m-hf.json"), "--tp", "2"});
  CHECK(tp.code == 2);
  CHECK(tp.err.find("--tp: tensor parallelism is not modelled for the state-space (Mamba) mixers") !=
        std::string::npos);
  // Mamba-2's heads must make up the inner width.
  CHECK_THROWS_WITH_AS(EditedHf("mamba-codestral-7b.json", "\"num_heads\": 128", "\"num_heads\": 100"),
                       "mamba-codestral-7b.json:20:16: error: num_heads · head_dim (100 · 64) is not expand · "
                       "hidden_size (8192)",
                       InputError);
}

TEST_CASE("ssm: every command through the consistency checks") {
  for (const char* file : {"mamba-130m-hf.json", "mamba-codestral-7b.json"}) {
    CAPTURE(file);
    CHECK(testing::RunTally({"estimate", Hf(file), "--seq", "256", "--batch", "2"}).code == 0);
    CHECK(testing::RunTally({"estimate", Hf(file), "--seq", "256", "--layers"}).code == 0);
    CHECK(testing::RunTally({"time", Hf(file), "--hardware", "h100-sxm", "--mode", "infer", "--seq", "512"}).code == 0);
    CHECK(testing::RunTally({"memory", Hf(file), "--seq", "256", "--pp", "2", "--gpus", "2"}).code == 0);
  }
}

}  // namespace
}  // namespace tally
