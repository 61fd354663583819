// Helpers shared by the unit tests: load a preset or an inline config and build its graph; set an
// environment variable for one scope.
#pragma once

#include <cstdlib>
#include <string>

#include "config/load_config.h"
#include "estimate/evaluation.h"
#include "graph/build_graph.h"

namespace tally::testing {

inline LayerGraph PresetGraph(const std::string& name, Settings settings = {}) {
  return BuildGraph(ResolveModel(name), GraphSettingsOf(settings));
}

inline LayerGraph InlineGraph(const std::string& yaml, Settings settings = {}) {
  return BuildGraph(LoadModelText("inline.yaml", yaml), GraphSettingsOf(settings));
}

// The batch-independent memory summary of `spec` under `settings`.
inline MemoryModel MemoryOf(const ModelSpec& spec, const Settings& settings) {
  return Evaluation(spec).Summary(settings)->memory;
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
