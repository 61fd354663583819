// tally measure through the command line: what would exhaust memory or run far past --budget is
// refused, a repeated dtype runs once, and --peak blames its own dtype (issue 20).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "unit/run_tally.h"

namespace tally {
namespace {

using testing::CheckRefused;
using testing::RunRaw;
using testing::TallyRun;

}  // namespace

TEST_CASE("measure command: what would exhaust memory or run far past --budget is refused") {
  // 3 x 100000^2 x 4 bytes = 111.76 GiB of fp32 operands, before any allocation.
  const TallyRun big = RunRaw({"measure", "--sizes", "100000", "--dtype", "fp32"});
  if (big.err.find("OpenBLAS") != std::string::npos) {
    MESSAGE("skipped: no OpenBLAS to measure with");
    return;
  }
  CHECK(big.code == 2);
  CHECK(big.err.rfind("tally: error: --sizes/--shapes: the fp32 GEMM 100000x100000x100000 needs 111.76 GiB for its "
                      "operands; the machine has ",
                      0) == 0);
  // 2 x 8192^2 x 65536 = 8.8e12 FLOPs on one thread: about a minute at any core's fp32 rate, and
  // 4 runs at least. Its 4.5 GiB of operands may exceed a small machine: that refusal is right too.
  const TallyRun slow =
      RunRaw({"measure", "--shapes", "8192x8192x65536", "--dtype", "fp32", "--threads", "1", "--budget", "0.01"});
  CAPTURE(slow.err);
  CHECK(slow.code == 2);
  CHECK((slow.err.rfind("tally: error: --budget: the fp32 GEMM 8192x8192x65536 takes about ", 0) == 0 ||
         slow.err.rfind("tally: error: --sizes/--shapes: the fp32 GEMM 8192x8192x65536 needs ", 0) == 0));
}

TEST_CASE("measure command: a repeated dtype runs once and --peak is blamed for its own dtype") {
  CheckRefused({"measure", "--peak", "fp99=1e12"},
               "tally: error: --peak: unknown dtype 'fp99' (did you mean 'fp32'?); use one of fp32, fp64, bf16, fp16, "
               "tf32, fp8");
  const TallyRun r = RunRaw(
      {"measure", "--dtype", "fp32,fp32", "--sizes", "8,8", "--threads", "1", "--budget", "0.001", "--format", "csv"});
  if (r.err.find("OpenBLAS") != std::string::npos) return;
  CHECK(r.code == 0);
  // One header and one row: fp32 once, size 8 once.
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);
}

}  // namespace tally
