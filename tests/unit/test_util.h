// Helpers shared by the unit tests: load a preset or an inline config and build its graph or its
// report; read a Hugging Face fixture, edited; set an environment variable for one scope; time a call.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/evaluation.h"
#include "graph/build_graph.h"
#include "sections/estimate_report.h"

namespace tally::testing {

// The graph of `spec` under `settings` made whole as a run makes them (ResolveSettings: a
// transformer's default seq).
inline LayerGraph ResolvedGraph(const ModelSpec& spec, const Settings& settings = {}) {
  return BuildGraph(spec, GraphSettingsOf(ResolveSettings(settings, spec)));
}

inline LayerGraph PresetGraph(const std::string& name, const Settings& settings = {}) {
  return ResolvedGraph(ResolveModel(name), settings);
}

inline LayerGraph InlineGraph(const std::string& yaml, const Settings& settings = {}) {
  return ResolvedGraph(LoadModelText("inline.yaml", yaml), settings);
}

// The batch-independent summary of `spec` under `settings`, resolved as a run resolves them.
inline std::shared_ptr<const GraphSummary> SummaryOf(const ModelSpec& spec, const Settings& settings = {}) {
  return Evaluation(spec).Summary(ResolveSettings(settings, spec));
}

// The default report of `spec` (params and FLOPs at the default settings).
inline Report ReportOf(const ModelSpec& spec) {
  Evaluation evaluation(spec);
  return EstimateReport(evaluation, ResolveSettings({}, spec), {});
}

// Seconds since `start` on the steady clock.
inline double SecondsSince(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The batch-independent memory summary of `spec` under `settings`.
inline MemoryModel MemoryOf(const ModelSpec& spec, const Settings& settings) {
  return SummaryOf(spec, settings)->memory;
}

// A Hugging Face config.json fixture: tests/data/hf/FILE.
inline std::string Hf(const std::string& file) { return std::string(TALLY_TEST_DATA) + "/hf/" + file; }

// The graph of `spec` at `seq` tokens, the other settings at their defaults.
inline LayerGraph GraphOf(const ModelSpec& spec, uint64_t seq) { return ResolvedGraph(spec, {.seq = seq}); }

// `text` with the one occurrence of `from` (which must be there) replaced by `to`; `from` empty
// leaves it as it is.
inline std::string ReplacedOnce(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return text;
}

// The fixture Hf(file) with `from` replaced by `to`, read under the fixture's name.
inline ModelSpec EditedHf(const std::string& file, const std::string& from, const std::string& to) {
  return LoadModelText(file, ReplacedOnce(ReadFileText(Hf(file)), from, to));
}

// Sets an environment variable for one scope (the fake CUDA stack's knobs).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

}  // namespace tally::testing
