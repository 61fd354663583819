// Issue 30's multimodal families from config.json files in tests/data/hf/ (provenance in
// SOURCES.md): each tower and projector counted by hand from transformers' modeling files and the
// whole model held against its published checkpoint total; the language models are the text
// families' own readers (families_test.cc).
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;
using testing::SummaryOf;

std::string Hf(const std::string& file) { return std::string(TALLY_TEST_DATA) + "/hf/" + file; }

struct VisionRow {
  const char* file;
  uint64_t tower;      // component vision
  uint64_t projector;  // component projector
  uint64_t total;      // the published checkpoint total
  uint64_t tokens;     // image tokens per image
  const char* source;  // of `total`
};

// Each tower and projector by hand (EXPECTED.md, "Issue 30: multimodal families"):
//  - Qwen2-VL-7B (modeling_qwen2_vl.py): Conv3d 1280·3·2·14·14 without a bias = 1,505,280; 32
//    blocks of LayerNorms 2·2·1280, qkv 1280·3840 + 3840, proj 1280² + 1280, fc1 1280·5120 + 5120,
//    fc2 5120·1280 + 1280 = 19,677,440; PatchMerger ln_q 2·1280, fc1 5120² + 5120, fc2 5120·3584
//    + 3584 = 44,575,744. Language model: Qwen2-7B at V 152,064, untied, 7,615,616,512.
//  - Qwen2.5-VL-7B (modeling_qwen2_5_vl.py): the same Conv3d; 32 blocks of RMSNorms 2·1280, qkv and
//    proj as above, gate and up 2·(1280·3420 + 3420), down 3420·1280 + 1280 = 19,702,200; merger
//    with an RMSNorm ln_q, 1280 + 26,219,520 + 18,353,664 = 44,574,464; the same language model.
//  - Qwen3-VL-4B (modeling_qwen3_vl.py): Conv3d 1024·3·2·16·16 + 1024 = 1,573,888, pos_embed
//    2304·1024 = 2,359,296, 24 blocks of 12,596,224 (SigLIP-shaped); merger LayerNorm 2·1024, fc1
//    4096² + 4096, fc2 4096·2560 + 2560 = 27,271,680; 3 deepstack mergers, their LayerNorm over
//    4096: 27,277,824 each. Language model: Qwen3-4B, tied, 4,022,468,096.
//  - Mistral Small 3.1 24B (modeling_pixtral.py, modeling_mistral3.py): patch_conv 1024·3·14·14 =
//    602,112, ln_pre 1,024, 24 layers of 2 RMSNorms 2,048, q/k/v/o 4·1024², gate/up/down
//    3·1024·4096 = 16,779,264; projector: RMSNorm 1,024, merging_layer 4096·1024, linear_1
//    1024·5120, linear_2 5120² (no biases) = 35,652,608. Language model 23,572,403,200.
//  - SmolVLM-256M (modeling_idefics3.py): SigLIP-B/16 at 512 px: patch conv 768·768 + 768, 1,024
//    positions 786,432, 12 layers of 7,087,872, post_layernorm 1,536 = 86,433,024; connector
//    12288·576 = 7,077,888 (scale_factor 4). Language model (SmolLM2-135M, untied, V 49,280):
//    162,974,016.
//  - InternVL2.5-1B (modeling_internvl.py): InternViT-300M: patch conv 1024·588 + 1024, cls_token
//    1,024, 1,025 positions, 24 layers of LayerNorms 4·1024, q/k/v 3·(1024² + 1024), projection
//    1024² + 1024, fc1 and fc2 8,393,728, lambda_1 and lambda_2 2·1024 = 12,598,272, no final norm
//    (mean pooling) = 304,012,288; projector LayerNorm 2·4096, linear_1 4096·896 + 896, linear_2
//    896² + 896 = 4,482,816. Language model: Qwen2.5-0.5B at V 151,674, untied, 629,697,920.
//  - Llama 3.2 11B Vision (modeling_mllama.py): patch conv 1280·588 = 752,640 (no bias),
//    class_embedding 1,280, gated_positional_embedding: 1601·1280 + gate 1 + tile_embedding
//    9·(4·1601·1280) = 73,774,080; pre- and post-tile embeddings 9·(4·1280) + 1 each; layernorm_pre
//    and _post 2·2560; 32 layers of 4·1280² (no biases) + fc1 1280·5120 + 5120 + fc2 5120·1280 + 1280
//    + 2 LayerNorms = 19,672,320; 8 global layers of 19,672,320 + 2 gates = 863,567,379;
//    multi_modal_projector 7680·4096 + 4096 = 31,461,376. Language model: embed_tokens 128,264·4096,
//    32 self-attention layers of 218,112,000, 8 cross-attention layers of 218,112,258 (q 4096², k and
//    v 4096·1024, o 4096², q_norm and k_norm 128 each, two norms, the MLP, two gates), norm, lm_head
//    128,256·4096: 9,775,192,080.
const VisionRow kRows[] = {
    {"qwen2-vl-7b-instruct.json", 1'505'280 + 32ULL * 19'677'440, 44'575'744, 8'291'375'616, 256,
     "HfApi.get_safetensors_metadata of Qwen/Qwen2-VL-7B-Instruct (index id 12439498600)"},
    {"qwen2.5-vl-7b-instruct.json", 1'505'280 + 32ULL * 19'702'200, 44'574'464, 8'292'166'656, 256,
     "sum(p.numel()) of Qwen2.5-VL-7B-Instruct, 676,550,144 in model.visual (index ids 49095663873, 66958499806)"},
    {"qwen3-vl-4b-instruct.json", 1'573'888 + 2'359'296 + 24ULL * 12'596'224, 27'271'680 + 3ULL * 27'277'824,
     4'437'815'808, 256, "sum(p.numel()) of Qwen3-VL-4B-Instruct (index ids 59607822170, 68697662568)"},
    {"mistral-small-3.1-24b.json", 602'112 + 1'024 + 24ULL * 16'779'264, 35'652'608, 24'011'361'280, 3025,
     "keras-hub mistral_small_3.1_24b presets 'params' (index id 61107991196); kvfit table (70911651117)"},
    {"smolvlm-256m-instruct.json", 86'433'024, 7'077'888, 256'484'928, 64,
     "sum(p.numel()) of SmolVLM-256M-Instruct and SmolDocling-256M (index ids 70234653613, 58494106586)"},
    {"internvl2.5-1b-hf.json", 304'012'288, 4'482'816, 938'193'024, 256,
     "HfApi.get_safetensors_metadata of OpenGVLab/InternVL2_5-1B (index id 12439498600)"},
    {"llama-3.2-11b-vision-instruct.json", 863'567'379, 31'461'376, 10'670'220'835, 1,
     "HfApi.get_safetensors_metadata of meta-llama/Llama-3.2-11B-Vision-Instruct (index id 12439498600)"},
};

TEST_CASE("vision families: towers, projectors and published totals") {
  for (const VisionRow& row : kRows) {
    CAPTURE(row.file);
    CAPTURE(row.source);
    const ModelSpec spec = LoadModelFile(Hf(row.file));
    REQUIRE(spec.transformer.vision.has_value());
    CHECK(spec.notes.empty());
    CHECK(spec.transformer.vision->tokens_per_image == row.tokens);
    Settings s;
    s.seq = 4096;
    const ParamCounts p = CountParams(ResolvedGraph(spec, s));
    CHECK(p.by_component.at(Component::kVision) == row.tower);
    CHECK(p.by_component.at(Component::kProjector) == row.projector);
    CHECK(p.total == row.total);
  }
}

TEST_CASE("vision families: Qwen2-VL's and Qwen2.5-VL's FLOPs per image by hand") {
  Settings s;
  s.seq = 1024;
  // One image of 32 x 32 patches (1,024 tokens), d 1280, 16 heads of 80, f 5120:
  //   Conv3d 2·1024·1280·1176 = 3,082,813,440;
  //   each block: qkv 2·1024·1280·3840 + QK^T and AV 2·2·1024²·80·16 + proj 2·1024·1280² + fc1 and
  //   fc2 2·2·1024·1280·5120 = 45,634,027,520; x 32;
  //   merger over 256 rows: 2·256·5120² + 2·256·5120·3584 = 22,817,013,760.
  const auto qwen2 = SummaryOf(LoadModelFile(Hf("qwen2-vl-7b-instruct.json")), s);
  CHECK(qwen2->flops.forward_by_component.at(Component::kVision) == 3'082'813'440ULL + 32ULL * 45'634'027'520ULL);
  CHECK(qwen2->flops.forward_by_component.at(Component::kProjector) == 22'817'013'760ULL);
  // Qwen2.5-VL: gated MLP 3·2·1024·1280·3420 = 26,895,974,400; the 4 global layers' QK^T and AV as
  // above, the 28 windowed ones over 8 x 8 = 64 keys: 2·2·1024·64·80·16 = 335,544,320.
  const auto qwen25 = SummaryOf(LoadModelFile(Hf("qwen2.5-vl-7b-instruct.json")), s);
  const uint64_t linears = 10'066'329'600ULL + 3'355'443'200ULL + 26'895'974'400ULL;
  CHECK(qwen25->flops.forward_by_component.at(Component::kVision) ==
        3'082'813'440ULL + 32 * linears + 4 * 5'368'709'120ULL + 28 * 335'544'320ULL);
}

TEST_CASE("vision families: Mllama's gated cross-attention layers and their image cache") {
  const ModelSpec spec = LoadModelFile(Hf("llama-3.2-11b-vision-instruct.json"));
  const TransformerSpec& t = spec.transformer;
  REQUIRE(t.layer_specs.size() == 40);
  CHECK(t.layer_specs[3].gated_cross);
  CHECK_FALSE(t.layer_specs[4].gated_cross);
  CHECK(t.extra_embedding_rows == 8);
  // The KV cache at 8,192 text tokens, bf16: 32 self-attention layers of 2·8·128·2 = 4,096 bytes
  // per token, 32·8192·4096 = 1,073,741,824; and 8 cross-attention layers holding K and V of the
  // image's 4 tiles of 1,601 tokens, whatever the context: 8·6404·4096 = 209,846,272.
  const std::string file = Hf("llama-3.2-11b-vision-instruct.json");
  CHECK(testing::RunTally({"memory", file, "--mode", "infer", "--seq", "8192", "--get", "memory.infer.kv_cache"}).out ==
        "1073741824\n");
  CHECK(testing::RunTally({"memory", file, "--mode", "infer", "--seq", "8192", "--get", "memory.infer.cross_kv_cache"})
            .out == "209846272\n");
}

TEST_CASE("vision families: what is not modelled is refused") {
  std::string qwen = ReadFileText(Hf("qwen2-vl-7b-instruct.json"));
  qwen.replace(qwen.find("\"hidden_size\": 3584,\n    \"patch_size\""), 20, "\"hidden_size\": 3000,");
  CHECK_THROWS_WITH_AS(LoadModelText("q.json", qwen), doctest::Contains("is not the language model's width (3584)"),
                       InputError);
  std::string intern = ReadFileText(Hf("internvl2.5-1b-hf.json"));
  intern.replace(intern.find("\"downsample_ratio\": 0.5"), 23, "\"downsample_ratio\": 0.3");
  CHECK_THROWS_WITH_AS(LoadModelText("i.json", intern), doctest::Contains("downsample_ratio must be 1/k"), InputError);
  std::string mistral = ReadFileText(Hf("mistral-small-3.1-24b.json"));
  mistral.replace(mistral.find("\"vision_feature_layer\": -1"), 26, "\"vision_feature_layer\": -2");
  CHECK_THROWS_WITH_AS(LoadModelText("m.json", mistral), doctest::Contains("vision_feature_layer -1"), InputError);
}

TEST_CASE("vision families: the CLI, with the tower frozen") {
  for (const VisionRow& row : kRows) {
    CAPTURE(row.file);
    CHECK(testing::RunTally({"estimate", Hf(row.file), "--seq", "4096", "--trainable", "vision=false"}).code == 0);
  }
  // Freezing the tower leaves the language model and the projector training.
  const auto trainable = testing::RunTally(
      {"estimate", Hf("qwen2-vl-7b-instruct.json"), "--trainable", "vision=false", "--get", "params.trainable"});
  CHECK(trainable.out == std::to_string(8'291'375'616ULL - 1'505'280 - 32ULL * 19'677'440) + "\n");
}

}  // namespace
}  // namespace tally
