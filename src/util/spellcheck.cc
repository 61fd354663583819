#include "util/spellcheck.h"

#include <algorithm>
#include <numeric>

#include "util/text.h"

namespace tally {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  constexpr int kMaxDistance = 3;
  // A short word is "close" to anything short: at most half its letters may change, so "fp23"
  // finds fp32 (two edits) but "yaml" is not "table" (three edits in four letters).
  const int length = static_cast<int>(word.size());
  int best = std::min({kMaxDistance, length / 2, length - 1});
  std::string match;
  for (const std::string& c : candidates) {
    // Case is ignored: "JSON" is one step from nothing, not four from "json".
    int d = EditDistance(Lower(word), Lower(c));
    if (d <= best && (match.empty() || d < best)) {
      best = d;
      match = c;
    }
  }
  return match;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string match = ClosestMatch(word, candidates);
  return match.empty() ? "" : " (did you mean '" + match + "'?)";
}

}  // namespace tally
