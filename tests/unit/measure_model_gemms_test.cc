// The GEMMs of one training step, read from the graph, against the FLOPs estimator.
#include <doctest/doctest.h>

#include "estimate/flops.h"
#include "measure/model_gemms.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::PresetGraph;

Settings Workload(uint64_t batch, std::optional<uint64_t> seq, bool causal = false) {
  Settings s;
  s.batch = s.micro_batch = batch;
  s.seq = seq;
  s.causal = causal;
  return s;
}

std::vector<StepGemm> operator+(std::vector<StepGemm> a, const std::vector<StepGemm>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const StepGemm* Find(const std::vector<StepGemm>& gemms, GemmShape shape) {
  for (const StepGemm& g : gemms) {
    if (g.shape == shape) return &g;
  }
  return nullptr;
}

TEST_CASE("measure model GEMMs: FLOPs equal the estimator's forward + backward exactly") {
  struct Case {
    const char* preset;
    Settings settings;
  };
  const Case cases[] = {{"gpt2-small", Workload(4, 512)},         {"gpt2-small", Workload(1, 1024, true)},
                        {"seed-mlp", Workload(32, std::nullopt)}, {"seed-cnn", Workload(8, std::nullopt)},
                        {"llama-2-7b", Workload(2, 4096, true)},  {"mixtral-8x7b", Workload(1, 2048)}};
  for (const Case& c : cases) {
    CAPTURE(c.preset);
    const LayerGraph g = PresetGraph(c.preset, c.settings);
    const FlopCounts counted = CountFlops(g);
    const std::vector<StepGemm> all = StepGemms(g);
    CHECK(StepFlops(all) == counted.forward + counted.backward);
    CHECK(StepFlops(DistinctGemms(all)) == counted.forward + counted.backward);
  }
}

TEST_CASE("measure model GEMMs: the seed MLP, batch 32") {
  // Linear 512->1024, 1024->512, 512->10 on 32 samples. The first layer's input is data: no dX.
  // Forward Y = X·W is NN; dX = dY·Wᵀ reads W transposed (NT); dW = Xᵀ·dY reads X transposed (TN).
  const std::vector<StepGemm> gemms = StepGemms(PresetGraph("seed-mlp", Workload(32, std::nullopt)));
  std::vector<std::pair<GemmShape, GemmPass>> got;
  for (const StepGemm& g : gemms) got.push_back({g.shape, g.pass});
  const std::vector<std::pair<GemmShape, GemmPass>> want = {{{32, 1024, 512}, GemmPass::kForward},
                                                            {{512, 1024, 32, true, false}, GemmPass::kGradWeight},
                                                            {{32, 512, 1024}, GemmPass::kForward},
                                                            {{32, 1024, 512, false, true}, GemmPass::kGradInput},
                                                            {{1024, 512, 32, true, false}, GemmPass::kGradWeight},
                                                            {{32, 10, 512}, GemmPass::kForward},
                                                            {{32, 512, 10, false, true}, GemmPass::kGradInput},
                                                            {{512, 10, 32, true, false}, GemmPass::kGradWeight}};
  CHECK(got == want);
  // Products per layer: forward + dW for the first, forward + dX + dW for the others, each 2·m·n·k.
  CHECK(StepFlops(gemms) == 2ULL * 32 * (512 * 1024 * 2 + 1024 * 512 * 3 + 512 * 10 * 3));
  // The first layer's forward and the second's dX have one size but two layouts: timed apart.
  const std::vector<StepGemm> distinct = DistinctGemms(gemms);
  CHECK(distinct.size() == 8);
  const std::vector<StepGemm> twice = DistinctGemms(gemms + gemms);  // equal (shape, layout) merge
  CHECK(twice.size() == 8);
  const StepGemm* merged = Find(twice, {32, 1024, 512, false, true});
  REQUIRE(merged != nullptr);
  CHECK(merged->count == 2);
  CHECK(merged->passes == "dX");
}

TEST_CASE("measure model GEMMs: GPT-2 small, batch 4, seq 512") {
  const std::vector<StepGemm> distinct = DistinctGemms(StepGemms(PresetGraph("gpt2-small", Workload(4, 512))));
  // 2048 tokens. The out projection's forward (NN) and dX (NT) are both 2048 x 768 x 768, in 12
  // blocks: merged with the other linears of that size and layout (the MLP has none).
  for (const GemmShape& out : {GemmShape{2048, 768, 768}, GemmShape{2048, 768, 768, false, true}}) {
    CAPTURE(out.Text());
    const StepGemm* g = Find(distinct, out);
    REQUIRE(g != nullptr);
    CHECK(g->count == 12);
  }
  // QKᵀ: 512 x 512 x 64 per (sequence, head) = 4 x 12 per block, 576 in all; the AV product's dA
  // has the same size read as NT, as many times.
  const StepGemm* scores = Find(distinct, {512, 512, 64});
  REQUIRE(scores != nullptr);
  CHECK(scores->count == 576);
  CHECK(scores->passes == "forward");
  const StepGemm* av_grad = Find(distinct, {512, 512, 64, false, true});
  REQUIRE(av_grad != nullptr);
  CHECK(av_grad->count == 576);
  CHECK(av_grad->passes == "dX");
  // The LM head (tied to the embedding, which trains): forward, dX and dW once each.
  for (GemmShape head : {GemmShape{2048, 50257, 768}, GemmShape{2048, 768, 50257, false, true},
                         GemmShape{768, 50257, 2048, true, false}}) {
    CAPTURE(head.Text());
    const StepGemm* g = Find(distinct, head);
    REQUIRE(g != nullptr);
    CHECK(g->count == 1);
  }
}

TEST_CASE("measure model GEMMs: causal attention is halved, frozen weights lose dW") {
  const std::vector<StepGemm> causal = StepGemms(PresetGraph("gpt2-small", Workload(1, 1024, true)));
  const StepGemm* scores = Find(causal, {1024, 1024, 64});
  REQUIRE(scores != nullptr);
  CHECK(scores->halved);
  // 12 heads in each of the 12 blocks, which the graph holds once.
  CHECK(scores->count == 12 * 12);
  CHECK(GemmFlops(*scores) == 2ULL * 1024 * 1024 * 64 * 12 * 12 / 2);

  Settings frozen = Workload(1, 128);
  frozen.frozen = {"mlp"};
  for (const StepGemm& g : StepGemms(PresetGraph("gpt2-small", frozen))) {
    CAPTURE(g.path);
    if (g.path.find("mlp") != std::string::npos) CHECK(g.pass != GemmPass::kGradWeight);
  }
}

}  // namespace
}  // namespace tally
