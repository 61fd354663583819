// Hardware files: a zero bandwidth, and an achieved rate of 0 or above the peak, are refused at
// their line and column (issue 20).
#include "config/hardware.h"

#include <doctest/doctest.h>

#include <string>

#include "util/error.h"

namespace tally {
namespace {

// A hardware file in the configs/hardware schema; `extra` replaces nothing, it adds keys.
std::string Hardware(const std::string& bandwidth, const std::string& extra = "") {
  return "memory_bytes: 85899345920\nmemory_bandwidth: " + bandwidth + "\npeak_flops:\n  bf16: 989.5e12\n" + extra;
}

}  // namespace

TEST_CASE("hardware: a hardware file with a zero bandwidth or an achieved rate of 0 or above the peak") {
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("0")),
                       "hw.yaml:2:19: error: 'memory_bandwidth' must be a number >= 1 such as 989.5e12, got '0'",
                       InputError);
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("3.35e12", "achieved_flops: {bf16: 0}\n")),
                       "hw.yaml:5:24: error: 'bf16' must be a number >= 1 such as 989.5e12, got '0'", InputError);
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("3.35e12", "achieved_flops: {bf16: 1e15}\n")),
                       "hw.yaml:5:24: error: 'bf16' in 'achieved_flops' (1e15) is above its 'peak_flops' (989.5e12)",
                       InputError);
  CHECK(LoadHardwareText("hw.yaml", Hardware("3.35e12", "achieved_flops: {bf16: 400e12}\n"))
            .achieved_flops.at(GemmDType::kBf16) == 400e12);
}

}  // namespace tally
