// The config reader: many keys in linear time, JSON surrogate pairs, UTF-16 text and YAML tags
// (issue 20).
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "config/load_config.h"
#include "unit/test_util.h"
#include "util/error.h"

namespace tally {
namespace {

using testing::SecondsSince;

// Seconds to read a config.json with `n` keys tally ignores.
double ReadKeys(int n, std::string* text = nullptr) {
  std::string json =
      "{\"model_type\": \"gpt2\", \"vocab_size\": 100, \"n_positions\": 64, \"n_embd\": 64, "
      "\"n_layer\": 2, \"n_head\": 4";
  for (int i = 0; i < n; ++i) json += ", \"unused_" + std::to_string(i) + "\": 1";
  const auto start = std::chrono::steady_clock::now();
  CHECK(LoadModelText("many/config.json", json + "}").transformer.d_model == 64);
  if (text != nullptr) *text = json;
  return SecondsSince(start);
}

}  // namespace

TEST_CASE("yaml reader: 100,000 keys are read in linear time") {
  // Before: every key was compared with every earlier one, 5e9 comparisons (10 s); now a hash set.
  // Ten times the keys must take about ten times as long, not a hundred (the quadratic ratio):
  // a ratio, not a wall-time bound, so that a loaded machine or a sanitizer build cannot fail it.
  std::string json;
  const double small = ReadKeys(10000), large = ReadKeys(100000, &json);
  CAPTURE(small);
  CAPTURE(large);
  CHECK(large < 30 * small + 0.5);
  // The duplicate is found at the end all the same: the first "unused_0" is on line 1, column 105.
  CHECK_THROWS_WITH_AS(LoadModelText("many/config.json", json + ",\n\"unused_0\": 2}"),
                       "many/config.json:2:1: error: duplicate key 'unused_0' (first at 1:103)", InputError);
}

TEST_CASE("yaml reader: a JSON surrogate pair is one character") {
  // Python's json.dumps("x\N{GRINNING FACE}") writes "x\ud83d\ude00"; U+1F600 is F0 9F 98 80 in UTF-8.
  const std::string json =
      "{\"model_type\": \"gpt2\", \"_name_or_path\": \"x\\ud83d\\ude00\", \"vocab_size\": 100, "
      "\"n_positions\": 64, \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4";
  CHECK(LoadModelText("emoji/config.json", json + "}").name == "x\xF0\x9F\x98\x80");
  // Positions after the pair, on its line, stay as written: n_inner's 0 is at column 148.
  CHECK_THROWS_WITH_AS(LoadModelText("emoji/config.json", json + ", \"n_inner\": 0}"),
                       "emoji/config.json:1:148: error: 'n_inner' must be a positive whole number, got '0'",
                       InputError);
  // A lone surrogate is still an error (yaml-cpp's).
  CHECK_THROWS_AS(LoadModelText("lone/config.json", "{\"model_type\": \"gpt2\", \"_name_or_path\": \"\\ud83d\"}"),
                  InputError);
}

TEST_CASE("yaml reader: UTF-16 text is checked like UTF-8") {
  const std::string config = "family: sequential\ninput: [16]\nlayers: [relu]\n";
  std::string big_endian = "\xFE\xFF";
  for (char c : config) big_endian += std::string{'\0', c};
  CHECK(LoadModelText("be.yaml", big_endian).family == Family::kSequential);
  // An unpaired high surrogate (D800) in UTF-16LE.
  CHECK_THROWS_WITH_AS(
      LoadModelText("lone.yaml", std::string("\xFF\xFEn\0a\0\x00\xD8", 8)),
      "lone.yaml: error: the file is not UTF-16 text (an unpaired surrogate or a code point past U+10FFFF)",
      InputError);
}

TEST_CASE("yaml reader: d_model: !!int 64 is the integer 64") {
  const ModelSpec spec = LoadModelText("tagged.yaml",
                                       "family: transformer\nvocab_size: 1000\ncontext_length: 128\n"
                                       "d_model: !!int 64\nn_layers: 2\nn_heads: 4\nd_ff: 256\n");
  CHECK(spec.transformer.d_model == 64);
}

}  // namespace tally
