// The measured side of cpu_peak.h: the FMA-throughput probe (the clock is cpu_clock.cc's). Kernels are compiled for
// their ISA with target attributes and chosen at run time, so the rest of tally keeps the baseline ISA.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "measure/cpu_peak.h"
#include "measure/stopwatch.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tally {
namespace {

#if defined(__x86_64__)

// Independent accumulator chains: enough to cover FMA latency (4-5 cycles) times two pipes.
constexpr int kChains512 = 16;
constexpr int kChains256 = 12;
std::atomic<uint64_t> sink{0};  // keeps the accumulators alive

__attribute__((target("avx512f"))) uint64_t Fp32Avx512(uint64_t iterations) {
  __m512 acc[kChains512];
  for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  // acc = acc·a + b converges to b / (1 - a) = 1: no overflow, no denormals.
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (uint64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  }
  for (int j = 1; j < kChains512; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  alignas(64) float out[16];  // not _mm512_reduce_add_ps: g++ 12 warns inside it (-Wuninitialized)
  _mm512_store_ps(out, acc[0]);
  sink += static_cast<uint64_t>(out[0]);
  return iterations * kChains512 * 16 * 2;
}

__attribute__((target("avx512f"))) uint64_t Fp64Avx512(uint64_t iterations) {
  __m512d acc[kChains512];
  for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_set1_pd(j);
  const __m512d a = _mm512_set1_pd(0.999), b = _mm512_set1_pd(0.001);
  for (uint64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_fmadd_pd(acc[j], a, b);
  }
  for (int j = 1; j < kChains512; ++j) acc[0] = _mm512_add_pd(acc[0], acc[j]);
  alignas(64) double out[8];
  _mm512_store_pd(out, acc[0]);
  sink += static_cast<uint64_t>(out[0]);
  return iterations * kChains512 * 8 * 2;
}

// vdpbf16ps: per fp32 lane, two bf16 products added to the accumulator = 4 FLOP.
__attribute__((target("avx512f,avx512bf16"))) uint64_t Bf16Avx512(uint64_t iterations) {
  __m512 acc[kChains512];
  for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_setzero_ps();
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.001f), _mm512_set1_ps(0.001f));
  for (uint64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains512; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], x, x);
  }
  for (int j = 1; j < kChains512; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  alignas(64) float out[16];
  _mm512_store_ps(out, acc[0]);
  sink += static_cast<uint64_t>(out[0]);
  return iterations * kChains512 * 16 * 4;
}

__attribute__((target("avx2,fma"))) uint64_t Fp32Avx2(uint64_t iterations) {
  __m256 acc[kChains256];
  for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (uint64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  }
  alignas(32) float out[8];
  for (int j = 1; j < kChains256; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  _mm256_store_ps(out, acc[0]);
  sink += static_cast<uint64_t>(out[0]);
  return iterations * kChains256 * 8 * 2;
}

__attribute__((target("avx2,fma"))) uint64_t Fp64Avx2(uint64_t iterations) {
  __m256d acc[kChains256];
  for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_set1_pd(j);
  const __m256d a = _mm256_set1_pd(0.999), b = _mm256_set1_pd(0.001);
  for (uint64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains256; ++j) acc[j] = _mm256_fmadd_pd(acc[j], a, b);
  }
  alignas(32) double out[4];
  for (int j = 1; j < kChains256; ++j) acc[0] = _mm256_add_pd(acc[0], acc[j]);
  _mm256_store_pd(out, acc[0]);
  sink += static_cast<uint64_t>(out[0]);
  return iterations * kChains256 * 4 * 2;
}

using Kernel = uint64_t (*)(uint64_t);

// The widest kernel this CPU runs for `d` (the OS must have enabled the registers: the
// compiler's cpu_supports checks XCR0 too); nullptr when there is none.
Kernel KernelFor(GemmDType d) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  switch (d) {
    case GemmDType::kBf16:
      if (avx512 && __builtin_cpu_supports("avx512bf16")) return Bf16Avx512;
      [[fallthrough]];  // no bf16 arithmetic: bf16 runs at the fp32 rate
    case GemmDType::kFp16:
    case GemmDType::kFp32:
      return avx512 ? Fp32Avx512 : avx2 ? Fp32Avx2 : nullptr;
    case GemmDType::kFp64:
      return avx512 ? Fp64Avx512 : avx2 ? Fp64Avx2 : nullptr;
    case GemmDType::kTf32:
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      break;
  }
  return nullptr;
}

// FLOP/s of `threads` threads each running `iterations`: all start together, the slowest ends it.
double RunThreads(Kernel kernel, int threads, uint64_t iterations) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> seconds(static_cast<size_t>(threads));
  std::vector<uint64_t> flops(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ++ready;
      while (!go.load()) {
      }
      const Clock::time_point start = Clock::now();
      flops[static_cast<size_t>(t)] = kernel(iterations);
      seconds[static_cast<size_t>(t)] = SecondsSince(start);
    });
  }
  while (ready.load() < threads) {
  }
  go = true;
  for (std::thread& th : pool) th.join();
  uint64_t total = 0;
  for (uint64_t f : flops) total += f;
  const double slowest = *std::max_element(seconds.begin(), seconds.end());
  return slowest > 0 ? static_cast<double>(total) / slowest : 0;
}

#endif  // __x86_64__

}  // namespace

double ProbePeak(GemmDType dtype, int threads) {
#if defined(__x86_64__)
  const Kernel kernel = KernelFor(dtype);
  if (kernel == nullptr || threads < 1) return 0;
  // Calibrate on one thread to about 30 ms per trial, then keep the best of three.
  uint64_t iterations = 1 << 14;
  const Clock::time_point start = Clock::now();
  kernel(iterations);
  const double t = SecondsSince(start);
  if (t > 0) iterations = std::max(iterations, static_cast<uint64_t>(static_cast<double>(iterations) * 0.03 / t));
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) best = std::max(best, RunThreads(kernel, threads, iterations));
  return best;
#else
  (void)dtype, (void)threads;
  return 0;
#endif
}

}  // namespace tally
