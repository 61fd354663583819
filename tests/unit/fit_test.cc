// fit's search: a value too big to count does not fit, a bad setting is an error (exit 2), and the
// search cap is said.
#include "estimate/fit.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "config/load_config.h"
#include "config/resolve.h"
#include "unit/run_tally.h"
#include "util/error.h"

namespace tally {
namespace {

using testing::CheckRefused;
using testing::RunRaw;
using testing::TallyRun;

}  // namespace

TEST_CASE("fit: a limit past the search's 2^40 is refused, not answered with the cap (issue 28)") {
  CheckRefused({"fit", "seed-mlp", "--memory", "9000000TB"},
               "tally: error: --memory: 7.81 EiB holds more than 2^40 (1.10 T) sequences of 'seed-mlp' a device, past "
               "fit's search; give a device's memory");
}

TEST_CASE("fit: a setting wrong at every size is the error, not 'does not fit'") {
  // gpt2-small has no mixture-of-experts blocks, so --ep 2 is wrong whatever the micro-batch: the
  // search must not read it as memory running out (exit 1, "does not fit").
  const ModelSpec spec = ResolveModel("gpt2-small");
  Settings s;
  s.ep = 2;
  s.gpus = 2;
  const Settings base = ResolveSettings(s, spec);
  Evaluation ev(spec);
  for (Solve solve : {Solve::kBatch, Solve::kSeq, Solve::kGpus}) {
    CAPTURE(static_cast<int>(solve));
    CHECK_THROWS_WITH_AS(Fit(ev, base, solve, uint64_t{80} << 30),
                         "tally: error: --ep: 'gpt2-small' has no mixture-of-experts blocks to split over 2 "
                         "expert-parallel ranks",
                         InputError);
  }
  const TallyRun r = RunRaw({"fit", "gpt2-small", "--memory", "80GiB", "--ep", "2", "--gpus", "2"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "tally: error: --ep: 'gpt2-small' has no mixture-of-experts blocks to split over 2 expert-parallel ranks\n");
}

TEST_CASE("fit: a micro-batch whose memory is past 2^64 - 1 bytes does not fit") {
  // With no limit (2^64 - 1 bytes) the largest micro-batch is where the count itself overflows:
  // gpt2-small's activations at 1,024 tokens are a few hundred MiB a sample (about 2^28 B), so the
  // overflow comes near 2^36 samples, below the search's cap of 2^40.
  const ModelSpec spec = ResolveModel("gpt2-small");
  const Settings base = ResolveSettings(Settings{}, spec);
  Evaluation ev(spec);
  const FitResult r = Fit(ev, base, Solve::kBatch, std::numeric_limits<uint64_t>::max());
  REQUIRE(r.fits);
  CHECK(r.note.empty());
  CHECK(r.value < (uint64_t{1} << 40));
  CHECK(DeviceMemory(ev, r.settings) == r.bytes);
  Settings next = r.settings;
  next.batch = (r.value + 1) * next.grad_accum();
  next.micro_batch = r.value + 1;
  CHECK_THROWS_AS(DeviceMemory(ev, next), CountOverflow);
}

}  // namespace tally

namespace tally {
namespace {

TEST_CASE("fit: --solve recompute finds the fewest blocks a stage recomputes, by the definition") {
  // Llama-3-8B with LoRA 16, two sequences of 8,192 on an H100: the answer N fits and N - 1 does
  // not, each checked through memory's own verdict; with a whole fine-tune even all 32 recomputed
  // do not fit (exit 1); inference has nothing to recompute (exit 2).
  const std::vector<std::string> base = {"llama-3-8b", "--hardware", "h100",          "--seq", "8192",
                                         "--lora",     "16",         "--micro-batch", "2"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), base.begin(), base.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return RunRaw(head);
  };
  const TallyRun fit = with({"fit"}, {"--solve", "recompute", "--get", "fit.recompute_layers"});
  REQUIRE(fit.code == 0);
  const uint64_t n = std::stoull(fit.out);
  REQUIRE(n > 1);
  REQUIRE(n < 32);
  auto fits = [&](uint64_t layers) {
    return with({"memory"},
                {"--recompute", "full", "--recompute-layers", std::to_string(layers), "--get", "memory.train.fits"})
        .out;
  };
  CHECK(fits(n) == "true\n");
  CHECK(fits(n - 1) == "false\n");
  const TallyRun full = RunRaw({"fit", "llama-3-8b", "--hardware", "h100", "--seq", "8192", "--solve", "recompute"});
  CHECK(full.code == 1);
  CHECK(full.err.find("does not fit in 80.00 GiB per device even with any number of blocks recomputed") !=
        std::string::npos);
  // The least it needs is at 31 of 32 (recomputing the last block too keeps one input more): the
  // figure the message names.
  const TallyRun at31 = RunRaw({"memory", "llama-3-8b", "--hardware", "h100", "--seq", "8192", "--recompute", "full",
                                "--recompute-layers", "31", "--get", "memory.train.device", "--format", "json"});
  REQUIRE(at31.code == 0);
  const TallyRun needs = RunRaw({"fit", "llama-3-8b", "--hardware", "h100", "--seq", "8192", "--solve", "recompute",
                                 "--get", "fit.memory", "--format", "json"});
  CHECK(needs.out == at31.out);
  // It chooses the recomputation itself: a given one is refused, not silently replaced.
  for (const std::vector<std::string>& given :
       {std::vector<std::string>{"--recompute", "selective"},
        std::vector<std::string>{"--recompute", "full", "--recompute-layers", "3"}}) {
    std::vector<std::string> args = {"fit", "llama-3-8b", "--hardware", "h100", "--solve", "recompute"};
    args.insert(args.end(), given.begin(), given.end());
    const TallyRun r = RunRaw(args);
    CHECK(r.code == 2);
    CHECK(r.err ==
          "tally: error: --solve recompute: it chooses --recompute and --recompute-layers itself; drop them\n");
  }
  const TallyRun infer = RunRaw({"fit", "llama-3-8b", "--hardware", "h100", "--mode", "infer", "--solve", "recompute"});
  CHECK(infer.code == 2);
  CHECK(infer.err == "tally: error: --solve recompute: recomputation is training's; drop --mode infer\n");
  const TallyRun cnn = RunRaw({"fit", "resnet50", "--hardware", "h100", "--solve", "recompute"});
  CHECK(cnn.code == 2);
  CHECK(cnn.err == "tally: error: --solve recompute: 'resnet50' has no transformer blocks to recompute\n");
}

TEST_CASE("fit: --solve recompute answers 0 where nothing needs recomputing, and past the last block's step") {
  // Llama-3.2-1B at 1,024 tokens fits an H100 as it is: 0.
  const TallyRun none = RunRaw({"fit", "llama-3.2-1b", "--hardware", "h100", "--seq", "1024", "--solve", "recompute",
                                "--get", "fit.recompute_layers"});
  CHECK(none.code == 0);
  CHECK(none.out == "0\n");
  // Recomputing a stage's last block too keeps its input beside the block rebuilt at once: at 16 of
  // 16 one block input more than at 15. Between the two figures 15 fits and 16 does not, and the
  // search must not read 16's miss as "nothing fits".
  const std::vector<std::string> model = {"llama-3.2-1b", "--seq", "4096", "--lora", "16", "--loss-kernel", "chunked"};
  auto device = [&](const std::string& layers) {
    std::vector<std::string> args = {"memory"};
    args.insert(args.end(), model.begin(), model.end());
    args.insert(args.end(),
                {"--mode", "train", "--recompute", "full", "--recompute-layers", layers, "--format", "json"});
    const TallyRun r = RunRaw(args);
    REQUIRE(r.code == 0);
    const size_t at = r.out.find("\"device\":");
    REQUIRE(at != std::string::npos);
    return std::stoull(r.out.substr(at + 9));
  };
  const uint64_t fifteen = device("15"), sixteen = device("16");
  REQUIRE(fifteen < sixteen);
  std::vector<std::string> args = {"fit"};
  args.insert(args.end(), model.begin(), model.end());
  args.insert(args.end(),
              {"--memory", std::to_string(fifteen) + "B", "--solve", "recompute", "--get", "fit.recompute_layers"});
  const TallyRun fit = RunRaw(args);
  CHECK(fit.code == 0);
  CHECK(fit.out == "15\n");
}

}  // namespace
}  // namespace tally
