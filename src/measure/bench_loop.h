// The timing harness: warm-up, repetitions calibrated to a time budget, and their statistics.
// The clock is injected (a function that times a batch of iterations), so tests use a fake one.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace tally {

struct BenchOptions {
  double budget_s = 0.2;      // time for the repetitions of one case, after warm-up
  double warmup_s = 0.02;     // at least one iteration runs, whatever this says
  uint64_t min_reps = 3;      // never a single run: more than the budget allows when one is slow
  uint64_t target_reps = 10;  // the budget is split into this many repetitions when it can be
  uint64_t max_reps = 1000;
};

// Median, min, max, mean and coefficient of variation (sample standard deviation / mean).
struct Stats {
  double median = 0, min = 0, max = 0, mean = 0, cv = 0;
  uint64_t n = 0;
};

// Throws std::logic_error on an empty sample.
Stats Summarize(std::vector<double> samples);

// Runs `iterations` products back to back and returns the seconds they took.
using BatchTimer = std::function<double(uint64_t iterations)>;

struct BenchResult {
  Stats seconds;  // per iteration, one sample per repetition
  uint64_t iterations_per_rep = 1;
  uint64_t reps = 0;
  uint64_t warmup_iterations = 0;
  double total_s = 0;  // warm-up included
};

// Warm-up: batches until `warmup_s` has passed (the last batch estimates one iteration's time).
// Then each repetition runs enough iterations to last budget_s / target_reps, and as many
// repetitions run as fill budget_s, within [min_reps, max_reps].
BenchResult RunBench(const BatchTimer& time_batch, const BenchOptions& options);

}  // namespace tally
