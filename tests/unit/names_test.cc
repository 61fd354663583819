// Enum name tables (util/names.h, config/names.h and the tables beside their enums): every value
// has one name, every name parses back to its value, and help and completion list the same names.
#include "config/names.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "cli/completion.h"
#include "cli/fit_command.h"
#include "cli/settings_flags.h"
#include "config/load_config.h"
#include "graph/layer_names.h"
#include "report/format.h"
#include "util/any_case.h"
#include "util/dtype.h"
#include "util/error.h"

namespace tally {
namespace {

// parse(Name(x)) == x for every entry, names unique, and every value of the enum in the table:
// `n_values` is the enum's enumerator count, counted by hand from its declaration.
template <typename E>
void CheckRoundTrip(size_t n_values) {
  std::set<std::string> names;
  std::set<E> values;
  for (const NameEntry<E>& e : NameTable<E>()) {
    CAPTURE(e.name);
    CHECK(FindName<E>(e.name) == e.value);
    CHECK(Lower(e.name) == e.name);  // lower case: ParseNameAnyCase lowers what it is given
    CHECK(std::string(Name(e.value)) == e.name);
    CHECK(names.insert(std::string(e.name)).second);
    CHECK(values.insert(e.value).second);
  }
  CHECK(values.size() == n_values);
  for (size_t i = 0; i < n_values; ++i) CHECK(values.count(static_cast<E>(i)) == 1);
}

TEST_CASE("names: every table round-trips") {
  CheckRoundTrip<DType>(8);
  CheckRoundTrip<UnitSystem>(2);
  CheckRoundTrip<OutputFormat>(4);
  CheckRoundTrip<Mode>(3);
  CheckRoundTrip<Precision>(9);
  CheckRoundTrip<Optimizer>(9);
  CheckRoundTrip<Recompute>(4);
  CheckRoundTrip<OptimizerImpl>(3);
  CheckRoundTrip<LossKernel>(3);
  CheckRoundTrip<Attention>(2);
  CheckRoundTrip<Quant>(6);
  CheckRoundTrip<Family>(2);
  CheckRoundTrip<AttentionKind>(5);
  CheckRoundTrip<MlpKind>(6);
  CheckRoundTrip<NormKind>(2);
  CheckRoundTrip<PositionKind>(4);
  CheckRoundTrip<ActivationKind>(8);
  CheckRoundTrip<DropoutMask>(2);
  CheckRoundTrip<LayerKind>(21);
  CheckRoundTrip<Component>(20);
  CheckRoundTrip<Solve>(4);
}

TEST_CASE("names: aliases parse, print as the canonical name") {
  CHECK(FindName<DType>("bfloat16") == DType::kBf16);
  CHECK(FindName<DType>("fp8") == DType::kFp8E4m3);
  CHECK(FindName<DType>("half") == DType::kFp16);
  CHECK(std::string(Name(*FindName<DType>("float32"))) == "fp32");
  CHECK(!FindName<DType>("fp64").has_value());
}

TEST_CASE("names: the flags read them without regard to case") {
  CHECK(ParseNameAnyCase<DType>("BF16", "--kv-dtype") == DType::kBf16);
  CHECK(ParseNameAnyCase<DType>("Fp8_E4M3", "--kv-dtype") == DType::kFp8E4m3);
  CHECK(ParseNameAnyCase<DType>("BFloat16", "--kv-dtype") == DType::kBf16);  // an alias too
  CHECK(ParseNameAnyCase<Precision>("Mixed-BF16", "--precision") == Precision::kMixedBf16);
  CHECK(ParseNameAnyCase<Optimizer>("AdamW", "--optimizer") == Optimizer::kAdamw);
  CHECK(ParseNameAnyCase<Quant>("NF4", "--quant") == Quant::kNf4);
  CHECK(ParseDType("BF16", "kv-dtype") == DType::kBf16);
  CHECK(FindNameAnyCase<DType>("FP32") == DType::kFp32);
  CHECK_FALSE(FindNameAnyCase<DType>("BF1").has_value());
  // The error quotes the text as written.
  CHECK_THROWS_WITH_AS(ParseNameAnyCase<Quant>("NF5", "--quant"),
                       doctest::Contains("--quant: unknown value 'NF5' (did you mean"), InputError);
  // A restricted list still refuses a real dtype outside it, whatever its case.
  CHECK_THROWS_AS(ParseDType("INT4", "param-dtype", {DType::kFp32, DType::kBf16}), InputError);
}

TEST_CASE("names: unknown names list the choices with a suggestion") {
  CHECK(ParseName<Optimizer>("adamw", "--optimizer") == Optimizer::kAdamw);
  CHECK_THROWS_WITH_AS(ParseName<Optimizer>("adamm", "--optimizer"),
                       "tally: error: --optimizer: unknown value 'adamm' (did you mean 'adam'?); use one of sgd, "
                       "sgd-momentum, adagrad, rmsprop, adam, adamw, adam-8bit, lion, adafactor",
                       InputError);
  CHECK_THROWS_WITH_AS(
      ParseName<Solve>("batches", "--solve"),
      "tally: error: --solve: unknown value 'batches' (did you mean 'batch'?); use one of batch, seq, gpus, recompute",
      InputError);
  // Restricted to `allowed`: a real dtype outside it is refused, and the list shows only those.
  CHECK_THROWS_WITH_AS(ParseDType("int4", "param-dtype", {DType::kFp32, DType::kBf16}),
                       "tally: error: --param-dtype: unknown dtype 'int4'; use one of fp32, bf16", InputError);
  CHECK(ParseDType("bfloat16", "param-dtype", {DType::kFp32, DType::kBf16}) == DType::kBf16);
  CHECK(JoinNames<Mode>(" | ") == "both | train | infer");
}

TEST_CASE("names: completion's value lists are the tables'") {
  std::set<std::string> flags;
  for (const auto& choice : CompletionChoices()) {
    const std::string& flag = choice.first;
    const std::string& words = choice.second;
    CAPTURE(flag);
    flags.insert(flag);
    if (flag == "--precision") CHECK(words == JoinNames<Precision>(" "));
    if (flag == "--optimizer") CHECK(words == JoinNames<Optimizer>(" "));
    if (flag == "--recompute") CHECK(words == JoinNames<Recompute>(" "));
    if (flag == "--attention") CHECK(words == JoinNames<Attention>(" "));
    if (flag == "--quant") CHECK(words == JoinNames<Quant>(" "));
    if (flag == "--mode") CHECK(words == JoinNames<Mode>(" "));
    if (flag == "--solve") CHECK(words == JoinNames<Solve>(" "));
    if (flag == "--units") CHECK(words == JoinNames<UnitSystem>(" "));
    if (flag == "--format") CHECK(words == JoinNames<OutputFormat>(" ") + " jsonl");
    if (flag == "--kv-dtype") CHECK(words == "fp32 fp16 bf16 fp8_e4m3 fp8_e5m2 int8 int4");
    if (flag == "--state-dtype") CHECK(words == "fp32 fp16 bf16 int8");
  }
  for (const char* f : {"--precision", "--optimizer", "--recompute", "--attention", "--quant", "--mode", "--solve",
                        "--units", "--format", "--param-dtype", "--kv-dtype"}) {
    CHECK(flags.count(f) == 1);
  }
}

// A config's `dtype` is a DType: the canonical names and the aliases (fp8 = fp8_e4m3, PyTorch's
// long names), restricted to the formats checkpoints are published in.
TEST_CASE("names: a config's weight dtype") {
  const std::string head =
      "family: transformer\nvocab_size: 16\ncontext_length: 8\nd_model: 8\nn_layers: 1\n"
      "n_heads: 2\nd_ff: 16\ndtype: ";
  CHECK(LoadModelText("a.yaml", head + "bf16\n").transformer.dtype == DType::kBf16);
  CHECK(LoadModelText("a.yaml", head + "fp8\n").transformer.dtype == DType::kFp8E4m3);
  CHECK(LoadModelText("a.yaml", head + "bfloat16\n").transformer.dtype == DType::kBf16);
  CHECK(!LoadModelText("a.yaml",
                       "family: transformer\nvocab_size: 16\ncontext_length: 8\nd_model: 8\n"
                       "n_layers: 1\nn_heads: 2\nd_ff: 16\n")
             .transformer.dtype.has_value());
  CHECK_THROWS_WITH_AS(LoadModelText("a.yaml", head + "int4\n"),
                       "a.yaml:8:8: error: 'dtype' must be one of fp32, fp16, bf16, fp8_e4m3, got 'int4'", InputError);
}

}  // namespace
}  // namespace tally
