// fit's search: a value too big to count does not fit, a bad setting is an error (exit 2), and the
// search cap is said.
#include "estimate/fit.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

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
