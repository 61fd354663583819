// SummaryCache (estimate/summary_cache.h): which summaries it keeps, whatever order they are asked
// for in (its guess of the next one is only a shortcut).
#include "estimate/summary_cache.h"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "estimate/evaluation.h"

namespace tally {
namespace {

GraphSettings Key(uint64_t seq) { return {.seq = seq}; }

std::vector<std::shared_ptr<const GraphSummary>> Summaries(size_t n) {
  std::vector<std::shared_ptr<const GraphSummary>> out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::make_shared<GraphSummary>());
  return out;
}

TEST_CASE("summary cache: by default the first ones are kept and later ones are not") {
  const auto s = Summaries(3);
  SummaryCache cache(2);
  for (uint64_t i = 0; i < 3; ++i) cache.Keep(Key(i), s[i]);
  CHECK(cache.Find(Key(0)) == s[0]);
  CHECK(cache.Find(Key(1)) == s[1]);
  CHECK(cache.Find(Key(2)) == nullptr);
}

TEST_CASE("summary cache: evicting, a cycle that fits stays whole, and the oldest unused goes first") {
  const auto s = Summaries(5);
  SummaryCache cache(2);
  cache.Evicting(3);
  for (uint64_t i = 0; i < 3; ++i) cache.Keep(Key(i), s[i]);
  for (int pass = 0; pass < 3; ++pass) {
    for (uint64_t i = 0; i < 3; ++i) CHECK(cache.Find(Key(i)) == s[i]);
  }
  // All three used since the hand last passed: it clears them and comes round to slot 0.
  cache.Keep(Key(3), s[3]);
  CHECK(cache.Find(Key(0)) == nullptr);
  CHECK(cache.Find(Key(3)) == s[3]);
  // Keys 1 and 2 were cleared and not used since; 1 is next under the hand.
  CHECK(cache.Find(Key(2)) == s[2]);
  cache.Keep(Key(4), s[4]);
  CHECK(cache.Find(Key(1)) == nullptr);
  CHECK(cache.Find(Key(2)) == s[2]);
  CHECK(cache.Find(Key(4)) == s[4]);
}

TEST_CASE("summary cache: a change of order is answered as well as the order it learned") {
  const auto s = Summaries(6);
  SummaryCache cache(2);
  cache.Evicting(8);
  for (uint64_t i = 0; i < 6; ++i) cache.Keep(Key(i), s[i]);
  for (uint64_t i = 0; i < 6; ++i) CHECK(cache.Find(Key(i)) == s[i]);                     // as learned
  for (uint64_t i = 6; i-- > 0;) CHECK(cache.Find(Key(i)) == s[i]);                       // backwards
  for (uint64_t i : {4u, 1u, 5u, 0u, 3u, 2u, 2u, 4u}) CHECK(cache.Find(Key(i)) == s[i]);  // any order
  CHECK(cache.Find(Key(7)) == nullptr);
  // Shrunk below what it holds, it starts again.
  cache.Evicting(4);
  CHECK(cache.Find(Key(0)) == nullptr);
}

}  // namespace
}  // namespace tally
