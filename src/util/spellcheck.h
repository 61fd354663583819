// "Did you mean" suggestions from a bounded edit distance (as ninja's SpellcheckString does).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tally {

// Levenshtein distance between a and b.
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` within half its length (at most 3 edits), ignoring
// case, or "".
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" when a close candidate exists, else "".
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace tally
