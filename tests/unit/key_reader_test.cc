// sweep's key reader answers every key the estimate report prints, with the report's own value: the
// key tables are the one place each key is spelled, and the reader reads them without a report.
#include "sections/key_reader.h"

#include <doctest/doctest.h>

#include "config/load_config.h"
#include "config/resolve.h"
#include "report/format.h"
#include "sections/estimate_report.h"

namespace tally {
namespace {

// A workload as the flags give it: the precision policy's dtypes, batch = micro-batch x grad-accum.
Settings Point(Settings s) {
  s.dtypes = PolicyDtypes(s.precision);
  if (s.batch < s.micro_batch) s.batch = s.micro_batch;  // one micro-batch unless given
  return s;
}

std::vector<Settings> Grid() {
  return {
      Point({}),
      Point({.mode = Mode::kTrain, .gpus = 8, .zero = 3}),
      Point({.batch = 4, .micro_batch = 2, .seq = 256, .mode = Mode::kInfer, .kv_block = 16}),
      Point({.seq = 512, .recompute = Recompute::kFull, .gpus = 4, .tp = 4, .sp = true}),
      Point({.seq = 512, .recompute = Recompute::kSelective, .attention = Attention::kEager, .gpus = 2, .tp = 2}),
      Point({.gpus = 8, .zero = 3, .offload = Offload::kParams}),
      Point({.gpus = 4, .zero = 2, .offload = Offload::kOptimizer, .hardware = "h100"}),
      Point({.seq = 128, .mode = Mode::kInfer, .hardware = "h100", .quant = Quant::kInt4}),
      Point({.seq = 256, .lora_rank = 8, .hardware = "h100", .overhead_bytes = 1 << 20}),
  };
}

TEST_CASE("key reader: every leaf key of the estimate report is known and reads the report's value") {
  for (const char* model : {"gpt2-small", "llama-2-7b", "mixtral-8x7b", "seed-mlp", "resnet18"}) {
    CAPTURE(model);
    const ModelSpec spec = ResolveModel(model);
    const std::vector<Settings> grid = Grid();
    for (size_t i = 0; i < grid.size(); ++i) {
      CAPTURE(i);
      Settings s = grid[i];
      if (spec.family == Family::kSequential) {
        if (s.tp > 1 || s.lora_rank > 0) continue;  // transformers only
        s.seq.reset();
      }
      s = ResolveSettings(s, spec);
      Evaluation evaluation(spec);
      const Report report = EstimateReport(evaluation, s, {.memory = true});
      const std::vector<std::string> keys = report.LeafKeys();
      for (const std::string& key : keys) {
        CAPTURE(key);
        CHECK(KeyReader::Known(key));
      }
      const std::vector<Cell> read = KeyReader(evaluation, keys).Read(s);
      REQUIRE(read.size() == keys.size());
      for (size_t k = 0; k < keys.size(); ++k) {
        CAPTURE(keys[k]);
        REQUIRE(read[k].has_value());
        CHECK(ValueText(*read[k]) == ValueText(report.Find(keys[k])->value));
      }
      // The device's keys are read where the settings name one.
      const bool device = !s.hardware.empty();
      CHECK((report.Find("memory.limit") != nullptr) == device);
    }
  }
}

TEST_CASE("key reader: memory keys a point lacks are empty, and the KV cache per token is GPT-2's") {
  const ModelSpec spec = ResolveModel("gpt2-small");
  Evaluation evaluation(spec);
  KeyReader reader(evaluation, {"kv_cache.per_token", "memory.train.total", "memory.limit", "memory.infer.fits"});
  const std::vector<Cell> infer = reader.Read(ResolveSettings(Point({.mode = Mode::kInfer}), spec));
  // K and V of 12 layers of 768 channels at bf16: 2 x 12 x 768 x 2 B (Radford et al. 2019, GPT-2 small).
  REQUIRE(infer[0].has_value());
  CHECK(std::get<uint64_t>(*infer[0]) == 2 * 12 * 768 * 2);
  CHECK_FALSE(infer[1].has_value());  // no training ledger in inference
  CHECK_FALSE(infer[2].has_value());  // no device named
  const std::vector<Cell> train = reader.Read(ResolveSettings(Point({.mode = Mode::kTrain, .hardware = "h100"}), spec));
  CHECK_FALSE(train[0].has_value());
  REQUIRE(train[2].has_value());
  // An H100 SXM's 80 GiB, with no --reserve (config/resolve.h's kDefaultReserve).
  CHECK(std::get<uint64_t>(*train[2]) == (uint64_t{80} << 30));
  CHECK_FALSE(train[3].has_value());  // the inference ledger's verdict, in training
}

}  // namespace
}  // namespace tally
