#include "util/text.h"

#include <algorithm>
#include <cctype>

namespace tally {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

std::string HexByte(unsigned c) { return std::string("\\x") + kHex[c >> 4] + kHex[c & 0xF]; }

// The length of the well-formed UTF-8 sequence at `i` (RFC 3629, Table 3-7 of Unicode), or 0.
size_t SequenceLength(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return at(k) >= lo && at(k) <= hi; };
  const unsigned b = at(i);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    const unsigned lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    const unsigned lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string EscapeControl(std::string_view text, bool keep_breaks) {
  // The common case, printable ASCII, as it is (a sweep writes millions of cells).
  if (std::all_of(text.begin(), text.end(), [](char ch) { return ch >= 0x20 && ch < 0x7F; })) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = SequenceLength(text, i);
    if (n == 0) {
      out += HexByte(c);
      i += 1;
      continue;
    }
    if (keep_breaks && (c == '\n' || c == '\r' || c == '\t')) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += HexByte(c);
    } else if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {  // U+0080..U+009F
      out += std::string("\\u00") + kHex[static_cast<unsigned char>(text[i + 1]) >> 4] +
             kHex[static_cast<unsigned char>(text[i + 1]) & 0xF];
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace tally
