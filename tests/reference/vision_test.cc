// Issue 16's vision towers of multimodal configs: Gemma 3's SigLIP tower and projector and Llama 4's
// vision model and projector, from the real gemma-3-27b-it and Llama-4-Scout config.json files
// (tests/data/hf/, provenance in SOURCES.md; derivations in EXPECTED.md). The counts are derived by
// hand from modeling_siglip.py, modeling_gemma3.py and modeling_llama4.py; each whole model's total
// is its published checkpoint total.
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/evaluation.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;
using testing::SummaryOf;

std::string Hf(const std::string& file) { return std::string(TALLY_TEST_DATA) + "/hf/" + file; }

// gemma-3-27b-it with its vision_config replaced by `vision` (JSON text), or removed when empty, and
// its mm_tokens_per_image entry by `extra`.
ModelSpec WithVision(const std::string& vision, const std::string& extra = "") {
  std::string text = ReadFileText(Hf("gemma-3-27b-it.json"));
  const size_t at = text.find("\"vision_config\"");
  REQUIRE(at != std::string::npos);
  const size_t end = text.find('}', at);
  text.replace(at, end + 1 - at, vision.empty() ? "\"no_vision\": 0" : "\"vision_config\": " + vision);
  if (!extra.empty()) {
    const size_t key = text.find("\"mm_tokens_per_image\"");
    REQUIRE(key != std::string::npos);
    text.replace(key, text.find(',', key) - key, extra);
  }
  return LoadModelText("gemma-3-27b-it.json", text);
}

