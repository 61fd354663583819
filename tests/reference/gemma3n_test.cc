// Gemma 3n (issue 30) from its config.json (tests/data/hf/gemma-3n-e2b-it.json and -e4b-it.json,
// provenance in SOURCES.md). Google publishes rounded totals only ("over 5 billion" loaded for E2B,
// 1.91B effective; E4B about 8B raw, 4B effective: ai.google.dev/gemma/docs/gemma-3n#parameters,
// quoted in the HF blog "Gemma 3n fully available in the open-source ecosystem!"), so the counts
// below are derived by hand from the tensors transformers' modeling_gemma3n.py and timm's
// mobilenetv5.py build, module by module, and the FLOPs from their matmuls.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "config/load_config.h"
#include "estimate/kv_cache.h"
#include "estimate/params.h"
#include "estimate/roofline.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::EditedHf;
using testing::GraphOf;
using testing::Hf;

std::string Get(const std::vector<std::string>& args) { return testing::RunTally(args).out; }

// Gemma3nTextModel, E2B (h 2048, L 30, 8 heads and 2 K/V heads of 256, f 8192, V 262,400,
// P 256, V_p 262,144, n 4 AltUp streams, LAuReL rank 64):
//   embed_tokens [262400, 2048]                                   537,395,200
//   embed_tokens_per_layer [262144, 30·256]                     2,013,265,920
//   per_layer_model_projection [7680, 2048] + its norm [256]       15,728,896
//   altup_projections and altup_unembed_projections, 2 · 3 · 2048²  25,165,824
//   norm [2048]                                                         2,048
// per layer (Gemma3nTextDecoderLayer):
//   q, k, v, o: 2048·2048 + 2 · 2048·512 + 2048·2048              10,485,760
//   q_norm, k_norm [256] each (v_norm has no weight)                      512
//   gate, up, down: 3 · 2048·8192                                  50,331,648
//   input, post-attention, pre- and post-feedforward norms 4 · 2048     8,192
//   altup: correct_output_scale 2048, correction_coefs 4·4, prediction_coefs 16·4,
//          modality_router 4·2048, router_norm 2048                    12,368
//   laurel: linear_left 64·2048, linear_right 2048·64, post_laurel_norm 2048  264,192
//   per_layer_input_gate 256·2048, per_layer_projection 2048·256, post norm 2048  1,050,624
//                                                                    = 62,153,296
// text: 537,395,200 + 2,013,265,920 + 15,728,896 + 25,165,824 + 2,048 + 30 · 62,153,296
//     = 4,456,156,768 (lm_head tied).
// Gemma3nAudioEncoder (hidden 1536, 12 conformer blocks, 8 heads, kernel 5):
//   subsample: conv_0 128·1·3·3 + norm 128, conv_1 32·128·3·3 + norm 32, input_proj_linear
//     [1536, 32·32] (128 mel bins → 64 → 32 after two stride-2 convolutions padded by 1 each side)
//                                                                     1,611,040
//   block: two feed-forwards 2 · (2 · 1536·6144 + 2 · 1536) = 37,754,880; attention: pre and
//     post norms 3,072, q, k, v, pos_proj, post 5 · 1536² = 11,796,480, per_dim_scale 192;
//     light conv: linear_start 1536·3072, depthwise 1536·5, linear_end 1536², two norms
//     = 7,088,640; block norm 1,536                                   56,644,800
//   1,611,040 + 12 · 56,644,800 = 681,348,640 (Google: "audio 0.68B")
// Gemma3nMultimodalEmbedder: embed_vision 128·2048 + 2 · 2048 + 2048·2048 = 4,460,544;
//   embed_audio 128·1536 + 2 · 1536 + 1536·2048 = 3,345,408.
// The vision tower, timm's mobilenetv5_300m_enc (MobileNetV5Encoder: timm/models/mobilenetv5.py and
// _efficientnet_blocks.py; no classifier). Convolutions have no bias but the stem's; every norm is an
// RmsNorm2d (a weight of C); UIR and MQA blocks end in a LayerScale2d (C), edge residuals do not.
// A UIR of in -> out with expansion e (mid = in·e): an optional depthwise start (in·a² + in), pw_exp
// (in·mid + mid), an optional depthwise middle (mid·k² + mid), pw_proj (mid·out + out), scale out.
//   stem: conv 3·64·3·3 + bias 64 + norm 64                                        1,856
//   stage 0, three edge residuals (conv_exp 3 x 3 to 4·in, bn1, conv_pwl to 128, bn2):
//     64 -> 256 -> 128: 147,456 + 256 + 32,768 + 128 = 180,608;
//     twice 128 -> 512 -> 128: 589,824 + 512 + 65,536 + 128 = 656,000            1,492,608
//   stage 1 (256): a3 k5 e6 from 128 (mid 768): 1,152 + 128 + 98,304 + 768 + 19,200 + 768 +
//     196,608 + 256 + 256 = 317,440; twice a5 e4 (mid 1024): 6,400 + 256 + 262,144 + 1,024 +
//     262,144 + 256 + 256 = 532,480; twice a3 e4: 528,384                           2,439,168
//   stage 2 (640): a5 k5 e6 from 256 (mid 1536): 6,656 + 394,752 + 39,936 + 983,680 + 640 =
//     1,425,664; seven a5 e4 (mid 2560): 16,640 + 1,640,960 + 1,639,040 + 640 = 3,297,280; one e1:
//     410,240 + 410,240 + 640 = 821,120; fourteen MQA (norm 640, query 640·12·64, key and value
//     each a depthwise 3 x 3 of stride 2 640·9, its norm 640 and a projection 640·64, output
//     768·640, scale 640) = 1,079,040, each followed by a UIR e2 (mid 1280): 820,480 + 819,840 +
//     640 = 1,640,960. 1,425,664 + 7·3,297,280 + 821,120 + 14·2,720,000          63,407,744
//   stage 3 (1280): a5 k5 e6 from 640 (mid 3840): 16,640 + 2,461,440 + 99,840 + 4,916,480 + 1,280
//     = 7,495,680; nineteen MQA (16 heads, key and value of 96, no stride: 1,280 + 1280·1536 +
//     2·1280·96 + 1536·1280 + 1,280 = 4,180,480), each followed by a UIR e2 (mid 2560):
//     3,279,360 + 3,278,080 + 1,280 = 6,558,720. 7,495,680 + 19·10,739,200      211,540,480
//   multi-scale fusion adapter over stages 2 and 3 (640 + 1280 = 1920): UIR e2 to 2048 without
//     depthwise convolutions or scale, 1920·3840 + 3840 + 3840·2048 + 2048, and a norm 2048
//                                                                                 15,245,056
//   = 294,126,912 in 548 tensors (3 + 12 + 37 + 273 + 218 + 5), "300M" by its name.
// E2B: 4,456,156,768 + 681,348,640 + 4,460,544 + 3,345,408 = 5,145,311,360 without the vision
// tower, 5,439,438,272 with it. LM Studio lists the text-only GGUFs as 4.5B (E2B) and 6.9B (E4B),
// the text models' 4,456,156,768 and 6,866,696,688 rounded.
// E4B (L 35, f 16384): per layer 62,153,296 + 3 · 2048 · 8192 = 112,484,944; text 537,395,200 +
// 262,144·35·256 + (2048·8960 + 256) + 25,165,824 + 2,048 + 35 · 112,484,944 = 6,866,696,688;
// with the audio tower and embedders 7,555,851,280, with the vision tower 7,849,978,192.
TEST_CASE("gemma3n: parameters by hand from the tensors, E2B and E4B") {
  const std::string e2b = Hf("gemma-3n-e2b-it.json"), e4b = Hf("gemma-3n-e4b-it.json");
  const ModelSpec spec = LoadModelFile(e2b);
  const LayerGraph graph = GraphOf(spec, 16);
  const ParamCounts p = CountParams(graph);
  CHECK(p.total == 5'145'311'360ULL + 294'126'912);
  CHECK(p.per_layer == 62'153'296);
  CHECK(p.by_component.at(Component::kVision) == 294'126'912);
  const auto tower =
      std::find_if(graph.layers.begin(), graph.layers.end(), [](const Layer& l) { return l.path == "vision_tower"; });
  REQUIRE(tower != graph.layers.end());
  CHECK(tower->param_tensors.size() == 548);
  CHECK(p.by_component.at(Component::kAudio) == 681'348'640);
  CHECK(p.by_component.at(Component::kProjector) == 4'460'544 + 3'345'408);
  CHECK(p.per_layer_embedding == 2'013'265'920ULL);
  for (const std::string& note : spec.notes) CHECK(note.find("vision tower") == std::string::npos);
  // Google's "effective" E2B: 1.91B = the text model less both embedding tables.
  CHECK(p.effective == 4'456'156'768ULL - 537'395'200 - 2'013'265'920);
  CHECK(Get({"params", e4b, "--get", "params.total"}) == "7849978192\n");
  CHECK(Get({"params", e4b, "--get", "params.per_layer_embedding"}) == "2348810240\n");  // 262,144·35·256
  // E4B effective: 6,866,696,688 - 537,395,200 - 2,348,810,240 = 3,980,491,248 ("4B").
  CHECK(Get({"params", e4b, "--get", "params.effective"}) == "3980491248\n");
  // E2B's text_config alone (gemma3n_text, Gemma3nForCausalLM): the text model, no towers.
  const ParamCounts text = CountParams(GraphOf(LoadModelFile(Hf("gemma-3n-e2b-text.json")), 16));
  CHECK(text.total == 4'456'156'768ULL);
  CHECK(text.effective == p.effective);
}

TEST_CASE("gemma3n: gemma3n_text by hand on a small config") {
  // V 10, h 8, L 5, 2 heads and 1 K/V head of 4, f 16, P 2, V_p 6, 2 streams, rank 3: embed 80,
  // per-layer table 6·10 = 60, projection 8·10 + norm 2, altup (un)embed 2 · 64, norm 8; per layer
  // q, k, v, o 64 + 32 + 32 + 64, q/k norms 8, MLP 3·128, 4 norms 32, altup 8 + 4 + 8 + 16 + 8,
  // laurel 48 + 8, per-layer 16 + 16 + 8 = 756. Total 80 + 60 + 82 + 128 + 8 + 5 · 756 = 4,138.
  // Layers 3 (full) and 4 (sliding) read layers 1's and 2's K and V: three layers cache 2·1·4.
  const std::string text = R"({"model_type": "gemma3n_text", "vocab_size": 10, "hidden_size": 8,
    "intermediate_size": 16, "num_hidden_layers": 5, "num_attention_heads": 2, "num_key_value_heads": 1,
    "head_dim": 4, "hidden_size_per_layer_input": 2, "vocab_size_per_layer_input": 6, "altup_num_inputs": 2,
    "laurel_rank": 3, "num_kv_shared_layers": 2, "torch_dtype": "bfloat16", "layer_types": ["sliding_attention",
    "full_attention", "sliding_attention", "full_attention", "sliding_attention"]})";
  const ModelSpec spec = LoadModelText("t.json", text);
  CHECK(CountParams(GraphOf(spec, 4)).total == 4'138);
  CHECK(CountParams(GraphOf(spec, 4)).by_component.count(Component::kAudio) == 0);
  const std::vector<LayerSpec>& layers = spec.transformer.layer_specs;
  REQUIRE(layers.size() == 5);
  CHECK((!layers[2].kv_shared && layers[3].kv_shared && layers[4].kv_shared));
}

TEST_CASE("gemma3n: forward FLOPs of one token by hand") {
  // At one token (rows 1, one key), per block: altup router 2·h·n and again in correct, the
  // prediction coefficients 2·n·n² and the stream mix 2·h·n·n, correction coefficients 2·n·n,
  // LAuReL 2 · 2·h·r, q/k/v 2·h·(a·d + 2·g·d), o 2·h·a·d, QKᵀ and AV 2 · 2·a·d, the MLP 3 · 2·h·f,
  // the per-layer gate and projection 2 · 2·h·P: 124,362,912 (f 8192) and 225,026,208 (f 16384).
  // Outside the blocks: the per-layer projection 2·h·L·P, AltUp's 3 + 3 projections 2 · 3 · 2·h²,
  // the head 2·h·V. E2B: 2·2048·7680 + 50,331,648 + 1,074,790,400 + 30 · 124,362,912.
  CHECK(Get({"flops", Hf("gemma-3n-e2b-it.json"), "--seq", "1", "--get", "flops.forward"}) == "4887466688\n");
  CHECK(Get({"flops", Hf("gemma-3n-e4b-it.json"), "--seq", "1", "--get", "flops.forward"}) == "9037739488\n");
}

TEST_CASE("gemma3n: the KV-shared layers cache nothing") {
  // E2B: layers 20-29 read the K and V of layers 18 (sliding) and 19 (full); 20 layers cache 2 · 2 ·
  // 256 elements per token at bf16: 40,960 bytes. At --seq 4096 and batch 2: 4 full layers of 4,096
  // tokens and 16 sliding of 512, 24,576 layer-tokens · 2,048 bytes · 2 = 100,663,296. Without
  // sharing: 6 full and 24 sliding, 36,864 · 2,048 · 2 = 150,994,944. E4B: layers 20-34 share,
  // the same 20 layers cache.
  const std::string e2b = Hf("gemma-3n-e2b-it.json");
  CHECK(Get({"memory", e2b, "--mode", "infer", "--get", "kv_cache.per_token"}) == "40960\n");
  CHECK(Get({"memory", Hf("gemma-3n-e4b-it.json"), "--mode", "infer", "--get", "kv_cache.per_token"}) == "40960\n");
  CHECK(Get({"memory", e2b, "--mode", "infer", "--batch", "2", "--seq", "4096", "--get", "memory.infer.kv_cache"}) ==
        "100663296\n");
  Settings s;
  s.seq = 1;
  s.kv_dtype = DType::kBf16;
  const ModelSpec shared = LoadModelFile(e2b);
  const ModelSpec unshared =
      EditedHf("gemma-3n-e2b-it.json", "\"num_kv_shared_layers\": 10", "\"num_kv_shared_layers\": 0");
  CHECK(KvCacheBytes(testing::MemoryOf(shared, s), 4096, 2, s, 0) == 100'663'296);
  CHECK(KvCacheBytes(testing::MemoryOf(unshared, s), 4096, 2, s, 0) == 150'994'944);
}

TEST_CASE("gemma3n: a vision tower tally does not derive is left out with a note") {
  // Another timm architecture, or model_args passed to timm.create_model, may build another tower:
  // the total is then the 5,145,311,360 without it. An empty model_args is none.
  const std::string arch = "\"architecture\": \"mobilenetv5_300m_enc\"", args = "\"model_args\": null";
  for (const auto& [from, to] : {std::pair<std::string, std::string>{arch, "\"architecture\": \"mobilenetv5_base\""},
                                 {args, "\"model_args\": {\"channel_multiplier\": 0.5}"}}) {
    const ModelSpec spec = EditedHf("gemma-3n-e2b-it.json", from, to);
    CHECK(CountParams(GraphOf(spec, 16)).total == 5'145'311'360ULL);
    REQUIRE(!spec.notes.empty());
    CHECK(spec.notes.back().find("the vision tower (timm mobilenetv5_") != std::string::npos);
    CHECK(spec.notes.back().find("is not counted") != std::string::npos);
  }
  const ModelSpec empty_args = EditedHf("gemma-3n-e2b-it.json", args, "\"model_args\": {}");
  CHECK(CountParams(GraphOf(empty_args, 16)).total == 5'439'438'272ULL);
}

TEST_CASE("gemma3n: the towers' weights are loaded, and a step does not read them") {
  // Loaded: 2 bytes (bf16) of each of E2B's 5,439,438,272 parameters. Neither tower runs in a
  // text step (tally counts their weights alone): the roofline reads none of their bytes.
  const std::string e2b = Hf("gemma-3n-e2b-it.json");
  CHECK(Get({"memory", e2b, "--mode", "infer", "--get", "memory.infer.weights"}) == "10878876544\n");
  const ModelSpec spec = LoadModelFile(e2b);
  Settings s;
  s.mode = Mode::kInfer;
  s.seq = 1;
  s.context = 128;
  const Roofline r =
      ForwardRoofline(testing::ResolvedGraph(spec, s), spec, s, {.peak = 1e12, .mfu = 1, .bandwidth = 1e12, .mbu = 1});
  int towers = 0;
  for (const NodeRoofline& n : r.nodes) {
    if (n.path != "vision_tower" && n.path != "audio_tower") continue;
    ++towers;
    CHECK(n.bytes == 0);
    CHECK(n.flops == 0);
  }
  CHECK(towers == 2);
}

TEST_CASE("gemma3n: what is not modelled or not valid is refused") {
  CHECK_THROWS_WITH_AS(EditedHf("gemma-3n-e2b-it.json", "\"num_kv_shared_layers\": 10", "\"num_kv_shared_layers\": 30"),
                       doctest::Contains("num_kv_shared_layers (30) must be below num_hidden_layers (30)"), InputError);
  CHECK_THROWS_WITH_AS(EditedHf("gemma-3n-e2b-it.json", "\"altup_active_idx\": 0", "\"altup_active_idx\": 1"),
                       doctest::Contains("altup_active_idx other than 0 is not modelled"), InputError);
  CHECK_THROWS_WITH_AS(
      EditedHf("gemma-3n-e2b-it.json", "\"activation_sparsity_pattern\": [", "\"activation_sparsity_pattern\": [0.5, "),
      doctest::Contains("must list the 30 layers' sparsities"), InputError);
  // Inference is modelled: the whole report, its ledgers and JSON checked by RunTally.
  CHECK(testing::RunTally({"estimate", Hf("gemma-3n-e2b-it.json"), "--mode", "infer", "--seq", "2048", "--hardware",
                           "h100-sxm", "--format", "json"})
            .code == 0);
  const testing::TallyRun train = testing::RunTally({"memory", Hf("gemma-3n-e2b-it.json")});
  CHECK(train.code == 2);
  CHECK(train.err.find("training activations of 'gemma-3n-e2b-it' (Gemma 3n") != std::string::npos);
}

}  // namespace
}  // namespace tally
