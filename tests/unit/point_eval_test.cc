// The sweep's fast evaluation must equal the full report, key for key, wherever it answers.
#include "estimate/point_eval.h"

#include <doctest/doctest.h>

#include <memory>

#include "config/resolve.h"
#include "estimate/estimate_graph.h"
#include "report/format.h"
#include "unit/test_util.h"

namespace tally {
namespace {

Settings Point(Settings s) {
  s.dtypes = PolicyDtypes(s.precision);
  s.batch = s.micro_batch * s.grad_accum;
  return s;
}

TEST_CASE("point evaluator: every fast key equals the full report") {
  const std::vector<Settings> grid = {
      Point({}),
      Point({.micro_batch = 3, .seq = 512, .precision = Precision::kFp32, .optimizer = Optimizer::kAdafactor}),
      Point({.micro_batch = 2,
             .grad_accum = 4,
             .seq = 256,
             .recompute = Recompute::kFull,
             .gpus = 8,
             .tp = 2,
             .pp = 2,
             .sp = true,
             .zero = 1}),
      Point({.seq = 128, .mode = Mode::kInfer, .quant = Quant::kInt4}),
      Point({.micro_batch = 5,
             .seq = 64,
             .optimizer = Optimizer::kAdam8bit,
             .lora_rank = 8,
             .gpus = 4,
             .zero = 3,
             .quant = Quant::kInt4,
             .overhead_fraction = 0.1}),
      Point({.micro_batch = 2, .seq = 1024, .recompute = Recompute::kSelective, .attention = Attention::kEager}),
  };
  for (const char* model : {"llama-2-7b", "gpt2-small", "mixtral-8x7b", "seed-cnn"}) {
    CAPTURE(model);
    ModelSpec spec = ResolveModel(model);
    for (size_t i = 0; i < grid.size(); ++i) {
      CAPTURE(i);
      Settings s = grid[i];
      if (spec.family == Family::kSequential) {
        s.seq.reset();
        if (s.tp > 1 || s.pp > 1 || s.lora_rank > 0) continue;  // transformers only
      }
      s = ResolveSettings(s, spec);  // as sweep resolves each point
      Report full = EstimateReport(*std::make_unique<Evaluation>(spec), s, {.memory = true});
      std::vector<std::string> keys = full.LeafKeys();
      std::vector<std::optional<Value>> fast = PointEvaluator(spec, keys).Evaluate(s);
      int compared = 0;
      for (size_t k = 0; k < keys.size(); ++k) {
        CAPTURE(keys[k]);
        CHECK(fast[k].has_value() == PointEvaluator::IsFastKey(keys[k]));
        if (!fast[k]) continue;
        CHECK(ValueText(*fast[k]) == ValueText(full.Find(keys[k])->value));
        ++compared;
      }
      CHECK(compared >= 8);
    }
  }
}

}  // namespace
}  // namespace tally
