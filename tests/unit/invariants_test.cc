// Invariants over every preset (bloaty's children-sum check, ninja's VerifyGraph).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/app.h"
#include "config/presets.h"
#include "config/resolve.h"
#include "estimate/estimate_graph.h"
#include "report/format.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

uint64_t SumChildren(const Report& r, const std::string& group) {
  uint64_t sum = 0;
  for (const ReportNode& c : r.Find(group)->children) sum += std::get<uint64_t>(c.value);
  return sum;
}

uint64_t U64(const Report& r, const std::string& key) { return std::get<uint64_t>(r.Find(key)->value); }

TEST_CASE("invariants: components sum to their totals for every preset") {
  for (const std::string& name : PresetNames()) {
    CAPTURE(name);
    ModelSpec spec = ResolveModel(name);
    const Settings settings = ResolveSettings({.batch = 3, .micro_batch = 3}, spec);
    Evaluation evaluation(spec);
    LayerGraph g = ResolvedGraph(spec, settings);
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
        if (c.key != "total" && c.unit == Unit::kByte) sum += std::get<uint64_t>(c.value);
      }
      CHECK(sum == U64(r, std::string(ledger) + ".total"));
    }
  }
}

// `estimate` (every key the others print) goes through RunTally's cross-format checks; params, flops
// and memory are parsed here only, which keeps the sanitizer pass of ~70 presets within minutes.
std::string Run(const std::vector<std::string>& args, int& code) {
  const testing::TallyRun run = args[0] == "estimate" ? testing::RunTally(args) : testing::RunRaw(args);
  code = run.code;
  return run.out;
}

TEST_CASE("invariants: every command's JSON parses and CSV has constant columns") {
  for (const std::string& name : PresetNames()) {
    for (const char* command : {"estimate", "params", "flops", "memory"}) {
      CAPTURE(name);
      CAPTURE(command);
      int code = -1;
      nlohmann::json doc = nlohmann::json::parse(Run({command, name, "--format", "json"}, code));
      CHECK(code == 0);
      CHECK(doc["schema"] == "tally/1");
      CHECK(doc["model"]["name"] == name);
      if (std::string(command) == "estimate" || std::string(command) == "params") {
        CHECK(doc["params"]["total"].is_number_unsigned());
      }
      if (std::string(command) == "estimate" || std::string(command) == "flops") {
        CHECK(doc["flops"]["forward"].is_number_unsigned());
      }
      if (std::string(command) == "estimate" || std::string(command) == "memory") {
        CHECK(doc["memory"]["train"]["total"].is_number_unsigned());
        CHECK(doc["memory"]["infer"]["total"].is_number_unsigned());
      }
      for (const char* extra : {"", "--layers"}) {
        std::vector<std::string> args = {command, name, "--format", "csv"};
        if (*extra) args.push_back(extra);
        std::istringstream csv(Run(args, code));
        CHECK(code == 0);
        std::string line;
        int rows = 0;
        size_t columns = 0;
        while (std::getline(csv, line)) {
          size_t commas = 0;
          bool quoted = false;
          for (char c : line) {
            if (c == '"') quoted = !quoted;
            if (c == ',' && !quoted) ++commas;
          }
          if (rows++ == 0) columns = commas;
          CHECK(commas == columns);
        }
        CHECK(rows >= 2);
      }
    }
  }
  int code = -1;
  nlohmann::json models = nlohmann::json::parse(Run({"models", "--format", "json"}, code));
  CHECK(code == 0);
  CHECK(models["models"]["gpt2-small"]["params"] == 124'439'808);
}

TEST_CASE("invariants: --version names the version and the commit") {
  std::ostringstream out, err;
  CHECK(RunMain({"--version"}, out, err) == 0);
  const std::string text = out.str();
  CHECK(text.rfind(std::string("tally ") + TALLY_VERSION + " (commit ", 0) == 0);
  CHECK(text.size() > 25);
  CHECK(text.substr(text.size() - 2) == ")\n");
}

TEST_CASE("invariants: an error leaves stdout empty") {
  std::ostringstream out, err;
  CHECK(RunMain({"estimate", "gpt2-small", "--format", "json", "--get", "nope"}, out, err) == 2);
  CHECK(out.str().empty());
  CHECK(err.str().find("unknown key 'nope'") != std::string::npos);
}

}  // namespace
}  // namespace tally
