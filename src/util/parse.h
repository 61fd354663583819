// Text a person wrote → numbers and lists: the one reader of numbers on the command line and in
// budget files. Every reader takes the name its error starts with (a flag "--batch" or a key
// "params.total") and the range it accepts; errors are InputErrors that name the accepted forms.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tally {

// The lexical primitives, the one place text becomes a number (the parsers below and the config
// readers, which word their own errors at a file position, all read through them):
// digits only ("4096") as an exact integer, nullopt when not digits or past 2^64 - 1 ...
std::optional<uint64_t> ReadWhole(std::string_view digits);
// ... and a finite decimal or scientific number ("1.5e3", "-2"), not inf or nan.
std::optional<double> ReadDouble(std::string_view digits);

// The whole numbers a reader accepts.
struct CountRange {
  uint64_t min = 1;
  uint64_t max = std::numeric_limits<uint64_t>::max();
};

// A count (batch, devices, threads, parameters): "8", "4096", "1.5e3", or with a multiplier, one
// convention for every number: decimal k|K 10^3, M 10^6, B|G 10^9, T 10^12, P 10^15 ("2k", "7B",
// "2P") and binary Ki 2^10, Mi 2^20, Gi 2^30, Ti 2^40, Pi 2^50 ("4Ki" = 4,096).
uint64_t ParseCount(std::string_view text, std::string_view name, CountRange range = {});

// A length in tokens (--seq, --prompt, --generate): a count under the same convention ("8k" is
// 8,000 and "8Ki" 8,192), with k|K, M, Ki, Mi only.
uint64_t ParseLength(std::string_view text, std::string_view name, CountRange range = {});

// Context windows are powers of two that people name in thousands ("8k" for 8,192): for a length
// whose decimal suffix gives a non-power of two where the binary one gives a power of two, the
// one-line note "NAME 8k = 8,000 tokens; write 8Ki for 8,192"; nullopt otherwise.
std::optional<std::string> LengthSuffixNote(std::string_view text, std::string_view name);

// The real numbers a reader accepts, and the words its error uses: NAME: 'TEXT' is not WHAT.
struct RealRange {
  double lo = -std::numeric_limits<double>::max();
  double hi = std::numeric_limits<double>::max();
  bool lo_open = false;
  bool hi_open = false;
  std::string_view what = "a number";
  bool si = false;  // accept the multipliers of ParseCount ("400T", "2.5e12", "64Ki")
};
inline constexpr RealRange kRatio = {0, 1, true, false, "a ratio in (0, 1], such as 0.4"};
inline constexpr RealRange kProbability = {0, 1, false, true, "a probability in [0, 1)"};

// A finite real in `range`.
double ParseReal(std::string_view text, std::string_view name, const RealRange& range);

// A non-negative number with an optional multiplier of ParseCount (a limit, a rate, a token count):
// "7B", "1.5e12", "1P", "0.35", "64Ki". `exact` holds it when it is a whole number below 2^64 ("7B" included).
struct SiNumber {
  double value = 0;
  std::optional<uint64_t> exact;
};
SiNumber ParseSiNumber(std::string_view text, std::string_view name);

// A percentage "10%" (0 to 1000) as a fraction (0.1).
double ParsePercent(std::string_view text, std::string_view name);

// A byte size with its unit: "80GiB", "80GB", "1.5TiB", "512MiB", "4096B". IEC units (KiB … PiB)
// are powers of 1,024, SI units (kB … PB) powers of 1,000. A bare number ("80") is an error: it
// would be 80 bytes, never what was meant; a byte count is written with B. `zero`: 0B is a size (a
// runtime line the user turns off), else refused.
uint64_t ParseBytes(std::string_view text, std::string_view name, bool zero = false);

// A duration in seconds: a number in `default_unit` ("14"), or with a unit: 600s, 90m, 36h, 14d,
// 2w. Positive, at most `max_s`. `what` replaces "a duration; expected e.g. ..." in the error.
double ParseDuration(std::string_view text, std::string_view name, char default_unit,
                     double max_s = std::numeric_limits<double>::max(), std::string_view what = {});

// A comma list "a,b,c"; an empty item ("a,,b", "a,", "") is an error naming `name`.
std::vector<std::string> SplitList(std::string_view text, std::string_view name);

}  // namespace tally
