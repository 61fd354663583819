// What the scan accepts is valid JSON (RFC 8259) that nlohmann::json reads to the same values: the
// four whitespace bytes of §2, strings of printable ASCII without '\' (§7), integers without sign,
// fraction or exponent (§6) that fit uint64_t (nlohmann would read a larger one as a double).
#include "config/json_scan.h"

#include <cstring>

namespace tally {

void JsonScan::SkipSpace() {
  while (at_ < text_.size()) {
    const char c = text_[at_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++at_;
  }
}

bool JsonScan::Take(char c) {
  SkipSpace();
  if (at_ >= text_.size() || text_[at_] != c) return false;
  ++at_;
  return true;
}

bool JsonScan::String(std::string_view& out) {
  if (!Take('"')) return false;
  const char* begin = text_.data() + at_;
  const auto* end = static_cast<const char*>(std::memchr(begin, '"', text_.size() - at_));
  if (end == nullptr) return false;
  // Control bytes are errors, escapes and non-ASCII need decoding or checking: nlohmann's part.
  // Without an early exit the loop vectorizes.
  bool plain = true;
  for (const char* p = begin; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    plain &= c >= 0x20 && c < 0x80 && c != '\\';
  }
  if (!plain) return false;
  out = std::string_view(begin, static_cast<size_t>(end - begin));
  at_ += out.size() + 1;
  return true;
}

bool JsonScan::Uint(uint64_t& out) {
  SkipSpace();
  const size_t begin = at_;
  uint64_t v = 0;
  for (; at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9'; ++at_) {
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(text_[at_] - '0'), &v)) {
      return false;
    }
  }
  const size_t digits = at_ - begin;
  if (digits == 0 || (digits > 1 && text_[begin] == '0')) return false;
  if (at_ < text_.size() && (text_[at_] == '.' || text_[at_] == 'e' || text_[at_] == 'E')) return false;
  out = v;
  return true;
}

bool JsonScan::StringOrUint() {
  SkipSpace();
  std::string_view s;
  uint64_t v = 0;
  return at_ < text_.size() && text_[at_] == '"' ? String(s) : Uint(v);
}

bool JsonScan::End() {
  SkipSpace();
  return at_ == text_.size();
}

size_t NestedTooDeep(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped byte, a quote included
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kJsonMaxNesting) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::string NlohmannReason(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 5: REASON; last read: '...'".
  const size_t column = what.find("column");
  const size_t colon = what.find(": ", column == std::string::npos ? 0 : column);
  const std::string text = colon == std::string::npos ? what : what.substr(colon + 2);
  return text.substr(0, text.find("; last read"));
}

}  // namespace tally
