// Numbers and units from the command line: every reader of util/parse.h and ParseDType read the
// same text, each on its own. A value they accept must be usable: finite,
// and positive where the parser promises it.
#include <cmath>
#include <optional>

#include "fuzz_util.h"
#include "util/dtype.h"
#include "util/parse.h"

namespace {

void Require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256) return -1;  // flag values are short
  const std::string text = tally::fuzz::Text(data, size);
  using tally::fuzz::Expect;
  Expect([&] { Require(tally::ParseCount(text, "--batch") > 0); });
  Expect([&] { Require(tally::ParseLength(text, "--seq") > 0); });
  Expect([&] { Require(tally::ParseBytes(text, "--memory") > 0); });
  Expect([&] {
    const tally::SiNumber n = tally::ParseSiNumber(text, "--tokens");
    Require(std::isfinite(n.value) && n.value >= 0 && (!n.exact || static_cast<double>(*n.exact) == n.value));
  });
  Expect([&] {
    const double v = tally::ParseReal(text, "--mfu", tally::kRatio);
    Require(v > 0 && v <= 1);
  });
  Expect([&] {
    for (const std::string& item : tally::SplitList(text, "--keys")) Require(!item.empty());
  });
  for (char unit : {'s', 'h', 'd'}) {
    Expect([&] {
      const double v = tally::ParseDuration(text, "--hours", unit);
      Require(std::isfinite(v) && v > 0);
    });
  }
  Expect([&] { tally::ParseDType(text, "param-dtype"); });
  Expect([&] { tally::ParseDType(text, "kv-dtype", {tally::DType::kFp16, tally::DType::kInt8}); });
  return 0;
}
