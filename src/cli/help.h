// `--help` text that fits a terminal: CLI11 prints each description on one line, so long lines are
// wrapped here, and each command's help ends with its examples from the command table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tally {

constexpr size_t kHelpWidth = 80;

// Columns of `line` as a terminal shows them: UTF-8 code points ("·" is one).
size_t DisplayWidth(std::string_view line);

// `text` with every line wider than `width` broken at spaces; a continuation starts under the
// description column (30, CLI11's) when the line has one, else under the line's own indent.
std::string WrapHelp(const std::string& text, size_t width = kHelpWidth);

// "Examples:" and one indented `tally ...` line per example.
std::string ExamplesFooter(const std::vector<std::string_view>& examples);

}  // namespace tally
