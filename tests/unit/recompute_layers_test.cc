// --recompute full --recompute-layers N (Megatron-LM's --recompute-method block): the first N blocks
// of each pipeline stage rerun, the others keep their activations. Each figure against the same
// model's `none` and whole `full`, by hand.
#include <doctest/doctest.h>

#include "estimate/activations.h"
#include "estimate/expert_parallel.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "estimate/step_model.h"
#include "estimate/step_timeline.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

Settings Train(Recompute recompute, std::optional<uint64_t> layers = std::nullopt, uint64_t pp = 1) {
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kBf16);
  s.precision = Precision::kBf16;
  s.seq = 2048;
  s.recompute = recompute;
  s.recompute_layers = layers;
  s.pp = s.gpus = pp;
  return s;
}

TrainMemory Ledger(const std::string& model, const Settings& s) {
  return TrainingMemory(s, testing::MemoryOf(ResolveModel(model), s));
}

TEST_CASE("recompute layers: a stage keeps N checkpoints and the other blocks whole") {
  // Llama-3.2-1B, 16 blocks, one micro-batch of 2,048: a block keeps F bytes without recomputation
  // and C (its input) under it; outside the blocks O. none = 16 F + O; full = 16 C + F + O (one
  // block rebuilt on top of the checkpoints). With N < 16 the backward reaches the N rerun blocks
  // after the others have freed theirs, so one rebuilt block fits in what they freed:
  // N C + (16 - N) F + O.
  const TrainMemory none = Ledger("llama-3.2-1b", Train(Recompute::kNone));
  const TrainMemory full = Ledger("llama-3.2-1b", Train(Recompute::kFull));
  const uint64_t f = none.per_layer_activations, c = full.per_layer_activations;
  // A checkpoint is the block's input, b·s·h at 2 bytes (Korthikanti et al. 2022, §5: full
  // recomputation keeps only each layer's input): 1 x 2,048 x 2,048 x 2 by hand.
  CHECK(c == 2048ULL * 2048 * 2);
  REQUIRE(c < f);
  const uint64_t outside = none.activations - 16 * f;
  CHECK(full.activations == 16 * c + f + outside);
  for (const uint64_t n : {uint64_t{1}, uint64_t{4}, uint64_t{15}}) {
    CAPTURE(n);
    CHECK(Ledger("llama-3.2-1b", Train(Recompute::kFull, n)).activations == n * c + (16 - n) * f + outside);
  }
  // N = 16 is every block: full (more is refused: the CLI test below).
  CHECK(Ledger("llama-3.2-1b", Train(Recompute::kFull, 16)).activations == full.activations);
  // Four stages of 4 blocks, N = 1 on each, one micro-batch: the stage the ledger reports holds
  // C + 3 F where its `none` holds 4 F (its part outside the blocks the same).
  const TrainMemory stage_none = Ledger("llama-3.2-1b", Train(Recompute::kNone, std::nullopt, 4));
  const TrainMemory stage_one = Ledger("llama-3.2-1b", Train(Recompute::kFull, 1, 4));
  CHECK(stage_none.stage == stage_one.stage);
  CHECK(stage_one.activations == stage_none.activations - (f - c));
}

TEST_CASE("recompute layers: the step's peak at the loss holds N checkpoints where `none` holds N blocks") {
  // Without recomputation Llama-3.2-1B's step peaks at the loss (docs/validation.md); rerunning the
  // first 4 blocks keeps only their inputs there: 4 (F - C) fewer bytes at the same event.
  const ModelSpec spec = ResolveModel("llama-3.2-1b");
  auto peak = [&](const Settings& s) {
    const MemoryModel m = testing::MemoryOf(spec, s);
    return TrainingTimeline(m, s, TrainingMemory(s, m), false);
  };
  const TrainMemory none = Ledger("llama-3.2-1b", Train(Recompute::kNone));
  const TrainMemory full = Ledger("llama-3.2-1b", Train(Recompute::kFull));
  const StepTimeline before = peak(Train(Recompute::kNone)), four = peak(Train(Recompute::kFull, 4));
  REQUIRE(before.peak_phase == StepPhase::kLoss);
  CHECK(four.peak_phase == StepPhase::kLoss);
  CHECK(four.peak == before.peak - 4 * (none.per_layer_activations - full.per_layer_activations));
  // Every block of the stage rerun is --recompute full.
  CHECK(peak(Train(Recompute::kFull, 16)).peak == peak(Train(Recompute::kFull)).peak);
}

