#include "measure/bandwidth_probe.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "measure/aligned_buffer.h"
#include "measure/stopwatch.h"

namespace tally {
namespace {

std::atomic<uint64_t> sink{0};

// Integer sums vectorize (they are associative), so the loop is bound by memory, not by adds.
uint64_t Sum(const uint64_t* data, uint64_t n) {
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) total += data[i];
  return total;
}

}  // namespace

double ProbeReadBandwidth(int threads, uint64_t buffer_bytes) {
  if (threads < 1) threads = 1;
  const uint64_t words = buffer_bytes / sizeof(uint64_t);
  AlignedBuffer<uint64_t> buffer(words);
  for (uint64_t i = 0; i < words; ++i) buffer[i] = i;  // first touch, outside the timing
  const uint64_t per_thread = words / static_cast<uint64_t>(threads);
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const auto start = Clock::now();
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] { sink += Sum(buffer.data() + per_thread * static_cast<uint64_t>(t), per_thread); });
    }
    for (std::thread& th : pool) th.join();
    const double s = SecondsSince(start);
    const double bytes = static_cast<double>(per_thread * static_cast<uint64_t>(threads) * sizeof(uint64_t));
    if (s > 0) best = std::max(best, bytes / s);
  }
  return best;
}

}  // namespace tally
