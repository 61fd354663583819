// util/parse.h: every number form and every error text, asserted word for word. Expected values are
// the arithmetic of the forms themselves (SI 10^3n, IEC 2^10n, for counts and lengths alike), done by hand.
#include "util/parse.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "util/error.h"

namespace tally {
namespace {

const std::string kCountForms = "; expected a positive whole number such as 8, 4096, 1.5e3, 2k, 4Ki or 7B";
const std::string kSizeForms = "; expected a size such as 80GiB, 80GB, 512MiB, 1.5TiB or 4096B";

TEST_CASE("parse: counts take decimal SI multipliers up to P") {
  CHECK(ParseCount("8", "--batch") == 8);
  CHECK(ParseCount("4096", "--batch") == 4096);
  CHECK(ParseCount("1.5e3", "--batch") == 1500);
  CHECK(ParseCount("2k", "--batch") == 2000);
  CHECK(ParseCount("2K", "--batch") == 2000);
  CHECK(ParseCount("3M", "--batch") == 3'000'000);
  CHECK(ParseCount("7B", "--batch") == 7'000'000'000);
  CHECK(ParseCount("7G", "--batch") == 7'000'000'000);
  CHECK(ParseCount("2T", "--batch") == 2'000'000'000'000);
  // issue 13: 2P was refused here while check --max params.total=1P passed.
  CHECK(ParseCount("2P", "--batch") == 2'000'000'000'000'000);
  CHECK(ParseCount("1.5k", "--batch") == 1500);
  CHECK(ParseCount("18446744073709551615", "--batch") == 18'446'744'073'709'551'615ULL);  // 2^64 - 1
  CHECK(ParseCount("0", "--lora", {.min = 0}) == 0);
}

TEST_CASE("parse: count errors name the flag and the accepted forms") {
  CHECK_THROWS_WITH_AS(ParseCount("0", "--batch"), ("tally: error: --batch: '0' is zero" + kCountForms).c_str(),
                       InputError);
  CHECK_THROWS_WITH_AS(ParseCount("-1", "--batch"), ("tally: error: --batch: '-1' is negative" + kCountForms).c_str(),
                       InputError);
  CHECK_THROWS_WITH_AS(ParseCount("2.5", "--batch"),
                       ("tally: error: --batch: '2.5' is not a whole number" + kCountForms).c_str(), InputError);
  CHECK_THROWS_WITH_AS(ParseCount("lots", "--tp"), ("tally: error: --tp: 'lots' is not a number" + kCountForms).c_str(),
                       InputError);
  CHECK_THROWS_WITH_AS(ParseCount("", "--tp"), ("tally: error: --tp: empty value" + kCountForms).c_str(), InputError);
  CHECK_THROWS_WITH_AS(ParseCount("1e30", "--tp"), ("tally: error: --tp: '1e30' is too large" + kCountForms).c_str(),
                       InputError);
  // 2^64 - 1 times 10^3 overflows in the exact path.
  CHECK_THROWS_WITH_AS(ParseCount("18446744073709551615k", "--tp"),
                       ("tally: error: --tp: '18446744073709551615k' is too large" + kCountForms).c_str(), InputError);
  CHECK_THROWS_WITH_AS(ParseCount("5000", "--threads", {.min = 1, .max = 4096}),
                       ("tally: error: --threads: '5000' is more than 4096" + kCountForms).c_str(), InputError);
  CHECK_THROWS_WITH_AS(ParseCount("1", "--tp", {.min = 2}),
                       ("tally: error: --tp: '1' is less than 2" + kCountForms).c_str(), InputError);
  CHECK_THROWS_AS(ParseCount("nan", "--seq"), InputError);
  CHECK_THROWS_AS(ParseCount("inf", "--seq"), InputError);
  CHECK_THROWS_AS(ParseCount("2kB", "--seq"), InputError);
  CHECK_THROWS_AS(ParseCount("k", "--seq"), InputError);
}

TEST_CASE("parse: one suffix convention: k, M, G decimal, Ki, Mi, Gi binary, for counts and lengths") {
  CHECK(ParseCount("4Ki", "--batch") == 4096);                   // 4 · 2^10
  CHECK(ParseCount("2Mi", "--batch") == 2'097'152);              // 2 · 2^20
  CHECK(ParseCount("1Gi", "--batch") == 1'073'741'824);          // 2^30
  CHECK(ParseCount("1Ti", "--batch") == 1'099'511'627'776);      // 2^40
  CHECK(ParseCount("1Pi", "--batch") == 1'125'899'906'842'624);  // 2^50
  CHECK(ParseCount("1.5Ki", "--batch") == 1536);                 // 1.5 · 1,024
  CHECK(ParseLength("2048", "--seq") == 2048);
  CHECK(ParseLength("32k", "--seq") == 32'000);    // 32 · 1,000: k is SI here too
  CHECK(ParseLength("32Ki", "--seq") == 32'768);   // 32 · 1,024
  CHECK(ParseLength("128K", "--seq") == 128'000);  // K is k
  CHECK(ParseLength("1.5Ki", "--seq") == 1536);    // 1.5 · 1,024
  CHECK(ParseLength("1.5k", "--seq") == 1500);
  CHECK(ParseLength("1M", "--seq") == 1'000'000);
  CHECK(ParseLength("1Mi", "--seq") == 1'048'576);  // 1,024^2
  CHECK(ParseLength("1e3", "--seq") == 1000);
  CHECK_THROWS_WITH_AS(
      ParseLength("0.3Ki", "--prompt"),  // 307.2
      "tally: error: --prompt: '0.3Ki' is not a whole number; expected a length in tokens such as 512, "
      "4096, 8Ki (8,192) or 8k (8,000)",
      InputError);
  // Lengths take no B, G, T: "2B" tokens in one sequence is a typo for --tokens.
  CHECK_THROWS_AS(ParseLength("2B", "--seq"), InputError);
  CHECK_THROWS_AS(ParseLength("2Gi", "--seq"), InputError);
  // Limits and rates take them too.
  CHECK(ParseSiNumber("64Ki", "params.total").exact == 65'536);
  CHECK(ParseReal("2Ki", "--achieved", {.lo = 0, .si = true}) == 2048.0);
}

TEST_CASE("parse: a decimal length that a binary suffix would make a power of two gets a note") {
  CHECK(LengthSuffixNote("8k", "--seq") == "--seq 8k = 8,000 tokens; write 8Ki for 8,192");
  CHECK(LengthSuffixNote("32K", "--seq") == "--seq 32K = 32,000 tokens; write 32Ki for 32,768");
  CHECK(LengthSuffixNote("1M", "--prompt") == "--prompt 1M = 1,000,000 tokens; write 1Mi for 1,048,576");
  CHECK(LengthSuffixNote("1k", "--generate") == "--generate 1k = 1,000 tokens; write 1Ki for 1,024");
  CHECK_FALSE(LengthSuffixNote("8Ki", "--seq"));   // binary already
  CHECK_FALSE(LengthSuffixNote("8192", "--seq"));  // no suffix
  CHECK_FALSE(LengthSuffixNote("3k", "--seq"));    // 3,072 is no power of two either
  CHECK_FALSE(LengthSuffixNote("1.5k", "--seq"));  // 1,536: no power of two
  CHECK_FALSE(LengthSuffixNote("0k", "--seq"));
}

TEST_CASE("parse: reals, ratios and probabilities") {
  CHECK(ParseReal("0.4", "--mfu", kRatio) == 0.4);
  CHECK(ParseReal("1", "--mfu", kRatio) == 1.0);
  CHECK(ParseReal("0", "--dropout", kProbability) == 0.0);
  CHECK(ParseReal("-1e-8", "--value", {}) == -1e-8);
  CHECK(ParseReal("400T", "--achieved", {.lo = 0, .lo_open = true, .si = true}) == 4e14);
  CHECK_THROWS_WITH_AS(ParseReal("0", "--mfu", kRatio),
                       "tally: error: --mfu: '0' is not a ratio in (0, 1], such as 0.4", InputError);
  CHECK_THROWS_WITH_AS(ParseReal("1.5", "--mbu", kRatio),
                       "tally: error: --mbu: '1.5' is not a ratio in (0, 1], such as 0.4", InputError);
  CHECK_THROWS_WITH_AS(ParseReal("1", "--dropout", kProbability),
                       "tally: error: --dropout: '1' is not a probability in [0, 1)", InputError);
  CHECK_THROWS_WITH_AS(ParseReal("lots", "--value", {.what = "a number; expected e.g. 1e-8, 65520 or 0.1"}),
                       "tally: error: --value: 'lots' is not a number; expected e.g. 1e-8, 65520 or 0.1", InputError);
  CHECK_THROWS_WITH_AS(ParseReal("inf", "--value", {}), "tally: error: --value: 'inf' is not a number", InputError);
  CHECK_THROWS_WITH_AS(ParseReal("1e308T", "--tokens", {.si = true}), "tally: error: --tokens: '1e308T' is too large",
                       InputError);
  CHECK_THROWS_AS(ParseReal("400T", "--mfu", kRatio), InputError);  // no multipliers unless asked
}

TEST_CASE("parse: SI numbers for limits are exact where whole") {
  CHECK(ParseSiNumber("7B", "params.total").exact == 7'000'000'000);
  CHECK(ParseSiNumber("1P", "params.total").exact == 1'000'000'000'000'000);
  CHECK(ParseSiNumber("1.5e12", "flops.step").exact == 1'500'000'000'000);
  CHECK(ParseSiNumber("10e9", "flops.step").exact == 10'000'000'000);
  const SiNumber ratio = ParseSiNumber("0.35", "x");
  CHECK(!ratio.exact.has_value());
  CHECK(ratio.value == 0.35);
  CHECK(ParseSiNumber("1e290T", "--tokens").value == 1e290 * 1e12);
  CHECK_THROWS_WITH_AS(
      ParseSiNumber("-1", "params.total"),
      "tally: error: params.total: '-1' is not a number; expected e.g. 7B, 1.5e12, 2T, 80k, 64Ki or 0.35", InputError);
}

TEST_CASE("parse: percentages") {
  CHECK(ParsePercent("10%", "--overhead") == 0.1);
  CHECK(ParsePercent("0%", "--overhead") == 0.0);
  CHECK_THROWS_WITH_AS(ParsePercent("2000%", "--overhead"),
                       "tally: error: --overhead: '2000%' is not a percentage such as 10%", InputError);
  CHECK_THROWS_WITH_AS(ParsePercent("x%", "--overhead"),
                       "tally: error: --overhead: 'x%' is not a percentage such as 10%", InputError);
}

TEST_CASE("parse: byte sizes need a unit") {
  CHECK(ParseBytes("80GiB", "--memory") == 85'899'345'920);  // 80 · 2^30
  CHECK(ParseBytes("80GB", "--memory") == 80'000'000'000);   // 80 · 10^9
  CHECK(ParseBytes("80 GiB", "--memory") == 85'899'345'920);
  CHECK(ParseBytes("512MiB", "--memory") == 536'870'912);         // 512 · 2^20
  CHECK(ParseBytes("1.5TiB", "--memory") == 1'649'267'441'664);   // 1.5 · 2^40
  CHECK(ParseBytes("2PB", "--memory") == 2'000'000'000'000'000);  // 2 · 10^15
  CHECK(ParseBytes("4KiB", "--memory") == 4096);
  CHECK(ParseBytes("4kB", "--memory") == 4000);
  CHECK(ParseBytes("4096B", "--memory") == 4096);
  CHECK(ParseBytes("0.5KiB", "--memory") == 512);
  CHECK(ParseBytes("1.5B", "--memory") == 1);  // a fraction of a byte is dropped
  // issue 18: --memory 80 was 80 bytes.
  CHECK_THROWS_WITH_AS(ParseBytes("80", "--memory"),
                       "tally: error: --memory: '80' has no unit; write 80GiB (x 2^30 bytes), 80GB (x 10^9) or 80B "
                       "(bytes)",
                       InputError);
  CHECK_THROWS_WITH_AS(ParseBytes("lots", "--memory"),
                       ("tally: error: --memory: 'lots' is not a size" + kSizeForms).c_str(), InputError);
  CHECK_THROWS_WITH_AS(ParseBytes("0.35B", "--memory"),
                       ("tally: error: --memory: '0.35B' is less than one byte" + kSizeForms).c_str(), InputError);
  CHECK_THROWS_WITH_AS(ParseBytes("0GiB", "--memory"),
                       ("tally: error: --memory: '0GiB' is not positive" + kSizeForms).c_str(), InputError);
  CHECK_THROWS_WITH_AS(ParseBytes("9000PiB", "--memory"),
                       ("tally: error: --memory: '9000PiB' is too large" + kSizeForms).c_str(), InputError);
  CHECK_THROWS_AS(ParseBytes("GiB", "--memory"), InputError);
  CHECK_THROWS_AS(ParseBytes("", "--memory"), InputError);
}

TEST_CASE("parse: durations") {
  CHECK(ParseDuration("14", "--days", 'd') == 14 * 86400.0);
  CHECK(ParseDuration("36h", "--days", 'd') == 36 * 3600.0);
  CHECK(ParseDuration("90m", "--hours", 'h') == 5400.0);
  CHECK(ParseDuration("600s", "--hours", 'h') == 600.0);
  CHECK(ParseDuration("2w", "--days", 'd') == 2 * 604800.0);
  CHECK(ParseDuration("1e308", "--seconds", 's') == 1e308);
  CHECK(ParseDuration("0.2", "--budget", 's', 3600) == 0.2);
  CHECK_THROWS_WITH_AS(ParseDuration("1x", "--days", 'd'),
                       "tally: error: --days: '1x' is not a duration; expected e.g. 14, 14d, 36h, 90m, 600s or 2w",
                       InputError);
  // Finite text, infinite seconds.
  CHECK_THROWS_WITH_AS(ParseDuration("1e308", "--hours", 'h'),
                       "tally: error: --hours: '1e308' is not a duration; expected e.g. 14, 14d, 36h, 90m, 600s or 2w",
                       InputError);
  CHECK_THROWS_AS(ParseDuration("1e308w", "--days", 'd'), InputError);
  CHECK_THROWS_AS(ParseDuration("", "--days", 'd'), InputError);
  CHECK_THROWS_AS(ParseDuration("0", "--days", 'd'), InputError);
  CHECK_THROWS_WITH_AS(ParseDuration("2h", "--budget", 's', 3600, "a time in seconds such as 0.2 or 2s (at most 3600)"),
                       "tally: error: --budget: '2h' is not a time in seconds such as 0.2 or 2s (at most 3600)",
                       InputError);
}

TEST_CASE("parse: comma lists refuse empty items") {
  CHECK(SplitList("a", "--keys") == std::vector<std::string>{"a"});
  CHECK(SplitList("1,2,4", "--batch") == std::vector<std::string>{"1", "2", "4"});
  CHECK_THROWS_WITH_AS(SplitList("1,,4", "--batch"), "tally: error: --batch: empty item in '1,,4'", InputError);
  CHECK_THROWS_WITH_AS(SplitList("1,", "--batch"), "tally: error: --batch: empty item in '1,'", InputError);
  CHECK_THROWS_WITH_AS(SplitList(",1", "--batch"), "tally: error: --batch: empty item in ',1'", InputError);
  CHECK_THROWS_WITH_AS(SplitList("", "--keys"), "tally: error: --keys: empty item in ''", InputError);
}

}  // namespace
}  // namespace tally