TEST_CASE("recompute layers: FLOPs and time rerun N of each stage's blocks") {
  // Llama-3-8B's 32 identical blocks: 5 rerun are 5/32 of the full recompute's FLOPs, exactly; over
  // 4 stages of 8, 5 of each are 20/32.
  const LayerGraph g = testing::ResolvedGraph(ResolveModel("llama-3-8b"), {.seq = 2048});
  const uint64_t all = RecomputeFlops(g, RecomputeRule(g, Recompute::kFull));
  CHECK(RecomputeFlops(g, RecomputeRule(g, Recompute::kFull, 1, 5)) * 32 == all * 5);
  CHECK(RecomputeFlops(g, RecomputeRule(g, Recompute::kFull, 4, 5)) * 32 == all * 20);
  CHECK(RecomputedShare(Recompute::kFull, 5, 32, 4) == doctest::Approx(20.0 / 32));
  // Uneven stages (10 blocks over 4: 3, 2, 3, 2): the first, a largest, reruns 2 of its 3.
  CHECK(RecomputedShare(Recompute::kFull, 2, 10, 4) == doctest::Approx(2.0 / 3));
  CHECK(RecomputedShare(Recompute::kSelective, std::nullopt, 32, 1) == 0);
  // On one device the step's time grows by the rerun blocks' forward: 5/32 of what the whole
  // recompute adds (fused kernels, no collective; the power limit, which changes with the GEMMs' share
  // of the step, apart).
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const uint64_t params = CountParams(g).trainable;
  auto step = [&](Recompute r, std::optional<uint64_t> layers) {
    Settings s = Train(r, layers);
    s.batch = s.micro_batch = 1;
    return TrainingStep(g, s, h100, 989.5e12, 0.785, params, {.kernels = Kernels::kFused, .power_limit = false})
        .compute;
  };
  const double none = step(Recompute::kNone, std::nullopt);
  CHECK(step(Recompute::kFull, 5) - none == doctest::Approx((step(Recompute::kFull, std::nullopt) - none) * 5 / 32));
  // Over 3 stages of 11, 11 and 10 blocks the step runs at the first's pace: 5 of its 11 rerun, 5/11
  // of what the whole recompute adds to it (not the model's 15 reruns at 11/32 of the step, 5.16).
  auto staged = [&](Recompute r, std::optional<uint64_t> layers) {
    Settings s = Train(r, layers, 3);
    s.batch = s.micro_batch = 1;
    return TrainingStep(g, s, h100, 989.5e12, 0.785, params, {.kernels = Kernels::kFused, .power_limit = false})
        .compute;
  };
  const double staged_none = staged(Recompute::kNone, std::nullopt);
  CHECK(staged(Recompute::kFull, 5) - staged_none ==
        doctest::Approx((staged(Recompute::kFull, std::nullopt) - staged_none) * 5 / 11));
}

TEST_CASE("recompute layers: a rerun block repeats its own collectives, by the kind of block it is") {
  // DeepSeek-V2-Lite: block 0 dense, blocks 1-26 MoE. Rerunning the first block reruns no expert
  // all-to-all (4 a MoE block, as without recomputation); the first two rerun one MoE block of 26:
  // 4 + 2/26 a MoE block on average; all of them, 6.
  const LayerGraph g = testing::ResolvedGraph(ResolveModel("deepseek-v2-lite"), {.seq = 256});
  REQUIRE(g.n_layers == 27);
  CHECK(ExpertAllToAllsPerBlock(g, Train(Recompute::kFull, 1)) == 4);
  CHECK(ExpertAllToAllsPerBlock(g, Train(Recompute::kFull, 2)) == doctest::Approx(4 + 2.0 / 26));
  CHECK(ExpertAllToAllsPerBlock(g, Train(Recompute::kFull)) == 6);
  CHECK(ExpertAllToAllsPerBlock(g, Train(Recompute::kNone)) == 4);
}

TEST_CASE("recompute layers: refused without --recompute full, and by the commands that do not read it") {
  const testing::TallyRun r = testing::RunTally({"memory", "llama-3-8b", "--recompute-layers", "4"});
  CHECK(r.code == 2);
  CHECK(r.err.find("--recompute-layers: reruns whole blocks, so it needs --recompute full") != std::string::npos);
  const testing::TallyRun zero =
      testing::RunTally({"memory", "llama-3-8b", "--recompute", "full", "--recompute-layers", "0"});
  CHECK(zero.code == 2);
  const testing::TallyRun ok = testing::RunTally(
      {"memory", "llama-3-8b", "--recompute", "full", "--recompute-layers", "4", "--get", "settings.recompute_layers"});
  CHECK(ok.code == 0);
  CHECK(ok.out == "4\n");
  // More blocks than a stage holds, or a model without blocks, is refused rather than read as "all":
  // Llama-3-8B has 32; over 4 stages each holds 8.
  auto refused = [](std::vector<std::string> args, const std::string& message) {
    const testing::TallyRun run = testing::RunRaw(args);
    CHECK(run.code == 2);
    CHECK(run.out.empty());
    CHECK(run.err == "tally: error: " + message + "\n");
  };
  refused({"memory", "llama-3-8b", "--recompute", "full", "--recompute-layers", "33"},
          "--recompute-layers: 33 blocks, but 'llama-3-8b' has 32; without it --recompute full reruns them all");
  refused({"time", "llama-3-8b", "--hardware", "h100", "--gpus", "4", "--pp", "4", "--recompute", "full",
           "--recompute-layers", "9"},
          "--recompute-layers: 9 blocks, but a pipeline stage of 'llama-3-8b' holds at most 8; without it "
          "--recompute full reruns them all");
  refused({"memory", "resnet50", "--recompute", "full", "--recompute-layers", "2"},
          "--recompute-layers: 'resnet50' has no transformer blocks to recompute");
  CHECK(testing::RunRaw(
            {"memory", "llama-3-8b", "--pp", "4", "--gpus", "4", "--recompute", "full", "--recompute-layers", "8"})
            .code == 0);
}

}  // namespace
}  // namespace tally
