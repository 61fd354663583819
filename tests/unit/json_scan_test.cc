// JsonScan: the plain-JSON subset it reads, and each thing outside it that must stop it (and leave
// the text to nlohmann::json).
#include "config/json_scan.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace tally {
namespace {

// The text as one unsigned integer followed by the end, or nothing.
bool Number(std::string_view text, uint64_t& v) {
  JsonScan scan(text);
  return scan.Uint(v) && scan.End();
}

bool OneString(std::string_view text, std::string_view& s) {
  JsonScan scan(text);
  return scan.String(s) && scan.End();
}

TEST_CASE("json_scan: objects, arrays, strings and integers, with JSON's four whitespace bytes") {
  JsonScan scan(" {\"a\" :\t[1, 20 ,\r\n300], \"\": \"x y\", \"c\": {}, \"d\": []}  \n");
  std::vector<std::string> keys;
  std::vector<uint64_t> numbers;
  std::string_view text;
  const bool ok = scan.Object([&](std::string_view key) {
    keys.emplace_back(key);
    if (key == "a") {
      return scan.Array([&] {
        uint64_t v = 0;
        return scan.Uint(v) && (numbers.push_back(v), true);
      });
    }
    if (key == "c") return scan.Object([](std::string_view) { return false; });
    if (key == "d") return scan.Array([] { return false; });
    return scan.String(text);
  });
  CHECK(ok);
  CHECK(scan.End());
  CHECK(keys == std::vector<std::string>{"a", "", "c", "d"});
  CHECK(numbers == std::vector<uint64_t>{1, 20, 300});
  CHECK(text == "x y");
}

TEST_CASE("json_scan: integers are digits without a leading zero, up to 2^64 - 1") {
  uint64_t v = 0;
  CHECK(Number("0", v));
  CHECK(v == 0);
  CHECK(Number("18446744073709551615", v));  // 2^64 - 1
  CHECK(v == UINT64_MAX);
  CHECK_FALSE(Number("18446744073709551616", v));  // nlohmann reads 2^64 as a double
  CHECK_FALSE(Number("99999999999999999999", v));
  CHECK_FALSE(Number("-1", v));
  CHECK_FALSE(Number("-0", v));
  CHECK_FALSE(Number("01", v));  // not JSON
  CHECK_FALSE(Number("1.0", v));
  CHECK_FALSE(Number("1e3", v));
  CHECK_FALSE(Number("1E3", v));
  CHECK_FALSE(Number("", v));
  CHECK_FALSE(Number("true", v));
}

TEST_CASE("json_scan: strings of printable ASCII only: escapes, control and non-ASCII bytes stop it") {
  std::string_view s;
  CHECK(OneString("\"model.layers.0.mlp.up_proj.weight\"", s));
  CHECK(s == "model.layers.0.mlp.up_proj.weight");
  CHECK(OneString("\"\"", s));
  CHECK(s.empty());
  CHECK(OneString("\"~ !/\"", s));
  CHECK_FALSE(OneString("\"a\\\"b\"", s));       // an escaped quote
  CHECK_FALSE(OneString("\"a\\u0062\"", s));     // a \u escape
  CHECK_FALSE(OneString("\"caf\xc3\xa9\"", s));  // UTF-8, valid or not, is nlohmann's to check
  CHECK_FALSE(OneString("\"\xff\"", s));
  CHECK_FALSE(OneString("\"a\tb\"", s));  // a raw control byte is not JSON
  CHECK_FALSE(OneString("\"abc", s));     // unterminated
  CHECK_FALSE(OneString("abc", s));
}

TEST_CASE("json_scan: a structure cut short, a missing separator or trailing bytes stop it") {
  auto skip_all = [](std::string_view text) {
    JsonScan scan(text);
    return scan.Object([&](std::string_view) { return scan.StringOrUint(); }) && scan.End();
  };
  CHECK(skip_all("{\"a\":\"b\",\"c\":7}"));
  CHECK_FALSE(skip_all("{\"a\":\"b\""));
  CHECK_FALSE(skip_all("{\"a\" \"b\"}"));
  CHECK_FALSE(skip_all("{\"a\":\"b\",}"));  // a trailing comma is not JSON
  CHECK_FALSE(skip_all("{\"a\":\"b\"} x"));
  CHECK_FALSE(skip_all(std::string_view("{\"a\":\"b\"}\0", 10)));  // NUL padding is not JSON
  CHECK_FALSE(skip_all("\xef\xbb\xbf{}"));  // a byte-order mark: nlohmann skips it, the scan leaves it
  CHECK_FALSE(skip_all("{\"a\":null}"));
  CHECK_FALSE(skip_all("[]"));
}

}  // namespace
}  // namespace tally
