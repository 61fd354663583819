// The estimate report over every preset: components sum to their totals (bloaty's children-sum
// check, ninja's VerifyGraph), and an overflow names the config.
#include "sections/estimate_report.h"

#include <doctest/doctest.h>

#include <string>

#include "config/load_config.h"
#include "config/presets.h"
#include "config/resolve.h"
#include "unit/test_util.h"
#include "util/error.h"

namespace tally {
namespace {

using testing::ReportOf;

uint64_t SumChildren(const Report& r, const std::string& group) {
  uint64_t sum = 0;
  for (const ReportNode& c : r.Find(group)->children) sum += std::get<uint64_t>(c.value);
  return sum;
}

uint64_t U64(const Report& r, const std::string& key) { return std::get<uint64_t>(r.Find(key)->value); }

}  // namespace

TEST_CASE("estimate: components sum to their totals for every preset") {
  for (const std::string& name : PresetNames()) {
    CAPTURE(name);
    ModelSpec spec = ResolveModel(name);
    const Settings settings = ResolveSettings({.batch = 3, .micro_batch = 3}, spec);
    Evaluation evaluation(spec);
    LayerGraph g = testing::ResolvedGraph(spec, settings);
    Report r = EstimateReport(evaluation, settings, {.memory = true, .layers = true});
    CHECK(SumChildren(r, "params.components") == U64(r, "params.total"));
    CHECK(SumChildren(r, "flops.components") == U64(r, "flops.forward"));
    if (spec.family == Family::kTransformer) {
      CHECK(U64(r, "params.embedding") + U64(r, "params.non_embedding") == U64(r, "params.total"));
    }
    CHECK(U64(r, "flops.forward") + U64(r, "flops.backward") == U64(r, "flops.step"));
    uint64_t layer_params = 0, layer_forward = 0;
    const Table& layers = *r.Find("layers")->table;
    const size_t params_column = layers.ColumnIndex("params"), forward_column = layers.ColumnIndex("flops.forward");
    for (const std::vector<Cell>& l : layers.rows) {
      layer_params += std::get<uint64_t>(*l[params_column]);
      layer_forward += std::get<uint64_t>(*l[forward_column]);
    }
    CHECK(layer_params == U64(r, "params.total"));
    CHECK(layer_forward == U64(r, "flops.forward"));
    const char* per = spec.family == Family::kTransformer ? "flops.per_token.forward" : "flops.per_sample.forward";
    uint64_t units = spec.family == Family::kTransformer ? U64(r, "settings.tokens") : 3;
    CHECK(U64(r, per) * units == U64(r, "flops.forward"));
    // The ledgers add up to their totals.
    for (const char* ledger : {"memory.train", "memory.infer"}) {
      CAPTURE(ledger);
      uint64_t sum = 0;
      for (const ReportNode& c : r.Find(ledger)->children) {
        if (c.key == "total") break;  // the lines after it: the peak and the device's overheads
        if (c.unit == Unit::kByte) sum += std::get<uint64_t>(c.value);
      }
      CHECK(sum == U64(r, std::string(ledger) + ".total"));
    }
  }
}

TEST_CASE("estimate: an overflow in an estimator names the config") {
  // d_model 2e9: each block's q, k, v and output projections hold 4 x (2e9)^2 = 1.6e19 weights,
  // which fit in 64 bits one block at a time; two blocks, 3.2e19, are past 2^64 = 1.8e19.
  const std::string yaml =
      "family: transformer\nvocab_size: 50257\ncontext_length: 1024\nd_model: 2000000000\n"
      "n_layers: 2\nn_heads: 4\nd_ff: 3072\n";
  const ModelSpec spec = LoadModelText("big.yaml", yaml);
  // (Its FLOPs at 1,024 tokens overflow first: 2 · 1024 · 2e9 · 6e9 > 2^64.)
  CHECK_THROWS_WITH_AS(ReportOf(spec),
                       "big.yaml: error: the FLOPs of 'blocks.0.attn.qkv' would exceed 2^64 - 1 and cannot be "
                       "counted exactly; reduce the model or the batch/sequence",
                       InputError);
}

}  // namespace tally
