#include "util/parse.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <span>

#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

struct Multiplier {
  std::string_view suffix;
  uint64_t factor;
};

// One convention for every count, length and limit (docs/commands.md, the number forms): k|K, M, G, T, P
// are decimal (10^3 ...), as SI writes them, B is 10^9 too as model sizes are written ("7B");
// Ki, Mi, Gi, Ti, Pi are binary (2^10 ...), as IEC 80000-13 writes them. Binary first: "8Ki" is
// not read as a number ending in "i".
constexpr Multiplier kSi[] = {
    {"Ki", 1ULL << 10},   {"Mi", 1ULL << 20},       {"Gi", 1ULL << 30},
    {"Ti", 1ULL << 40},   {"Pi", 1ULL << 50},       {"k", 1'000},
    {"K", 1'000},         {"M", 1'000'000},         {"B", 1'000'000'000},
    {"G", 1'000'000'000}, {"T", 1'000'000'000'000}, {"P", 1'000'000'000'000'000},
};
// Lengths in tokens, under the same convention, without B, G, T, P: "2B" tokens in one sequence is a
// typo for --tokens.
constexpr Multiplier kLength[] = {{"Ki", 1ULL << 10}, {"Mi", 1ULL << 20}, {"k", 1'000}, {"K", 1'000}, {"M", 1'000'000}};
// Longer suffixes first, so that "GiB" is not read as "B".
constexpr Multiplier kBytes[] = {{"KiB", 1ULL << 10},
                                 {"MiB", 1ULL << 20},
                                 {"GiB", 1ULL << 30},
                                 {"TiB", 1ULL << 40},
                                 {"PiB", 1ULL << 50},
                                 {"kB", 1'000},
                                 {"KB", 1'000},
                                 {"MB", 1'000'000},
                                 {"GB", 1'000'000'000},
                                 {"TB", 1'000'000'000'000},
                                 {"PB", 1'000'000'000'000'000},
                                 {"B", 1}};

// 2^63 and 2^64: a double at or past them cannot be a count we hold exactly.
constexpr double kTwo63 = 9223372036854775808.0;
constexpr double kTwo64 = 18446744073709551616.0;

// The number before a listed suffix and the suffix's factor; the whole text and 0 when none matches.
std::pair<std::string_view, uint64_t> SplitSuffix(std::string_view text, std::span<const Multiplier> table) {
  for (const Multiplier& m : table) {
    if (text.size() > m.suffix.size() && text.ends_with(m.suffix)) {
      return {text.substr(0, text.size() - m.suffix.size()), m.factor};
    }
  }
  return {text, 0};
}

}  // namespace

std::optional<uint64_t> ReadWhole(std::string_view digits) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

std::optional<double> ReadDouble(std::string_view digits) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

namespace {

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

template <class Fail>
uint64_t InRange(uint64_t value, std::string_view text, CountRange range, const Fail& fail) {
  if (value < range.min) {
    throw fail(Quoted(text) + (value == 0 ? " is zero" : " is less than " + std::to_string(range.min)));
  }
  if (value > range.max) throw fail(Quoted(text) + " is more than " + std::to_string(range.max));
  return value;
}

uint64_t ParseWhole(std::string_view text, std::string_view name, CountRange range, std::span<const Multiplier> table,
                    std::string_view expected) {
  auto fail = [&](const std::string& why) {
    return InputError(std::string(name) + ": " + why + "; expected " + std::string(expected));
  };
  if (text.empty()) throw fail("empty value");
  uint64_t value = 0;
  // Plain digits, as most values are (a sweep reads millions), below 10^18: no suffix to split, and
  // no product to overflow; the range checks below as for any other value.
  if (text.size() <= 18 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    for (char c : text) value = value * 10 + static_cast<uint64_t>(c - '0');
    return InRange(value, text, range, fail);
  }
  auto [digits, factor] = SplitSuffix(text, table);
  if (std::optional<uint64_t> whole = ReadWhole(digits)) {
    if (__builtin_mul_overflow(*whole, factor == 0 ? 1 : factor, &value)) throw fail(Quoted(text) + " is too large");
  } else {
    std::optional<double> real = ReadDouble(digits);
    if (!real) throw fail(Quoted(text) + " is not a number");
    const double x = *real * static_cast<double>(factor == 0 ? 1 : factor);
    if (x < 0) throw fail(Quoted(text) + " is negative");
    if (x != std::floor(x)) throw fail(Quoted(text) + " is not a whole number");
    // The double we read through holds integers exactly only below 2^53; past 2^63 refuse outright.
    if (x >= kTwo63) throw fail(Quoted(text) + " is too large");
    value = static_cast<uint64_t>(x);
  }
  return InRange(value, text, range, fail);
}

}  // namespace

uint64_t ParseCount(std::string_view text, std::string_view name, CountRange range) {
  return ParseWhole(text, name, range, kSi,
                    range.min > 0 ? "a positive whole number such as 8, 4096, 1.5e3, 2k, 4Ki or 7B"
                                  : "a whole number such as 0, 8, 4096, 1.5e3, 2k, 4Ki or 7B");
}

uint64_t ParseLength(std::string_view text, std::string_view name, CountRange range) {
  return ParseWhole(text, name, range, kLength, "a length in tokens such as 512, 4096, 8Ki (8,192) or 8k (8,000)");
}

std::optional<std::string> LengthSuffixNote(std::string_view text, std::string_view name) {
  if (text.empty() || std::string_view("kKM").find(text.back()) == std::string_view::npos) return std::nullopt;
  const std::string_view digits = text.substr(0, text.size() - 1);
  const std::optional<uint64_t> n = ReadWhole(digits);
  if (!n || *n == 0 || *n > (1ULL << 30)) return std::nullopt;
  const bool mega = text.back() == 'M';
  const uint64_t decimal = *n * (mega ? 1'000'000 : 1'000);
  const uint64_t binary = *n * (mega ? 1ULL << 20 : 1ULL << 10);
  if (std::has_single_bit(decimal) || !std::has_single_bit(binary)) return std::nullopt;
  return std::string(name) + " " + std::string(text) + " = " + FormatGrouped(decimal) + " tokens; write " +
         std::string(digits) + (mega ? "Mi" : "Ki") + " for " + FormatGrouped(binary);
}

double ParseReal(std::string_view text, std::string_view name, const RealRange& range) {
  auto fail = [&](std::string_view why) {
    return InputError(std::string(name) + ": " + Quoted(text) + " is " + std::string(why));
  };
  auto [digits, factor] = range.si ? SplitSuffix(text, kSi) : std::pair<std::string_view, uint64_t>{text, 0};
  std::optional<double> real = ReadDouble(digits);
  if (!real) throw fail("not " + std::string(range.what));
  const double x = *real * static_cast<double>(factor == 0 ? 1 : factor);
  if (!std::isfinite(x)) throw fail("too large");
  const bool below = range.lo_open ? x <= range.lo : x < range.lo;
  const bool above = range.hi_open ? x >= range.hi : x > range.hi;
  if (below || above) throw fail("not " + std::string(range.what));
  return x;
}

SiNumber ParseSiNumber(std::string_view text, std::string_view name) {
  auto [digits, factor] = SplitSuffix(text, kSi);
  SiNumber n;
  if (std::optional<uint64_t> whole = ReadWhole(digits)) {
    uint64_t product = 0;
    if (!__builtin_mul_overflow(*whole, factor == 0 ? 1 : factor, &product)) {
      n.exact = product;
      n.value = static_cast<double>(product);
      return n;
    }
  }
  n.value =
      ParseReal(text, name, {.lo = 0, .what = "a number; expected e.g. 7B, 1.5e12, 2T, 80k, 64Ki or 0.35", .si = true});
  // A whole number written in scientific form ("1.5e12") is exact too, below 2^64.
  if (n.value == std::floor(n.value) && n.value < kTwo64) n.exact = static_cast<uint64_t>(n.value);
  return n;
}

double ParsePercent(std::string_view text, std::string_view name) {
  std::optional<double> pct = text.ends_with('%') ? ReadDouble(text.substr(0, text.size() - 1)) : std::nullopt;
  if (!pct || *pct < 0 || *pct > 1000) {
    throw InputError(std::string(name) + ": " + Quoted(text) + " is not a percentage such as 10%");
  }
  return *pct / 100;
}

uint64_t ParseBytes(std::string_view text, std::string_view name, bool zero) {
  auto fail = [&](const std::string& why) {
    return InputError(std::string(name) + ": " + why +
                      "; expected a size such as 80GiB, 80GB, 512MiB, 1.5TiB or 4096B");
  };
  auto [number, factor] = SplitSuffix(text, kBytes);
  while (!number.empty() && number.back() == ' ') number.remove_suffix(1);  // "80 GiB"
  if (factor == 0) {
    if (ReadDouble(number)) {
      throw InputError(std::string(name) + ": " + Quoted(text) + " has no unit; write " + std::string(text) +
                       "GiB (x 2^30 bytes), " + std::string(text) + "GB (x 10^9) or " + std::string(text) +
                       "B (bytes)");
    }
    throw fail(Quoted(text) + " is not a size");
  }
  if (std::optional<uint64_t> whole = ReadWhole(number)) {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(*whole, factor, &bytes) || bytes >= (1ULL << 63)) {
      throw fail(Quoted(text) + " is too large");
    }
    if (bytes == 0 && !zero) throw fail(Quoted(text) + " is not positive");
    return bytes;
  }
  std::optional<double> real = ReadDouble(number);
  if (!real) throw fail(Quoted(text) + " is not a size");
  const double value = *real * static_cast<double>(factor);
  if (value <= 0) throw fail(Quoted(text) + " is not positive");
  // Truncated, it would be 0 bytes, which callers read as "no limit".
  if (value < 1) throw fail(Quoted(text) + " is less than one byte");
  if (value >= kTwo63) throw fail(Quoted(text) + " is too large");
  return static_cast<uint64_t>(value);  // whole bytes; a fraction of a byte is dropped
}

double ParseDuration(std::string_view text, std::string_view name, char default_unit, double max_s,
                     std::string_view what) {
  auto fail = [&] {
    return InputError(std::string(name) + ": " + Quoted(text) + " is not " +
                      std::string(what.empty() ? "a duration; expected e.g. 14, 14d, 36h, 90m, 600s or 2w" : what));
  };
  char unit = default_unit;
  std::string_view number = text;
  if (!text.empty() && std::string_view("smhdw").find(text.back()) != std::string_view::npos) {
    unit = text.back();
    number.remove_suffix(1);
  }
  std::optional<double> v = ReadDouble(number);
  if (!v || *v <= 0) throw fail();
  switch (unit) {
    case 'm':
      *v *= 60;
      break;
    case 'h':
      *v *= 3600;
      break;
    case 'd':
      *v *= 86400;
      break;
    case 'w':
      *v *= 604800;
      break;
    default:
      break;
  }
  if (!std::isfinite(*v) || *v > max_s) throw fail();  // 1e308w: too large to be a number of seconds
  return *v;
}

std::vector<std::string> SplitList(std::string_view text, std::string_view name) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.emplace_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (items.back().empty()) throw InputError(std::string(name) + ": empty item in " + Quoted(text));
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

}  // namespace tally
