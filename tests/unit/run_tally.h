// RunTally(args): the command line through the same entry point as main, with the consistency checks
// every test of a command gets for free (bloaty's CheckConsistency): when the command succeeds (or a
// budget fails, exit 1) and prints a report, it is run again as JSON, CSV and --get, and
//   - the JSON parses back, with the schema tag;
//   - every group of counts, FLOPs or bytes whose children are all of one kind and that holds a
//     `total` (the ledgers) equals the sum of its other lines; params.components and
//     flops.components equal params.total and flops.forward;
//   - CSV has a header and rows of the same width, and (one-row reports) one column per JSON leaf;
//   - --get of numeric leaves (a spread of them) prints the JSON value.
// Commands whose output is a list (sweep) or not a report (completion) skip what does not apply.
// RunJson(args): the same with --format json, parsed (the run must succeed).
// CheckRefused(args, message): the run is refused: exit 2, nothing on stdout, exactly `message`.
#pragma once

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"

namespace tally::testing {

struct TallyRun {
  int code = -1;
  std::string out;
  std::string err;
};

inline TallyRun RunRaw(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  TallyRun r;
  r.code = RunMain(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

namespace detail {

// `args` without any --format/--get (and their values), then `extra`.
inline std::vector<std::string> WithOutput(const std::vector<std::string>& args, std::vector<std::string> extra) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--format" || args[i] == "--get") {
      ++i;
      continue;
    }
    out.push_back(args[i]);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

inline void Leaves(const nlohmann::json& j, const std::string& prefix,
                   std::vector<std::pair<std::string, nlohmann::json>>& out) {
  if (!j.is_object()) {
    out.push_back({prefix, j});
    return;
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    Leaves(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
}

inline uint64_t SumOthers(const nlohmann::json& group, const char* skip) {
  uint64_t sum = 0;
  for (auto it = group.begin(); it != group.end(); ++it) {
    if (it.key() != skip && it.value().is_number_unsigned()) sum += it.value().get<uint64_t>();
  }
  return sum;
}

inline void CheckLedgers(const nlohmann::json& doc) {
  for (const char* mode : {"train", "infer"}) {
    if (!doc.contains("memory") || !doc["memory"].contains(mode)) continue;
    const nlohmann::json& ledger = doc["memory"][mode];
    nlohmann::json lines = ledger;
    lines.erase("total");
    lines.erase("stage");  // a pipeline stage's index, not bytes
    lines.erase("fits");
    // After the total: the step's peak and the device's overheads, which sum to the device figure.
    nlohmann::json device;
    for (const char* key : {"peak", "cuda_context", "cublas_workspace", "nccl_buffers", "fragmentation"}) {
      if (ledger.contains(key)) device[key] = ledger[key];
      lines.erase(key);
    }
    for (const char* key : {"peak_phase", "peak_at", "device", "timeline"}) lines.erase(key);
    CAPTURE(mode);
    CHECK(SumOthers(lines, "") == ledger["total"].get<uint64_t>());
    if (ledger.contains("device")) {
      const uint64_t overhead = std::string(mode) == "train" && ledger.contains("overhead")
                                    ? ledger["overhead"].get<uint64_t>()
                                    : 0;  // --overhead joins the training peak as it joins the total
      CHECK(SumOthers(device, "") + overhead == ledger["device"].get<uint64_t>());
      // Whatever else a step frees, its weights stay.
      if (ledger.contains("peak")) {
        CHECK(ledger["peak"].get<uint64_t>() >= ledger["weights"].get<uint64_t>());
      }
    }
  }
  if (doc.contains("params") && doc["params"].contains("components")) {
    CHECK(SumOthers(doc["params"]["components"], "") == doc["params"]["total"].get<uint64_t>());
  }
  if (doc.contains("flops") && doc["flops"].contains("components")) {
    CHECK(SumOthers(doc["flops"]["components"], "") == doc["flops"]["forward"].get<uint64_t>());
  }
}

}  // namespace detail

// Runs `args`, checks the invariants above, and returns the run as asked (its own --format/--get).
inline TallyRun RunTally(const std::vector<std::string>& args) {
  const TallyRun run = RunRaw(args);
  const bool report = run.code == 0 || run.code == 1;
  const std::string command = args.empty() ? "" : args[0];
  if (!report || command == "completion" || command == "measure" || command == "sweep") return run;
  if (std::find(args.begin(), args.end(), "--help") != args.end()) return run;
  const TallyRun json = RunRaw(detail::WithOutput(args, {"--format", "json"}));
  REQUIRE(json.code == run.code);
  nlohmann::json doc = nlohmann::json::parse(json.out);
  CHECK(doc["schema"] == "tally/1");
  detail::CheckLedgers(doc);
  doc.erase("schema");
  doc.erase("tally_version");
  doc.erase("notes");
  // memory --timeline's event list is a table too: CSV prints it instead of the leaves.
  const bool timeline =
      doc.contains("memory") && doc["memory"].contains("train") && doc["memory"]["train"].contains("timeline");
  const bool list = doc.contains("layers") || doc.contains("check") || doc.contains("models") ||
                    doc.contains("dtypes") || doc.contains("hardware") || timeline;
  doc.erase("layers");
  if (timeline) doc["memory"]["train"].erase("timeline");
  std::vector<std::pair<std::string, nlohmann::json>> leaves;
  detail::Leaves(doc, "", leaves);
  const TallyRun csv = RunRaw(detail::WithOutput(args, {"--format", "csv"}));
  REQUIRE(csv.code == run.code);
  std::vector<size_t> widths;
  std::istringstream lines(csv.out);
  for (std::string line; std::getline(lines, line);) {
    // Quoted fields with commas are rare in reports; count separators outside quotes.
    size_t fields = 1;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++fields;
    }
    widths.push_back(fields);
  }
  REQUIRE(widths.size() >= 2);
  for (size_t w : widths) CHECK(w == widths.front());
  if (!list) CHECK(widths.front() == leaves.size());
  // --get of a spread of numeric leaves (at most 8 per run, so that the suite stays fast).
  std::vector<std::pair<std::string, nlohmann::json>> numbers;
  for (const auto& leaf : leaves) {
    if (leaf.second.is_number()) numbers.push_back(leaf);
  }
  const size_t step = numbers.size() / 8 + 1;
  for (size_t i = 0; i < numbers.size(); i += step) {
    // Named copies, not a structured binding: clang 14 cannot CAPTURE one.
    const std::string& key = numbers[i].first;
    const nlohmann::json& value = numbers[i].second;
    CAPTURE(key);
    const TallyRun get = RunRaw(detail::WithOutput(args, {"--get", key}));
    CHECK(get.code == run.code);
    const nlohmann::json back = nlohmann::json::parse(get.out);
    if (value.is_number_unsigned()) {
      CHECK(back.get<uint64_t>() == value.get<uint64_t>());
    } else {
      CHECK(back.get<double>() == value.get<double>());
    }
  }
  return run;
}

// The JSON report of `args` (with --format json), through RunTally and its checks; the run must
// succeed.
inline nlohmann::json RunJson(std::vector<std::string> args) {
  args.push_back("--format");
  args.push_back("json");
  const TallyRun run = RunTally(args);
  REQUIRE(run.code == 0);
  return nlohmann::json::parse(run.out);
}

// A refused run: exit 2, nothing on stdout, exactly `message` (one line) on stderr.
inline void CheckRefused(const std::vector<std::string>& args, const std::string& message) {
  const TallyRun r = RunRaw(args);
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == message + "\n");
}

}  // namespace tally::testing
