// The time section read two ways: every time.* key of the full report (as `tally check` builds it)
// is one sweep's KeyReader knows, and at the default request the reader's value is the report's.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/settings_flags.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/time_estimate.h"
#include "sections/estimate_report.h"
#include "sections/key_reader.h"
#include "sections/sections.h"

namespace tally {
namespace {

struct Case {
  const char* model;
  WorkloadFlags flags;
  TimeRequest request;  // the report's; the reader always reads at TimeRequest{}
};

std::vector<std::string> TimeLeaves(const Report& r) {
  std::vector<std::string> out;
  for (const std::string& key : r.LeafKeys()) {
    if (key.rfind("time.", 0) == 0) out.push_back(key);
  }
  return out;
}

// Checks the case's keys against the reader; returns how many values were compared.
size_t CheckCase(const Case& c) {
  INFO("model " << std::string(c.model));
  Evaluation evaluation(ResolveModel(c.model));
  const Settings settings = ResolveSettings(ReadSettings(c.flags), evaluation.spec());
  Report report = EstimateReport(evaluation, settings, {.memory = true});
  PresentTime(EstimateTime(evaluation, settings, c.request), {.settings = false}, report);
  const std::vector<std::string> keys = TimeLeaves(report);
  REQUIRE(!keys.empty());
  for (const std::string& key : keys) {
    INFO("key " << key);
    CHECK(KeyReader::Known(key));
  }
  KeyReader reader(evaluation, keys);
  const std::vector<Cell> values = reader.Read(settings);
  REQUIRE(values.size() == keys.size());
  const bool defaults = !c.request.train.mfu && !c.request.train.achieved && !c.request.train.price;
  if (settings.hardware.empty()) {
    // No device: the reader has no time.* values (and throws nothing).
    for (const Cell& v : values) CHECK(!v.has_value());
    return 0;
  }
  if (!defaults) return 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    INFO("key " << keys[i]);
    REQUIRE(values[i].has_value());
    CHECK(*values[i] == report.Find(keys[i])->value);
  }
  return keys.size();
}

TEST_CASE("time section: the reader knows every time.* key and reads the report's value") {
  const std::vector<Case> cases = {
      {"llama-3-8b", {.batch = "8", .hardware = "h100"}, {}},
      {"llama-3-8b", {.batch = "16", .gpus = "16", .tp = "2", .pp = "2", .zero = "1", .hardware = "a100-80gb"}, {}},
      {"mixtral-8x7b", {.batch = "16", .gpus = "16", .tp = "2", .ep = "4", .zero = "3", .hardware = "h100"}, {}},
      {"llama-3-8b", {.batch = "4", .seq = "16Ki", .mode = "train", .gpus = "8", .cp = "4", .hardware = "h100"}, {}},
      {"llama-3-8b", {.batch = "8", .gpus = "8", .zero = "3", .hardware = "h100", .offload = "optimizer"}, {}},
      {"gpt2-small", {.batch = "4", .mode = "infer", .hardware = "h100"}, {}},
      {"llama-2-7b", {.batch = "8", .mode = "infer", .gpus = "2", .tp = "2", .hardware = "a100-80gb"}, {}},
      // A device without gemm_efficiency for fp32 (flat MFU), --mfu, --price, an --achieved rate alone.
      {"gpt2-small", {.batch = "8", .precision = "fp32", .hardware = "mi355x"}, {}},
      {"gpt2-small", {.batch = "8", .hardware = "h100"}, {.train = {.mfu = 0.5}}},
      {"gpt2-small", {.batch = "8", .hardware = "h100"}, {.train = {.price = 2.5}}},
      {"gpt2-small", {.batch = "8"}, {.train = {.achieved = 1e14}}},
  };
  size_t compared = 0;
  for (const Case& c : cases) compared += CheckCase(c);
  // Dozens of keys a case, the modelled step's breakdown and the offload's and ring's figures among them.
  CHECK(compared > 150);
  CHECK(KeyReader::Known("time.breakdown.cp_ring"));
  CHECK(KeyReader::Known("time.offload.host_bytes_per_node"));
  CHECK(KeyReader::Known("time.achieved_flop_per_s"));
  CHECK(KeyReader::Known("time.cost"));
  // Inference's settings echo is time's own report's (tally time), not a sweep key.
  CHECK(!KeyReader::Known("settings.prompt"));
}

TEST_CASE("time section: a point without a device has no time.* values, and no error") {
  Evaluation evaluation(ResolveModel("gpt2-small"));
  const Settings settings = ResolveSettings(ReadSettings({.batch = "8"}), evaluation.spec());
  KeyReader reader(evaluation, {"time.train_seconds", "time.tpot_seconds", "params.total"});
  const std::vector<Cell> values = reader.Read(settings);
  CHECK(!values[0].has_value());
  CHECK(!values[1].has_value());
  CHECK(values[2].has_value());
}

}  // namespace
}  // namespace tally
