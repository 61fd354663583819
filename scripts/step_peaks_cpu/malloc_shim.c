/* Counts the live bytes of the heap blocks a process holds, and their high-water mark, for
 * scripts/step_peaks_cpu: loaded through LD_PRELOAD into a python3 running PyTorch on the CPU.
 *   cc -shared -fPIC -O2 malloc_shim.c -o malloc_shim.so -ldl
 *
 * Two counters, each with a live and a peak byte count of the REQUESTED sizes (not the usable ones):
 *   aligned  every block from posix_memalign, aligned_alloc, memalign, valloc or pvalloc, whatever its
 *            size: PyTorch's CPU allocator (c10::alloc_cpu) takes every tensor storage from
 *            posix_memalign with 64-byte alignment and caches nothing, so these are the tensors;
 *   all      the aligned blocks plus every malloc, calloc, realloc or reallocarray block of 1 KiB or
 *            more (the interpreter's and libraries' larger buffers; smaller ones are left out).
 * A block's size is kept in an open-addressing hash table keyed by its address (linear probing,
 * backward-shift deletion), taken from mmap so that the table itself is never counted; one spinlock
 * guards it. Python reads it through ctypes: shim_reset_peak() sets each peak to its live count,
 * shim_stats() and shim_stats_aligned() return live and peak, shim_dropped() counts blocks the full
 * table could not hold (0 unless the table is too small, then the counts are wrong). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void* __libc_valloc(size_t);
extern void* __libc_pvalloc(size_t);
extern void __libc_free(void*);

#define kMinTracked 1024          /* malloc-family blocks below this are not counted */
#define kSlots (1u << 22)         /* 4 Mi slots x 16 bytes = 64 MiB of address space */
#define kAlignedBit (1ull << 63)  /* set in a slot's size: the block came from an aligned allocator */

typedef struct {
  uintptr_t key; /* 0: empty */
  uint64_t size; /* requested bytes | kAlignedBit */
} Slot;

static Slot* table;
static volatile int lock_word;
static long long live_all, peak_all, live_aligned, peak_aligned, dropped, used;

static void Lock(void) {
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&lock_word, __ATOMIC_RELAXED)) __builtin_ia32_pause();
  }
}
static void Unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static uint32_t Home(uintptr_t key) { return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 42); }

static void Count(uint64_t size, int sign) {
  long long n = (long long)(size & ~kAlignedBit) * sign;
  live_all += n;
  if (live_all > peak_all) peak_all = live_all;
  if (size & kAlignedBit) {
    live_aligned += n;
    if (live_aligned > peak_aligned) peak_aligned = live_aligned;
  }
}

static void Track(void* p, uint64_t size) {
  Lock();
  if (!table) {
    void* m = mmap(NULL, sizeof(Slot) * kSlots, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    table = m == MAP_FAILED ? NULL : (Slot*)m;
  }
  if (!table || used >= (long long)(kSlots / 4 * 3)) {
    dropped++;
    Unlock();
    return;
  }
  uint32_t i = Home((uintptr_t)p);
  while (table[i].key) i = (i + 1) & (kSlots - 1);
  table[i].key = (uintptr_t)p;
  table[i].size = size;
  used++;
  Count(size, +1);
  Unlock();
}

/* Removes p's slot; returns its size word, 0 when p was not tracked. */
static uint64_t Untrack(void* p) {
  uint64_t size = 0;
  Lock();
  if (table) {
    uint32_t i = Home((uintptr_t)p);
    while (table[i].key && table[i].key != (uintptr_t)p) i = (i + 1) & (kSlots - 1);
    if (table[i].key) {
      size = table[i].size;
      Count(size, -1);
      used--;
      /* Backward-shift deletion: pull later members of the probe run into the hole. */
      uint32_t hole = i, j = i;
      for (;;) {
        j = (j + 1) & (kSlots - 1);
        if (!table[j].key) break;
        uint32_t home = Home(table[j].key);
        if (((j - home) & (kSlots - 1)) >= ((j - hole) & (kSlots - 1))) {
          table[hole] = table[j];
          hole = j;
        }
      }
      table[hole].key = 0;
    }
  }
  Unlock();
  return size;
}

static void* Plain(void* p, size_t n) {
  if (p && n >= kMinTracked) Track(p, n);
  return p;
}
static void* Aligned(void* p, size_t n) {
  if (p) Track(p, (uint64_t)n | kAlignedBit);
  return p;
}

void* malloc(size_t n) { return Plain(__libc_malloc(n), n); }
void* calloc(size_t n, size_t m) {
  size_t total;
  if (__builtin_mul_overflow(n, m, &total)) total = 0;
  return Plain(__libc_calloc(n, m), total);
}
void free(void* p) {
  if (!p) return;
  Untrack(p);
  __libc_free(p);
}
void* realloc(void* p, size_t n) {
  if (!p) return malloc(n);
  uint64_t old = Untrack(p);
  void* q = __libc_realloc(p, n);
  if (!q && n) {  /* failed: p is still the caller's */
    if (old) Track(p, old);
    return NULL;
  }
  return Plain(q, n);
}
void* reallocarray(void* p, size_t n, size_t m) {
  size_t total;
  if (__builtin_mul_overflow(n, m, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, total);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  if (alignment % sizeof(void*) || (alignment & (alignment - 1))) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (!p) return ENOMEM;
  *out = Aligned(p, n);
  return 0;
}
void* aligned_alloc(size_t alignment, size_t n) { return Aligned(__libc_memalign(alignment, n), n); }
void* memalign(size_t alignment, size_t n) { return Aligned(__libc_memalign(alignment, n), n); }
void* valloc(size_t n) { return Aligned(__libc_valloc(n), n); }
void* pvalloc(size_t n) { return Aligned(__libc_pvalloc(n), n); }

void shim_reset_peak(void) {
  Lock();
  peak_all = live_all;
  peak_aligned = live_aligned;
  Unlock();
}
void shim_stats(long* live, long* peak) {
  Lock();
  *live = (long)live_all;
  *peak = (long)peak_all;
  Unlock();
}
void shim_stats_aligned(long* live, long* peak) {
  Lock();
  *live = (long)live_aligned;
  *peak = (long)peak_aligned;
  Unlock();
}
long shim_dropped(void) { return (long)dropped; }
