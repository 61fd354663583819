// Counts at the edges of 64-bit arithmetic: every count and byte figure is exact or an InputError,
// never a wrapped number. Values are derived by hand in the comments.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "report/format.h"
#include "sections/estimate_report.h"
#include "unit/test_util.h"
#include "util/checked_math.h"
#include "util/dtype.h"
#include "util/parse.h"
#include "util/units.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

constexpr uint64_t kTwo63 = uint64_t{1} << 63;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();  // 2^64 - 1
const char* const kOverflow = "would exceed 2^64 - 1";

uint64_t U64(const Report& r, const std::string& key) {
  const ReportNode* node = r.Find(key);
  REQUIRE(node != nullptr);
  return std::get<uint64_t>(node->value);
}

TEST_CASE("arithmetic: checked sums and products at 2^63 and 2^64") {
  CHECK(CheckedMul(uint64_t{1} << 31, uint64_t{1} << 32, "x") == kTwo63);
  CHECK(CheckedAdd(kTwo63, kTwo63 - 1, "x") == kMax);
  // (2^32 - 1)(2^32 + 1) = 2^64 - 1, the largest exact product.
  CHECK(CheckedMul(0xFFFF'FFFFULL, 0x1'0000'0001ULL, "x") == kMax);
  CHECK_THROWS_WITH_AS(CheckedAdd(kMax, 1, "the sum"),
                       "tally: error: the sum would exceed 2^64 - 1 and cannot be counted exactly; reduce the "
                       "model or the batch/sequence",
                       InputError);
  CHECK_THROWS_AS(CheckedMul(uint64_t{1} << 32, uint64_t{1} << 32, "x"), InputError);  // 2^64
  CHECK_THROWS_AS(CheckedProduct({uint64_t{1} << 21, uint64_t{1} << 21, uint64_t{1} << 22}, "x"), InputError);
  CHECK(CheckedProduct({uint64_t{1} << 21, uint64_t{1} << 21, uint64_t{1} << 21}, "x") == kTwo63);
}

TEST_CASE("arithmetic: bytes of a tensor at 2^63 and 2^64") {
  CHECK(BytesOf(uint64_t{1} << 61, DType::kFp32, "x") == kTwo63);              // 2^61 · 4
  CHECK_THROWS_AS(BytesOf(uint64_t{1} << 62, DType::kFp32, "x"), InputError);  // 2^64
  // int4: (2^64 - 1) · 4 bits = 2^63 - 0.5 bytes, rounded up to whole bytes: 2^63.
  CHECK(BytesOf(kMax, DType::kInt4, "x") == kTwo63);
  CHECK_THROWS_AS(BytesOf(kMax, DType::kBf16, "x"), InputError);
}

TEST_CASE("arithmetic: counts on the command line at 2^63 and 2^64") {
  // Plain integers are read exactly, up to 2^64 - 1; past that they are refused, not rounded.
  CHECK(ParseCount("9223372036854775807", "--batch") == kTwo63 - 1);
  CHECK(ParseCount("9223372036854775808", "--batch") == kTwo63);
  CHECK(ParseCount("18446744073709551615", "--batch") == kMax);
  CHECK_THROWS_AS(ParseCount("18446744073709551616", "--batch"), InputError);
  // Through a double, 2^63 and above cannot be exact: refused.
  CHECK_THROWS_AS(ParseCount("9.3e18", "--batch"), InputError);
  CHECK(ParseSiNumber("18446744073709551615", "--tokens").exact == kMax);
  // Read as a double, and said so.
  CHECK(!ParseSiNumber("18446744073709551616", "--tokens").exact.has_value());
}

TEST_CASE("arithmetic: config sizes at 2^63") {
  const std::string head = "family: transformer\nvocab_size: ";
  const std::string tail = "\ncontext_length: 128\nd_model: 64\nn_layers: 2\nn_heads: 4\nd_ff: 256\n";
  // 2^63 - 1 is read; its embedding (2^63 - 1) · 64 does not fit, which is an error, not a wrap.
  ModelSpec spec = LoadModelText("edge.yaml", head + "9223372036854775807" + tail);
  CHECK(spec.transformer.vocab_size == kTwo63 - 1);
  CHECK_THROWS_WITH_AS(ResolvedGraph(spec), doctest::Contains(kOverflow), InputError);
  CHECK_THROWS_WITH_AS(LoadModelText("edge.yaml", head + "9223372036854775808" + tail),
                       "edge.yaml:2:13: error: 'vocab_size' is too large: 9223372036854775808 (at most 2^63 - 1)",
                       InputError);
}

// One linear layer 10^8 -> 10^7 without bias: exactly 10^15 parameters.
constexpr const char* kPetaModel = R"(
family: sequential
input: [100000000]
layers:
  - linear: {out: 10000000, bias: false}
)";

TEST_CASE("arithmetic: a 10^15-parameter model is counted exactly") {
  const ModelSpec spec = LoadModelText("peta.yaml", kPetaModel);
  SUBCASE("batch 1: exact") {
    const Settings settings;
    const Report r = EstimateReport(*std::make_unique<Evaluation>(spec), settings, {.memory = true});
    CHECK(U64(r, "params.total") == 1'000'000'000'000'000);
    // Forward: 2·m·n·k = 2 · 1 · 10^7 · 10^8. Backward: dW only (the input needs no gradient).
    CHECK(U64(r, "flops.forward") == 2'000'000'000'000'000);
    CHECK(U64(r, "flops.backward") == 2'000'000'000'000'000);
    CHECK(U64(r, "flops.step") == 4'000'000'000'000'000);
    // fp32 weights: 4 bytes · 10^15; still far below 2^64.
    CHECK(U64(r, "memory.infer.weights") >= 2'000'000'000'000'000);
    // The JSON keeps the integers exact (not 2e+15).
    const nlohmann::json doc = nlohmann::json::parse(FormatJson(r));
    CHECK(doc["params"]["total"].get<uint64_t>() == 1'000'000'000'000'000);
    CHECK(FormatJson(r).find("\"forward\": 2000000000000000") != std::string::npos);
  }
  SUBCASE("batch 10^4: 2·10^19 FLOPs is past 2^64, an error") {
    const Settings settings{.batch = 10'000, .micro_batch = 10'000};
    CHECK_THROWS_WITH_AS(EstimateReport(*std::make_unique<Evaluation>(spec), settings, {}),
                         doctest::Contains(kOverflow), InputError);
  }
}

TEST_CASE("arithmetic: a transformer at sequence 10^7") {
  SUBCASE("small: exact FLOPs") {
    const ModelSpec spec = LoadModelText("long.yaml", R"(
family: transformer
vocab_size: 1000
context_length: 16
d_model: 64
n_layers: 1
n_heads: 1
d_ff: 256
bias: false
position: rope
)");
    const Settings settings{.seq = 10'000'000};
    const Report r = EstimateReport(*std::make_unique<Evaluation>(spec), settings, {});
    // T = 10^7 tokens. Per token 2·(64·192 qkv + 64·64 out + 64·256 up + 256·64 down + 64·1000 head)
    // = 2 · 113,152; attention QKᵀ and AV: 2 · 2·T²·64 = 256·T².
    const uint64_t t = 10'000'000;
    CHECK(U64(r, "flops.forward") == 2 * 113'152 * t + 256 * t * t);  // 25,602,263,040,000,000
  }
  SUBCASE("Llama-2 7B: attention alone passes 2^64, an error") {
    // 32 layers · 2 · 2 · 32 heads · (10^7)² · 128 = 2.6·10^19 > 2^64 - 1.
    const ModelSpec spec = ResolveModel("llama-2-7b");
    const Settings settings{.seq = 10'000'000};
    CHECK_THROWS_WITH_AS(EstimateReport(*std::make_unique<Evaluation>(spec), settings, {}),
                         doctest::Contains(kOverflow), InputError);
  }
}

TEST_CASE("arithmetic: JSON writes 64-bit counts as exact integers") {
  Report r;
  r.Group("edge");
  r.Set("edge.two63", "", kTwo63 + 1, Unit::kCount);
  r.Set("edge.max", "", kMax, Unit::kByte);
  const std::string text = FormatJson(r);
  CHECK(text.find("\"two63\": 9223372036854775809") != std::string::npos);
  CHECK(text.find("\"max\": 18446744073709551615") != std::string::npos);
  const nlohmann::json doc = nlohmann::json::parse(text);
  CHECK(doc["edge"]["two63"].is_number_unsigned());
  CHECK(doc["edge"]["two63"].get<uint64_t>() == kTwo63 + 1);
  CHECK(doc["edge"]["max"].get<uint64_t>() == kMax);
  CHECK(GetKey(r, "edge.max") == "18446744073709551615\n");
}

}  // namespace
}  // namespace tally
