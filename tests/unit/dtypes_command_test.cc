// tally dtypes --value: an infinity stored in each format, printed without a NaN error (issue 20).
#include <doctest/doctest.h>

#include <string>

#include "unit/run_tally.h"

namespace tally {
namespace {

using testing::RunRaw;
using testing::TallyRun;

}  // namespace

TEST_CASE("dtypes command: --value inf stores NaN in e4m3 and prints no NaN error") {
  const TallyRun r = RunRaw({"dtypes", "--value", "inf"});
  CHECK(r.code == 0);
  // e4m3 (OCP FP8, E4M3): no infinity encoding, the all-ones pattern is NaN; int8 saturates at 127.
  CHECK(r.out.find("  fp8_e4m3     8  1  4   3        NaN               -  overflow to NaN\n") != std::string::npos);
  CHECK(r.out.find("  int8         8  1  0   7        127               -  saturated\n") != std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
  const TallyRun json = RunRaw({"dtypes", "--value", "inf", "--format", "json"});
  CHECK(json.out.find("null") == std::string::npos);
  CHECK(json.out.find("\"value\": \"inf\"") != std::string::npos);
}

}  // namespace tally