TEST_CASE("vision: Gemma 3's SigLIP tower and projector against the checkpoint total") {
  const ModelSpec spec = LoadModelFile(Hf("gemma-3-27b-it.json"));
  REQUIRE(spec.transformer.vision.has_value());
  const VisionSpec& v = *spec.transformer.vision;
  CHECK(v.d_model == 1152);
  CHECK(v.n_layers == 27);
  CHECK(v.image_size / v.patch_size == 64);  // 896 / 14
  CHECK(v.tokens_per_image == 256);          // mm_tokens_per_image
  CHECK(spec.notes.empty());                 // nothing left out any more
  Settings s;
  s.seq = 512;
  const ParamCounts p = CountParams(ResolvedGraph(spec, s));
  // SiglipVisionModel (vision_use_head false), h = 1152, f = 4304, 64² = 4,096 patches of 3·14·14:
  //   patch_embedding 1152·588 + 1152 = 678,528; position_embedding 4,096·1152 = 4,718,592;
  //   each of 27 layers: 2 LayerNorms 4·1152 + q/k/v/out 4·(1152² + 1152) + fc1 1152·4304 + 4304
  //   + fc2 4304·1152 + 1152 = 4,608 + 5,313,024 + 4,962,512 + 4,959,360 = 15,239,504;
  //   post_layernorm 2·1152 = 2,304: 678,528 + 4,718,592 + 27·15,239,504 + 2,304 = 416,866,032.
  CHECK(p.by_component.at(Component::kVision) == 416'866'032);
  // Gemma3MultiModalProjector: mm_input_projection_weight 1152·5376 = 6,193,152 and mm_soft_emb_norm
  // 1152: 6,194,304.
  CHECK(p.by_component.at(Component::kProjector) == 6'194'304);
  // The whole model: 27,432,406,640, the safetensors total of google/gemma-3-27b-it (kvfit table)
  // and keras-hub's medgemma_instruct_27b (same architecture); the language model is the
  // 27,009,346,304 of families_test.cc.
  CHECK(p.total == 27'432'406'640);
  CHECK(p.total - 416'866'032 - 6'194'304 == 27'009'346'304);
}

TEST_CASE("vision: the tower runs over one image per sequence") {
  const ModelSpec spec = LoadModelFile(Hf("gemma-3-27b-it.json"));
  const ModelSpec text = WithVision("");  // the same language model without its tower
  CHECK_FALSE(text.transformer.vision.has_value());
  Settings s;
  s.seq = 512;
  const auto with = SummaryOf(spec, s);
  const auto without = SummaryOf(text, s);
  // Per image, 2·m·n·k per GEMM with 4,096 patches, h = 1152, 16 heads of 72, f = 4304:
  //   patch conv 2·4096·1152·588 = 5,549,064,192;
  //   each layer: q/k/v 2·4096·1152·3456 + QK^T and AV 2·2·4096·4096·72·16 + out 2·4096·1152²
  //   + fc1 and fc2 2·2·4096·1152·4304 = 202,031,235,072;
  //   tower 5,549,064,192 + 27·202,031,235,072 = 5,460,392,411,136;
  //   projector 2·256·1152·5376 = 3,170,893,824.
  // One sequence (a summary is per sequence), one image:
  CHECK(with->flops.forward_by_component.at(Component::kVision) == 5'460'392'411'136ULL);
  CHECK(with->flops.forward_by_component.at(Component::kProjector) == 3'170'893'824ULL);
  CHECK(with->flops.forward - without->flops.forward == 5'463'563'304'960ULL);
  // Backward: the patch conv's weight gradient only (the pixels need none), 2x forward elsewhere:
  // 5,549,064,192 + 2·27·202,031,235,072 + 2·3,170,893,824 = 10,921,577,545,728 per image.
  CHECK(with->flops.backward - without->flops.backward == 10'921'577'545'728ULL);
  // Two sequences, two images (the flops command scales the summary by the batch).
  const auto two = testing::RunTally(
      {"flops", Hf("gemma-3-27b-it.json"), "--seq", "512", "--batch", "2", "--get", "flops.components.vision"});
  CHECK(two.out == "10920784822272\n");
  // The language model is the same: its 512 tokens hold the image's 256.
  CHECK(with->params.total - without->params.total == 416'866'032 + 6'194'304);
}

TEST_CASE("vision: Llama 4's vision model and projector against the checkpoint total") {
  const ModelSpec spec = LoadModelFile(Hf("llama-4-scout-17b-16e.json"));
  REQUIRE(spec.transformer.vision.has_value());
  CHECK(spec.notes.empty());
  CHECK(spec.transformer.vision->tokens_per_image == 144);  // (336 / 14)² · 0.5²
  Settings s;
  s.seq = 512;
  const auto summary = SummaryOf(spec, s);
  const ParamCounts& p = summary->params;
  // Llama4VisionModel (EXPECTED.md): patch linear 588·1408 = 827,904, class_embedding 1,408,
  // positional_embedding_vlm 577·1408 = 812,416, layernorm_pre/post 5,632, 34 layers of 23,807,872
  // = 809,467,648, vision_adapter fc1 5632·4096 = 23,068,672 and fc2 4096·4096 = 16,777,216:
  // 850,960,896. Llama4MultiModalProjector: 4096·5120 = 20,971,520.
  CHECK(p.by_component.at(Component::kVision) == 850'960'896);
  CHECK(p.by_component.at(Component::kProjector) == 20'971'520);
  // 107,769,861,120 (language model, families_test.cc) + 871,932,416 = 108,641,793,536, the HF
  // safetensors total of Llama-4-Scout-17B-16E (kvfit table).
  CHECK(p.total == 108'641'793'536);
  // Per 336 x 336 tile, 576 patches and a class token (577 tokens), h = 1408, 16 heads of 88,
  // f = 5632: patch linear 2·576·1408·588 = 953,745,408; each layer q/k/v 2·577·1408·4224 + QK^T
  // and AV 2·2·577²·88·16 + out 2·577·1408² + fc1 and fc2 2·2·577·1408·5632 = 29,328,217,600;
  // adapter over 144 tokens 2·144·5632·4096 + 2·144·4096² = 11,475,615,744:
  // 953,745,408 + 34·29,328,217,600 + 11,475,615,744 = 1,009,588,759,552; projector
  // 2·144·4096·5120 = 6,039,797,760.
  CHECK(summary->flops.forward_by_component.at(Component::kVision) == 1'009'588'759'552ULL);
  CHECK(summary->flops.forward_by_component.at(Component::kProjector) == 6'039'797'760ULL);
}

TEST_CASE("vision: LLaVA-1.5's CLIP tower and projector against the checkpoint total") {
  const ModelSpec spec = LoadModelFile(Hf("llava-1.5-7b-hf.json"));
  REQUIRE(spec.transformer.vision.has_value());
  CHECK(spec.notes.empty());
  CHECK(spec.transformer.vision->tokens_per_image == 576);  // (336 / 14)², the class token dropped
  CHECK(spec.transformer.vision->live_layers == 23);        // vision_feature_layer -2
  Settings s;
  s.seq = 1024;
  const auto summary = SummaryOf(spec, s);
  const ParamCounts& p = summary->params;
  // CLIPVisionModel (ViT-L/14 at 336), h = 1024, f = 4096: class_embedding 1,024, patch conv
  // 1024·588 = 602,112 (no bias), positions 577·1024 = 590,848, pre_layrnorm and post_layernorm
  // 2·2,048, 24 layers of 4·1024 + 4·(1024² + 1024) + 1024·4096 + 4096 + 4096·1024 + 1024 =
  // 12,596,224: 303,507,456. LlavaMultiModalProjector: 1024·4096 + 4096 + 4096² + 4096 = 20,979,712.
  CHECK(p.by_component.at(Component::kVision) == 303'507'456);
  CHECK(p.by_component.at(Component::kProjector) == 20'979'712);
  // The language model is Llama 2 7B (LlamaConfig's defaults) with V = 32,064: 6,738,415,616 +
  // 2·64·4096 = 6,738,939,904. The whole model, 7,063,427,072, is sum(p.numel()) of
  // LlavaForConditionalGeneration for llava-hf/llava-1.5-7b-hf (index ids 4065502446, 53760140093).
  CHECK(p.total == 7'063'427'072);
  CHECK(p.total - 303'507'456 - 20'979'712 == 6'738'939'904);
  // Per image, 576 patches and the class token (577 tokens), 16 heads of 64: patch conv
  // 2·576·1024·588 = 693,633,024; each layer q/k/v 2·577·1024·3072 + QK^T and AV 2·2·577²·64·16 +
  // out 2·577·1024² + fc1 and fc2 2·2·577·1024·4096 = 15,884,357,632; all 24 layers run:
  // 693,633,024 + 24·15,884,357,632 = 381,918,216,192. Projector 2·576·1024·4096 + 2·576·4096² =
  // 24,159,191,040.
  CHECK(summary->flops.forward_by_component.at(Component::kVision) == 381'918'216'192ULL);
  CHECK(summary->flops.forward_by_component.at(Component::kProjector) == 24'159'191'040ULL);
  // Backward: the last layer's output is not the features (-2): it gets no gradient. The patch conv's
  // dW 693,633,024 + 2·23·15,884,357,632 + 2·24,159,191,040 = 779,692,466,176.
  std::string text = ReadFileText(Hf("llava-1.5-7b-hf.json"));
  const size_t at = text.find("\"vision_config\"");
  text.replace(at, text.find('}', at) + 1 - at, "\"no_vision\": 0");
  const auto without = SummaryOf(LoadModelText("llava.json", text), s);
  CHECK(summary->flops.backward - without->flops.backward == 779'692'466'176ULL);
  CHECK(summary->params.total - without->params.total == 303'507'456 + 20'979'712);
  // A list of feature layers (LLaVA-OneVision style) is refused.
  std::string listed = ReadFileText(Hf("llava-1.5-7b-hf.json"));
  listed.replace(listed.find("\"vision_feature_layer\": -2"), 26, "\"vision_feature_layer\": [-2, -5]");
  CHECK_THROWS_WITH_AS(LoadModelText("llava.json", listed), doctest::Contains("vision_feature_layer must be one layer"),
                       InputError);
}

TEST_CASE("vision: the CLI") {
  const std::string file = Hf("gemma-3-27b-it.json");
  const auto images = testing::RunTally({"flops", file, "--seq", "1024", "--get", "settings.images"});
  CHECK(images.out == "1\n");
  CHECK(images.err.empty());
  CHECK(testing::RunTally({"estimate", file, "--seq", "1024", "--batch", "2", "--tp", "2"}).code == 0);
  CHECK(testing::RunTally({"estimate", file, "--seq", "1024", "--attention", "eager", "--trainable", "vision=false"})
            .code == 0);
  // Inference: the prefill encodes the image; a decode step reads no tower.
  CHECK(testing::RunTally({"time", file, "--hardware", "h100-sxm", "--mode", "infer"}).code == 0);
  // 100 tokens cannot hold the image's 256: the tower is still counted, with a warning.
  const auto short_seq = testing::RunTally({"flops", file, "--seq", "100", "--get", "flops.components.vision"});
  CHECK(short_seq.out == "5460392411136\n");
  CHECK(short_seq.err ==
        "tally: warning: sequence length 100 cannot hold the 256 image tokens of its image(s); the vision tower is "
        "still counted over them\n");
}

TEST_CASE("vision: what is not modelled is refused") {
  // SiglipVisionTransformer builds its attention-pooling head unless vision_use_head is false.
  CHECK_THROWS_WITH_AS(WithVision(R"({"model_type": "siglip_vision_model", "vision_use_head": true})"),
                       doctest::Contains("SigLIP's attention-pooling head is not modelled"), InputError);
  CHECK_THROWS_WITH_AS(WithVision(R"({"model_type": "clip_vision_model", "vision_use_head": false})"),
                       doctest::Contains("unsupported vision model_type 'clip_vision_model'"), InputError);
  // 250 tokens are no square grid; 9 (3 x 3) does not tile 64 patches per side.
  CHECK_THROWS_WITH_AS(
      WithVision(R"({"vision_use_head": false, "image_size": 896, "patch_size": 14})", "\"mm_tokens_per_image\": 250"),
      doctest::Contains("must be the square of a divisor of the 64 patches per side"), InputError);
  CHECK_THROWS_WITH_AS(
      WithVision(R"({"vision_use_head": false, "image_size": 896, "patch_size": 14})", "\"mm_tokens_per_image\": 9"),
      doctest::Contains("must be the square of a divisor"), InputError);
  // Llama 4: a projector bias is not modelled; a pixel shuffle must tile the patch grid.
  std::string llama4 = ReadFileText(Hf("llama-4-scout-17b-16e.json"));
  const size_t bias = llama4.find("\"multi_modal_projector_bias\": false");
  REQUIRE(bias != std::string::npos);
  CHECK_THROWS_WITH_AS(LoadModelText("l4.json", std::string(llama4).replace(bias + 30, 5, "true")),
                       doctest::Contains("a projector bias is not modelled"), InputError);
  const size_t shuffle = llama4.find("\"pixel_shuffle_ratio\": 0.5");
  REQUIRE(shuffle != std::string::npos);
  CHECK_THROWS_WITH_AS(LoadModelText("l4.json", std::string(llama4).replace(shuffle + 23, 3, "0.2")),
                       doctest::Contains("pixel_shuffle_ratio must be 1/k"), InputError);
}

}  // namespace
}  // namespace tally
