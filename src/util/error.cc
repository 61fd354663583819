#include "util/error.h"

#include "util/text.h"

namespace tally {
namespace {

// A diagnostic is one line of valid UTF-8: control characters that came from the input (a newline
// in a quoted key, a NUL in binary garbage, an ESC in a file name) are written as escapes, as are
// bytes that are not UTF-8. Idempotent, as a backslash is kept as is.
std::string OneLine(const std::string& text) { return EscapeControl(text); }

std::string Prefix(const SourceLoc& loc) {
  if (loc.file.empty()) return "tally: error: ";
  std::string out = OneLine(loc.file);
  if (loc.line > 0) out += ":" + std::to_string(loc.line);
  if (loc.line > 0 && loc.column > 0) out += ":" + std::to_string(loc.column);
  return out + ": error: ";
}

}  // namespace

InputError::InputError(SourceLoc loc, const std::string& message)
    : std::runtime_error(Prefix(loc) + OneLine(message)), loc_(std::move(loc)), message_(OneLine(message)) {}

InputError::InputError(const std::string& message)
    : std::runtime_error(Prefix({}) + OneLine(message)), message_(OneLine(message)) {}

InputError AtByte(const std::string& file, uint64_t byte, const std::string& message) {
  return InputError({file, 0, 0}, "at byte " + std::to_string(byte) + ": " + message);
}

std::string QuoteInput(std::string_view text) {
  if (text.size() <= kQuoteMax) return std::string(text);
  size_t cut = kQuoteMax;
  // Back up over continuation bytes (10xxxxxx) so that a multi-byte character is not split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

std::string FormatDiagnostic(const InputError& e) { return e.what(); }

}  // namespace tally
