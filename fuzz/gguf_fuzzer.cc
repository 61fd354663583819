// GGUF headers: the first byte says how much the file claims to be longer than the input (0 to
// 255 KiB of sparse data), so that tensors whose data lies past the input are reached too; the
// rest is the file's start. A header that parses is then turned into a ModelSpec, a graph and a
// report.
#include <string>

#include "config/gguf.h"
#include "config/resolve.h"
#include "estimate/evaluation.h"
#include "fuzz_util.h"
#include "sections/estimate_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > tally::fuzz::kMaxInput) return -1;
  const uint64_t extra = uint64_t{data[0]} << 10;
  const std::string file = tally::fuzz::Text(data + 1, size - 1);
  tally::fuzz::Expect([&] {
    tally::GgufFile g = tally::ParseGguf("model.gguf", file, file.size() + extra);
    tally::ModelSpec spec = tally::GgufModelSpec(g, "model.gguf");
    spec.checkpoint = std::move(g.checkpoint);
    // Identical blocks are built once, so any block_count costs what one block does.
    tally::Evaluation evaluation(spec);
    tally::EstimateReport(evaluation, tally::ResolveSettings({}, spec), {});
  });
  return 0;
}
