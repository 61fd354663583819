/* The reference for `tally measure`'s clock: the core clock from a dependent FMA chain timed in TSC
 * ticks, an instruction and a timer tally's probe does not use (tally times `imul` with steady_clock).
 *   cc -O2 clock_chain.c -o clock_chain && ./clock_chain LATENCY
 * LATENCY is the cycles of one vfmadd213ps on this core (scripts/bench/clock looks it up). Prints
 *   tsc_hz T        rdtsc ticks per second of CLOCK_MONOTONIC over 200 ms: the nominal clock
 *   chain_hz C      FMAs x LATENCY cycles / (ticks / T), the fastest of 20 trials after 50 ms of warm-up
 * x86-64 only; elsewhere it prints nothing and exits 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* 64 dependent FMAs per iteration: x = x * x + c with x and c zero, so no denormal ever slows it.
 * x is a multiplicand, not only the addend, so no core can forward a partial result early. */
static void chain(uint64_t iterations) {
  __asm__ volatile("vxorps %%xmm0, %%xmm0, %%xmm0\n\tvxorps %%xmm1, %%xmm1, %%xmm1" ::: "xmm0", "xmm1");
  for (uint64_t i = 0; i < iterations; ++i) {
    __asm__ volatile(".rept 64\n\tvfmadd213ps %%xmm1, %%xmm0, %%xmm0\n\t.endr" ::: "xmm0");
  }
}

int main(int argc, char** argv) {
  const int latency = argc > 1 ? atoi(argv[1]) : 0;
  if (latency <= 0) {
    fprintf(stderr, "usage: clock_chain LATENCY (cycles of one vfmadd213ps on this core)\n");
    return 2;
  }
  const double t0 = now();
  const uint64_t k0 = __rdtsc();
  double t = 0;
  while ((t = now() - t0) < 0.2) {
  }
  const double tsc_hz = (double)(__rdtsc() - k0) / t;

  const uint64_t iterations = 1 << 14; /* 1 M FMAs: about 1 ms at 4 GHz */
  const double warm = now();
  while (now() - warm < 0.05) chain(iterations);
  double best = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const uint64_t start = __rdtsc();
    chain(iterations);
    const double seconds = (double)(__rdtsc() - start) / tsc_hz;
    const double hz = (double)(iterations * 64) * latency / seconds;
    if (hz > best) best = hz;
  }
  printf("tsc_hz %.0f\nchain_hz %.0f\n", tsc_hz, best);
  return 0;
}

#else

int main(void) { return 2; }

#endif
