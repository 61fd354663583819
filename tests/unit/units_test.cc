#include "util/units.h"

#include <doctest/doctest.h>

#include <string>

#include "util/error.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

TEST_CASE("units: human counts, FLOPs and bytes") {
  CHECK(FormatCount(768) == "768");
  CHECK(FormatCount(124'439'808) == "124.44 M");
  CHECK(FormatCount(6'738'415'616) == "6.74 B");
  CHECK(FormatFlops(291'648'307'200.0) == "291.65 GFLOP");
  CHECK(FormatFlops(12) == "12 FLOP");
  CHECK(FormatBytes(1ULL << 30, UnitSystem::kIec) == "1.00 GiB");
  CHECK(FormatBytes(1ULL << 30, UnitSystem::kSi) == "1.07 GB");
  CHECK(FormatBytes(1000, UnitSystem::kIec) == "1000 B");
  CHECK(FormatDouble(0.1) == "0.1");
  CHECK(FormatDouble(1.5) == "1.5");
}

TEST_CASE("spellcheck: edit distance and suggestions") {
  CHECK(EditDistance("n_head", "n_heads") == 1);
  CHECK(EditDistance("", "abc") == 3);
  CHECK(EditDistance("kitten", "sitting") == 3);
  CHECK(ClosestMatch("n_head", {"n_layers", "n_heads", "n_kv_heads"}) == "n_heads");
  CHECK(ClosestMatch("zzzzzzzz", {"n_layers", "n_heads"}).empty());
  CHECK(ClosestMatch("ab", {"xy"}).empty());  // too short to be close to anything
  CHECK(DidYouMean("gpt2-smal", {"gpt2-small", "gpt2-xl"}) == " (did you mean 'gpt2-small'?)");
}

}  // namespace
}  // namespace tally
