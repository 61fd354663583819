// A one-pass reader of plain JSON, the subset that safetensors headers and indexes are written in:
// objects, arrays, strings without escapes or non-ASCII bytes, unsigned integers. It builds no tree
// and words no error: anything else stops it, and the caller reads the text with nlohmann::json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tally {

class JsonScan {
 public:
  explicit JsonScan(std::string_view text) : text_(text) {}

  // `member(key)` reads each member's value from this scan; false from it stops the scan.
  template <typename Member>
  bool Object(Member&& member) {
    if (!Take('{')) return false;
    if (Take('}')) return true;
    do {
      std::string_view key;
      if (!String(key) || !Take(':') || !member(key)) return false;
    } while (Take(','));
    return Take('}');
  }

  // `element()` reads each element; false from it stops the scan.
  template <typename Element>
  bool Array(Element&& element) {
    if (!Take('[')) return false;
    if (Take(']')) return true;
    do {
      if (!element()) return false;
    } while (Take(','));
    return Take(']');
  }

  // `out` views the text between the quotes.
  bool String(std::string_view& out);
  // Digits only, without a leading zero (unless the number is 0), and at most 2^64 - 1.
  bool Uint(uint64_t& out);
  // A string or an unsigned integer, whichever comes next; its value is not kept.
  bool StringOrUint();
  // True when only whitespace is left.
  bool End();

 private:
  void SkipSpace();
  bool Take(char c);  // after whitespace; false (taking nothing) when another byte is next

  std::string_view text_;
  size_t at_ = 0;
};

// The deepest that JSON values may nest, as deep as yaml-cpp lets a config nest (depthguard.h's
// max_depth): a deeper header or index is refused before nlohmann::json builds a tree of it.
inline constexpr size_t kJsonMaxNesting = 2000;

// The byte offset of the '[' or '{' that opens level kJsonMaxNesting + 1 (brackets inside strings
// are not counted), or npos when the text nests no deeper than that.
size_t NestedTooDeep(std::string_view text);

// nlohmann::json's exception text worded for a diagnostic: the reason alone, without the exception's
// id, its line and column (the caller gives the byte) or its quote of the input (which may be any bytes).
std::string NlohmannReason(const std::string& what);

}  // namespace tally
