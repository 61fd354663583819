// Elapsed wall time for the measurement probes and timing loops: one steady clock, seconds as a double.
#pragma once

#include <chrono>

namespace tally {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace tally
