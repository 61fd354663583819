#include "cli/help.h"

#include <sstream>

namespace tally {
namespace {

constexpr size_t kDescriptionColumn = 30;  // CLI11's Formatter column width

// The column a continuation of `line` starts at.
size_t ContinuationIndent(const std::string& line) {
  const size_t indent = line.find_first_not_of(' ');
  const bool option_row = indent == 2 && line.size() > kDescriptionColumn && line[kDescriptionColumn - 1] == ' ' &&
                          line[kDescriptionColumn] != ' ';
  if (option_row) return kDescriptionColumn;
  return indent == std::string::npos ? 0 : indent;
}

// The byte offset where `line` reaches `width` columns.
size_t ByteAtColumn(const std::string& line, size_t width) {
  size_t columns = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;
    if (columns == width) return i;
    ++columns;
  }
  return line.size();
}

void WrapLine(std::string line, size_t width, std::ostream& out) {
  const size_t indent = ContinuationIndent(line);
  while (DisplayWidth(line) > width) {
    size_t cut = line.rfind(' ', ByteAtColumn(line, width));
    // No space past the indent to break at: leave the word whole rather than split it.
    if (cut == std::string::npos || cut <= indent) break;
    size_t end = line.find_last_not_of(' ', cut);
    out << line.substr(0, end + 1) << "\n";
    line = std::string(indent, ' ') + line.substr(line.find_first_not_of(' ', cut));
  }
  out << line;
}

}  // namespace

size_t DisplayWidth(std::string_view line) {
  size_t columns = 0;
  for (char c : line) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return columns;
}

std::string WrapHelp(const std::string& text, size_t width) {
  std::ostringstream out;
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (!first) out << "\n";
    first = false;
    WrapLine(line, width, out);
  }
  if (!first) out << "\n";  // help ends with a newline, whether or not CLI11's footer has one
  return out.str();
}

std::string ExamplesFooter(const std::vector<std::string_view>& examples) {
  std::string out = "Examples:";
  for (std::string_view e : examples) out += "\n  tally " + std::string(e);
  return out;
}

}  // namespace tally
