// tally YAML/JSON configs: LoadModelText, then the graph and the full report with default settings.
#include "config/load_config.h"
#include "config/resolve.h"
#include "fuzz_util.h"
#include "graph/build_graph.h"
#include "sections/estimate_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > tally::fuzz::kMaxInput) return -1;
  tally::fuzz::Expect([&] {
    const tally::ModelSpec spec = tally::LoadModelText("fuzz.yaml", tally::fuzz::Text(data, size));
    const tally::Settings settings = tally::ResolveSettings({}, spec);
    tally::Evaluation evaluation(spec);
    tally::EstimateReport(evaluation, settings, {.memory = true, .layers = true});
  });
  return 0;
}
