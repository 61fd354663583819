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

// A ring collective's time by hand, large messages (NCCL's Simple protocol): per call a base latency
// of 8.4 us plus 3.4 us per ring step over NVLink and 9.6 us per step that crosses nodes (NVIDIA/nccl,
// src/graph/tuning.cc, baseLat and hwLat), plus each rank's share of the bytes over the link. An
// all-reduce takes 2 (n - 1) steps and moves 2 (n - 1) / n of the buffer; a reduce-scatter or an
// all-gather half of each. `network_steps`: the steps between nodes (2 (nodes - 1) for an all-reduce).
inline double NcclRing(double steps, double network_steps, double calls, double wire_bytes, double bandwidth) {
  return calls * (8.4e-6 + (steps - network_steps) * 3.4e-6 + network_steps * 9.6e-6) + wire_bytes / bandwidth;
}

// NCCL's NVLS all-reduce inside an NVSwitch node (src/graph/tuning.cc): 25 us a call, the wire bytes
// at its bus bandwidth.
inline double NcclNvls(double calls, double wire_bytes, double bus_bandwidth) {
  return calls * 25e-6 + wire_bytes / bus_bandwidth;
}

// What NCCL moves per direction over a node's NVLink (src/graph/topo.h, the per-link rate x links):
// A100 12 x 20 GB/s (SM80_NVLINK_BW), H100 and H200 18 x 20.6 (SM90_NVLINK_BW).
inline constexpr double kA100NcclNvlink = 12 * 20e9, kH100NcclNvlink = 18 * 20.6e9;
// NVLS's bus bandwidth on 8 H100 by hand (tuning.cc, search.cc): 8 channels, one a GPU, each GPU's
// switch link carrying its own twice and each other's once, so 9 x speed <= 370.8 GB/s: 40 GB/s, the
// fastest of sm90SpeedArrayIntra that fits; 2 x 8 x 40 x nvlsEfficiency 0.85 x 7/8 = 476 GB/s
// (nccl-tests report 460-480 on HGX H100).
inline constexpr double kH100x8Nvls = 2 * 8 * 40e9 * 0.85 * 7 / 8;

// The calls a buffer is reduced in: PyTorch DDP's 25 MiB buckets.
inline double Buckets(double bytes) {
  const double bucket = 25.0 * 1024 * 1024;
  return bytes <= bucket ? 1 : static_cast<double>(static_cast<uint64_t>((bytes + bucket - 1) / bucket));
}

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
