// One measurement run's state, shared by the sweep and model modes of measure.cc: the backend and
// its peaks, the dtypes and thread counts to run, and the report being filled.
#pragma once

#include <memory>
#include <vector>

#include "measure/backend.h"
#include "measure/measure.h"
#include "measure/measure_report.h"
#include "measure/peaks.h"

namespace tally {

struct Session {
  explicit Session(const MeasureRequest& r) : request(r) {}

  const MeasureRequest& request;
  std::unique_ptr<GemmBackend> backend;
  std::unique_ptr<PeakTable> peaks;
  std::vector<GemmDType> dtypes;  // the measurable ones, in request order
  std::vector<int> threads;
  Report report;
  size_t done = 0, total = 0;  // for progress lines
};

// Loads the backend (RuntimeError when it cannot), measures the clock, picks dtypes and threads,
// describes the library in measure.library.*, and checks every (dtype, threads) pair against a
// naive product.
void OpenSession(Session& s);

// Refuses, before anything runs, a case whose operands exceed the device's memory or whose
// minimum runs (one warm-up and BenchOptions::min_reps), each FLOPs / peak long (the CPU's probed
// peak), would take more than 10 x --budget or 30 s, whichever is longer. `flag` names what chose
// the shapes.
void CheckBounds(Session& s, const std::vector<GemmShape>& shapes, const std::string& flag);

// Prepares `shape` (allocation and fill outside the timing), then warm-up and repetitions.
GemmResult TimeOne(Session& s, const GemmShape& shape, GemmDType dtype, int threads);

// After the last TimeOne: reads the CPU clock again (PeakTable::RemeasureClock) and sets each
// result's peaks from the final clock.
void FinishTiming(Session& s, std::vector<GemmResult>& results);

}  // namespace tally
