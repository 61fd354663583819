// --images N: the images per sequence a multimodal config's vision tower encodes (0: text only).
// llava-1.5-7b-hf (tests/data/hf/llava-1.5-7b-hf.json): CLIP ViT-L/14 at 336 px (modeling_clip.py)
// and LLaVA's two-layer projector (modeling_llava.py) in front of a Llama-2-7B-shaped language model.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "unit/run_tally.h"

namespace tally {
namespace {

std::string Llava() { return std::string(TALLY_TEST_DATA) + "/hf/llava-1.5-7b-hf.json"; }

nlohmann::json Flops(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"flops", Llava(), "--seq", "2048", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const testing::TallyRun run = testing::RunTally(args);
  REQUIRE(run.code == 0);
  return nlohmann::json::parse(run.out);
}

TEST_CASE("--images: llava-1.5-7b's forward FLOPs at 0, 1 and 2 images by hand") {
  // The language model at --seq 2048 (the image tokens take their places in the sequence): per block
  // 2·s·4·d² (q, k, v, o) + 2·s·3·d·f (gate, up, down) + 2·2·s²·d (QK^T and AV, not causal), d 4096,
  // f 11008; 32 blocks and the head 2·s·d·V, V 32064.
  const double s = 2048, d = 4096, f = 11008;
  const double text = 32 * (2 * s * 4 * d * d + 2 * s * 3 * d * f + 2 * 2 * s * s * d) + 2 * s * d * 32064;
  // One image, matmul FLOPs: the patch convolution as a GEMM over 576 = (336/14)² patches,
  // 2·576·1024·(3·14·14); 24 CLIP layers (all run: LLaVA reads layer -2 but the tower runs every
  // layer) over T = 577 tokens (the class token too), width c 1024, 16 heads of 64, MLP 4096:
  // 2·T·c·3c + 2·2·16·T²·64 + 2·T·c² + 2·2·T·c·4096; the projector over the 576 patch tokens:
  // 2·576·1024·4096 + 2·576·4096·4096.
  const double t = 577, c = 1024;
  const double layer = 2 * t * c * 3 * c + 2 * 2 * 16 * t * t * 64 + 2 * t * c * c + 2 * 2 * t * c * 4096;
  const double image = 2.0 * 576 * 1024 * 588 + 24 * layer + 2.0 * 576 * 1024 * 4096 + 2.0 * 576 * 4096 * 4096;
  // Non-matmul FLOPs of one image: position add T·c; pre-LayerNorm 5·T·c; per layer two
  // LayerNorms 2·5·T·c, biases of qkv 3·T·c, out T·c, fc1 T·4096, fc2 T·c, the scale and softmax
  // 2·16·T², quick_gelu T·4096, two residual adds 2·T·c; the pooled class token's post-LayerNorm
  // 5·c; the projector's biases and GELU 3·576·4096.
  const double image_other =
      t * c + 5 * t * c +
      24 * (2 * 5 * t * c + 3 * t * c + t * c + t * 4096 + t * c + 2 * 16 * t * t + t * 4096 + 2 * t * c) + 5 * c +
      3 * 576 * 4096.0;
  const nlohmann::json none = Flops({"--images", "0"});
  CHECK(none["flops"]["forward"].get<double>() == text);  // 29,262,685,929,472
  CHECK(none["settings"]["images"] == 0);
  CHECK(!none["flops"]["components"].contains("vision"));  // no FLOPs in it
  const double text_other = none["flops"]["non_matmul"]["forward"].get<double>();
  for (const int n : {1, 2}) {
    CAPTURE(n);
    const nlohmann::json j = Flops({"--images", std::to_string(n)});
    CHECK(j["flops"]["forward"].get<double>() == text + n * image);  // + 406,077,407,232 per image
    CHECK(j["flops"]["non_matmul"]["forward"].get<double>() == text_other + n * image_other);  // + 620,826,368
  }
  // The default is one image, as before --images.
  CHECK(Flops({})["flops"]["forward"].get<double>() == text + image);
}

TEST_CASE("--images 0 keeps the tower's parameters and memory of weights") {
  const auto params = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"estimate", Llava(), "--seq", "2048", "--get", "params.total"};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::TallyRun run = testing::RunTally(args);
    REQUIRE(run.code == 0);
    return run.out;
  };
  CHECK(params({"--images", "0"}) == "7063427072\n");  // 6,738,939,904 + 303,507,456 + 20,979,712
  CHECK(params({"--images", "3"}) == "7063427072\n");
  // A prefill without images does not run (or read) the tower: its time to first token is shorter.
  const auto ttft = [](const std::string& n) {
    const testing::TallyRun run = testing::RunTally(
        {"time", Llava(), "--mode", "infer", "--hardware", "h100-sxm", "--images", n, "--get", "time.ttft_seconds"});
    REQUIRE(run.code == 0);
    return std::stod(run.out);
  };
  CHECK(ttft("0") < ttft("1"));
  CHECK(ttft("1") < ttft("2"));
}

TEST_CASE("--images: bad values and models without a tower exit 2") {
  for (const std::string bad : {"-1", "one", "1.5", ""}) {
    CAPTURE(bad);
    CHECK(testing::RunTally({"flops", Llava(), "--images", bad}).code == 2);
  }
  const testing::TallyRun text = testing::RunTally({"flops", "gpt2-small", "--images", "1"});
  CHECK(text.code == 2);
  CHECK(text.err == "tally: error: --images: 'gpt2-small' has no vision tower (a multimodal config's vision_config)\n");
  CHECK(testing::RunTally({"flops", "resnet50", "--images", "1"}).code == 2);
  CHECK(testing::RunTally({"params", Llava(), "--images", "1"}).code == 2);  // parameters do not depend on it
}

}  // namespace
}  // namespace tally
