// Hugging Face config.json: the same entry point as tally's own configs (LoadModelText routes a map
// with 'model_type' and no 'family' to the HF reader), seeded with real config.json files. The first
// byte picks a supported model_type (HfFamilies()) that replaces the input's own, so every family
// reader is reached whatever the mutations did to that key.
#include <string>
#include <vector>

#include "config/hf_config.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "fuzz_util.h"
#include "graph/build_graph.h"
#include "sections/estimate_report.h"

namespace {

// `{"model_type": "X", ...`: the chosen type goes first; a second 'model_type' later in the input
// is a duplicate key, which is an InputError like any other.
std::string WithModelType(const std::string& body, const std::string& type) {
  const size_t brace = body.find('{');
  if (brace == std::string::npos) return body;
  std::string text = body;
  text.insert(brace + 1, "\"model_type\": \"" + type + "\", ");
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > tally::fuzz::kMaxInput) return -1;
  const uint8_t pick = data[0];
  std::string body = tally::fuzz::Text(data + 1, size - 1);
  // An odd first byte keeps the input as it is (its own model_type, or none).
  const std::vector<std::string>& types = tally::HfFamilies();  // config/hf_families.cc's rows
  const std::string text = pick % 2 == 1 ? body : WithModelType(body, types[(pick / 2) % types.size()]);
  tally::fuzz::Expect([&] {
    const tally::ModelSpec spec = tally::LoadModelText("config.json", text);
    const tally::Settings settings = tally::ResolveSettings({}, spec);
    tally::Evaluation evaluation(spec);
    tally::EstimateReport(evaluation, settings, {.memory = true});
  });
  return 0;
}
