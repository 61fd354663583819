// A fake CUDA driver, runtime, cuBLAS and cuBLASLt in one shared library: the slice of their C ABI
// that tally dlopens, computed on the CPU, so tests can run the whole GPU path without a GPU.
// Declarations are written from the CUDA 13 documentation with plain C types (no CUDA headers);
// enum values are those of cuda.h, driver_types.h, library_types.h, cublas_api.h and cublasLt.h.
// "Device" memory is host memory. Every allocation is tracked, so that a copy or a GEMM reaching
// outside one fails here as it would fault on a GPU, instead of silently working on the host.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace {

// Status codes: driver and runtime share the numbers used here.
constexpr int kOk = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotInitialized = 3, kNoDevice = 100, kInvalidDevice = 101,
              kInvalidHandle = 400;
constexpr int kBlasNotInitialized = 1, kBlasInvalidValue = 7, kBlasExecutionFailed = 13, kBlasNotSupported = 15;
constexpr int kF32 = 0, kF64 = 1, kF16 = 2, kBf16 = 14, kE4m3 = 28;   // cudaDataType
constexpr int kCompute32F = 68, kCompute64F = 70, kComputeTf32 = 77;  // cublasComputeType_t

// Knobs are read at every call so that a test can change them between calls with setenv.
long EnvLong(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' ? value : fallback;
}
int Devices() { return static_cast<int>(EnvLong("FAKE_CUDA_DEVICES", 1)); }
bool Wrong() { return std::getenv("FAKE_CUDA_WRONG") != nullptr; }

// "major.minor" from FAKE_CUDA_CC, 9.0 (Hopper) when unset or malformed.
void ComputeCapability(int& major, int& minor) {
  const char* text = std::getenv("FAKE_CUDA_CC");
  char extra = 0;
  if (text == nullptr || std::sscanf(text, "%d.%d%c", &major, &minor, &extra) != 2) major = 9, minor = 0;
}

std::atomic<bool> g_initialized = false;  // cuInit was called: the driver refuses device queries before it
std::mutex g_mutex;
std::map<uintptr_t, size_t> g_allocations;  // address → bytes, of every live cudaMalloc

// True when [p, p + bytes) lies inside one live allocation.
bool OnDevice(const void* p, size_t bytes) {
  if (bytes == 0) return true;  // nothing is read: k = 0 leaves A and B untouched
  const auto at = reinterpret_cast<uintptr_t>(p);
  const std::lock_guard lock(g_mutex);
  auto it = g_allocations.upper_bound(at);
  if (p == nullptr || it == g_allocations.begin()) return false;
  --it;
  return at - it->first <= it->second && bytes <= it->second - (at - it->first);
}

// Rounds x to `mantissa` explicit bits, to nearest even, with subnormals below 2^emin.
double RoundTo(double x, int mantissa, int emin) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const int step = std::max(e - 1, emin) - mantissa;
  return std::ldexp(std::nearbyint(std::ldexp(x, -step)), step);
}

size_t Bytes(int type) { return type == kF64 ? 8 : type == kF32 ? 4 : type == kE4m3 ? 1 : 2; }

// Reads through memcpy: operands need not be aligned to their type.
template <typename T>
T Read(const void* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

double Load(int type, const void* base, size_t i) {
  const auto* at = static_cast<const unsigned char*>(base) + i * Bytes(type);
  if (type == kF64) return Read<double>(at);
  if (type == kF32) return Read<float>(at);
  if (type == kE4m3) {  // OCP E4M3FN: bias 7, no infinities, S.1111.111 is NaN
    const int e = (at[0] >> 3) & 15, m = at[0] & 7;
    const double v = e == 15 && m == 7 ? NAN : e == 0 ? std::ldexp(m, -9) : std::ldexp(m + 8, e - 10);
    return (at[0] & 0x80) != 0 ? -v : v;
  }
  const auto h = Read<uint16_t>(at);
  if (type == kBf16) return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
  const int e = (h >> 10) & 31, m = h & 1023;  // IEEE binary16, bias 15
  const double v = e == 31 ? (m != 0 ? NAN : INFINITY) : e == 0 ? std::ldexp(m, -24) : std::ldexp(m + 1024, e - 25);
  return (h & 0x8000) != 0 ? -v : v;
}

void Store(int type, void* base, size_t i, double x) {
  auto* at = static_cast<unsigned char*>(base) + i * Bytes(type);
  if (type == kF64) return static_cast<void>(std::memcpy(at, &x, 8));
  uint16_t h = 0;
  if (type == kF32 || type == kBf16) {
    // bf16 is the top half of an fp32 once rounded to 7 mantissa bits; overflow becomes infinity.
    const float f = static_cast<float>(type == kF32 ? x : RoundTo(x, 7, -126));
    if (type == kF32) return static_cast<void>(std::memcpy(at, &f, 4));
    h = static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16);
  } else {
    const double r = std::fabs(RoundTo(x, 10, -14));
    const int sign = std::signbit(x) ? 0x8000 : 0;
    int e = 0;
    std::frexp(r, &e);
    const int magnitude = std::isnan(x) ? 0x7E00
                          : r > 65504   ? 0x7C00                               // infinity
                          : r < 0x1p-14 ? static_cast<int>(std::ldexp(r, 24))  // subnormal
                                        : ((e + 14) << 10) + static_cast<int>(std::ldexp(r, 11 - e)) - 1024;
    h = static_cast<uint16_t>(sign | magnitude);
  }
  std::memcpy(at, &h, 2);
}

// Column-major m×n×k with the operands' strides; D = alpha·op(A)·op(B) + beta·C, C unread when
// beta is 0 (as BLAS does). Accumulates in double: a reference, not a model of the hardware.
struct Operand {
  const void* p;
  int type;
  int64_t ld;
  bool t;  // transposed: element (r, c) of op(X) is stored at c + r·ld
  double At(int64_t r, int64_t c, bool tf32) const {
    const double v = Load(type, p, static_cast<size_t>(t ? c + r * ld : r + c * ld));
    return tf32 ? RoundTo(static_cast<float>(v), 10, -126) : v;  // TF32: fp32's range, 10 mantissa bits
  }
};
void Multiply(int64_t m, int64_t n, int64_t k, double alpha, const Operand& a, const Operand& b, double beta,
              const Operand& c, void* d, int64_t ldd, bool tf32) {
  // Past 2^27 multiply-adds (512³) nothing is computed and D is left as it was: such products are
  // only ever timed (tally checks results on small shapes), and a CPU loop would take minutes for
  // the 2048³ reference GEMM of `measure --model`.
  if (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) > 134217728.0) return;
  // Rows of op(A) and columns of op(B), decoded once: the inner loop runs over contiguous doubles,
  // fast enough for the timing loop at modest sizes.
  std::vector<double> rows(static_cast<size_t>(m * k)), cols(static_cast<size_t>(k * n));
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t i = 0; i < m; ++i) rows[static_cast<size_t>(i * k + p)] = a.At(i, p, tf32);
    for (int64_t j = 0; j < n; ++j) cols[static_cast<size_t>(j * k + p)] = b.At(p, j, tf32);
  }
  const bool wrong = Wrong();
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < m; ++i) {
      const double* row = rows.data() + i * k;
      const double* col = cols.data() + j * k;
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += row[p] * col[p];
      double out = alpha * sum + (beta != 0 ? beta * c.At(i, j, false) : 0);
      if (wrong && i == 0 && j == 0) out += 1;  // FAKE_CUDA_WRONG: a broken library to be caught
      Store(c.type, d, static_cast<size_t>(i + j * ldd), out);
    }
  }
}

// Whether a column-major rows×cols matrix at p with leading dimension ld lies in device memory.
bool OnDevice(const void* p, int type, int64_t rows, int64_t cols, int64_t ld) {
  return OnDevice(p, rows == 0 || cols == 0 ? 0 : static_cast<size_t>((cols - 1) * ld + rows) * Bytes(type));
}

struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};
struct Handle {};  // cuBLAS and cuBLASLt keep no state the fake needs
struct MatmulDesc {
  int compute, scale, transa = 0, transb = 0;
  const void* scale_a = nullptr;
  const void* scale_b = nullptr;
  const void* scale_d = nullptr;
};
struct Layout {
  int type;
  int64_t rows, cols, ld;
};
struct HeuristicResult {  // cublasLtMatmulHeuristicResult_t
  uint64_t algo[8];
  size_t workspace_size;
  int state;
  float waves_count;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96);

// Whether cuBLASLt would run this matmul: 0, or the status both GetHeuristic and Matmul return.
// fp8 follows the cuBLAS documentation's rules ("cublasLtMatmul", above the FP8 type table):
// compute 32F and scale 32F; A and B e4m3 into C = D of bf16, fp16 or fp32; rows, columns and
// leading dimensions multiples of 16 (Tensor Core Usage's 16 bytes); "TN" on Ada (8.9), Hopper
// (9.0) and Blackwell GeForce (12.x); D_SCALE_POINTER only for an fp8 D (cublasLt.h: else
// INVALID_VALUE). Pointer alignment is checked by Matmul, where the pointers are known.
int LtCheck(const MatmulDesc* desc, const Layout* a, const Layout* b, const Layout* c, const Layout* d) {
  if (desc == nullptr || a == nullptr || b == nullptr || c == nullptr || d == nullptr) return kBlasInvalidValue;
  if (desc->transa < 0 || desc->transa > 2 || desc->transb < 0 || desc->transb > 2) return kBlasInvalidValue;
  if (desc->compute != kCompute32F || desc->scale != kF32) return kBlasNotSupported;
  const bool fp8 = a->type == kE4m3;
  // cublasLtMatmul's table: fp32 out of anything; fp16 and bf16 out of themselves or fp8.
  const bool ab_ok = a->type == b->type && (a->type == kF32 || a->type == kF16 || a->type == kBf16 || fp8);
  const bool cd_ok =
      c->type == d->type && (c->type == kF32 || ((c->type == kF16 || c->type == kBf16) && (c->type == a->type || fp8)));
  if (!ab_ok || !cd_ok) return kBlasNotSupported;
  const int64_t m = desc->transa != 0 ? a->cols : a->rows, k = desc->transa != 0 ? a->rows : a->cols;
  const int64_t kb = desc->transb != 0 ? b->cols : b->rows, n = desc->transb != 0 ? b->rows : b->cols;
  if (k != kb || c->rows != m || c->cols != n || d->rows != m || d->cols != n) return kBlasInvalidValue;
  for (const Layout* l : {a, b, c, d}) {
    if (l->ld < std::max<int64_t>(1, l->rows)) return kBlasInvalidValue;
    if (fp8 && (l->rows % 16 != 0 || l->cols % 16 != 0 || l->ld % 16 != 0)) return kBlasNotSupported;
  }
  // The header: scale pointers on an unsupported type combination make cublasLtMatmul refuse.
  if (!fp8 && (desc->scale_a != nullptr || desc->scale_b != nullptr)) return kBlasInvalidValue;
  if (desc->scale_d != nullptr && d->type != kE4m3) return kBlasInvalidValue;
  int major = 0, minor = 0;
  ComputeCapability(major, minor);
  const bool tn_only = (major == 8 && minor == 9) || major == 9 || major == 12;
  if (fp8 && tn_only && (desc->transa != 1 || desc->transb != 0)) return kBlasNotSupported;
  return 0;
}

// FAKE_CUDA_LT_REFUSE_ALGOS=N: Matmul refuses (15) the heuristic's first N algorithms (a heuristic
// offer is no promise: NVIDIA's LtFp8Matmul sample tries them in turn). FAKE_CUDA_LT_REFUSE_ABOVE=P:
// no fp8 algorithm for a product of more than P multiply-adds (the heuristic returns 15), as for a
// shape the library has no kernel for.
bool RefusesAlgo(const void* algo) {  // a cublasLtMatmulAlgo_t: its first word is the fake's number
  return algo != nullptr && Read<uint64_t>(algo) < static_cast<uint64_t>(EnvLong("FAKE_CUDA_LT_REFUSE_ALGOS", 0));
}
bool RefusesSize(const Layout* d, const Layout* a, const MatmulDesc* desc) {
  const long above = EnvLong("FAKE_CUDA_LT_REFUSE_ABOVE", -1);
  const int64_t k = desc->transa != 0 ? a->rows : a->cols;
  return above >= 0 && a->type == kE4m3 &&
         static_cast<double>(d->rows) * static_cast<double>(d->cols) * static_cast<double>(k) >
             static_cast<double>(above);
}

// 16-byte alignment of an fp8 matmul's matrix pointers (the documentation's first fp8 rule), and of
// its scale pointers: on an H200 with cuBLASLt 13.1 (scripts/gpu/fp8_probe.cc), a B scale 4 bytes
// after the A scale made Matmul refuse (15) every algorithm the heuristic had offered: issue 31.
// The documentation states no rule for scales; 16 bytes, as for the matrices, is the fake's guess.
bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A scale factor: a float in device memory, 1 when unset, none when the pointer is not device memory.
std::optional<double> Scale(const void* p) {
  if (p == nullptr) return 1.0;
  return OnDevice(p, 4) ? std::optional<double>(Read<float>(p)) : std::nullopt;
}

template <typename T, typename... Args>
int Create(void** out, Args... args) {
  if (out == nullptr) return kBlasInvalidValue;
  *out = new T{args...};
  return 0;
}
template <typename T>
int Destroy(void* p, int if_null) {
  delete static_cast<T*>(p);
  return p == nullptr ? if_null : 0;
}

// The driver's check of a device ordinal: cuInit first, then an ordinal below the count.
int DriverDevice(int dev) {
  return !g_initialized ? kNotInitialized : dev < 0 || dev >= Devices() ? kInvalidDevice : kOk;
}

template <typename T>
int SetFrom(T& field, const void* buf, size_t size) {
  if (buf == nullptr || size != sizeof(T)) return kBlasInvalidValue;
  std::memcpy(&field, buf, sizeof(T));
  return 0;
}

}  // namespace

// Only the C entry points are exported: the library's own C++ stays out of the process's symbols.
#pragma GCC visibility push(default)
extern "C" {

// ---- Driver API (libcuda.so.1) ----
int cuInit(unsigned /*flags*/) {
  if (Devices() <= 0) return kNoDevice;
  g_initialized = true;
  return kOk;
}
int cuDriverGetVersion(int* v) { return v == nullptr ? kInvalidValue : (*v = 13000, kOk); }
int cuDeviceGetCount(int* count) {
  if (!g_initialized) return kNotInitialized;
  return count == nullptr ? kInvalidValue : (*count = std::max(Devices(), 0), kOk);
}
int cuDeviceGet(int* dev, int ordinal) {
  if (dev == nullptr) return kInvalidValue;
  if (const int status = DriverDevice(ordinal); status != kOk) return status;
  *dev = ordinal;
  return kOk;
}
int cuDeviceGetName(char* name, int len, int dev) {
  if (name == nullptr || len <= 0) return kInvalidValue;
  if (const int status = DriverDevice(dev); status != kOk) return status;
  const char* value = std::getenv("FAKE_CUDA_NAME");
  if (value == nullptr) value = "NVIDIA H100 80GB HBM3";
  const size_t n = std::min(std::strlen(value), static_cast<size_t>(len) - 1);
  std::memcpy(name, value, n);
  name[n] = '\0';
  return kOk;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  if (bytes == nullptr) return kInvalidValue;
  if (const int status = DriverDevice(dev); status != kOk) return status;
  *bytes = 85520809984;  // 79.6 GiB, as an H100 SXM reports
  return kOk;
}
int cuGetErrorString(int error, const char** text) {
  if (text == nullptr) return kInvalidValue;
  *text = error == kOk               ? "no error"
          : error == kInvalidValue   ? "invalid argument"
          : error == kNotInitialized ? "initialization error"
          : error == kNoDevice       ? "no CUDA-capable device is detected"
          : error == kInvalidDevice  ? "invalid device ordinal"
                                     : nullptr;
  return *text == nullptr ? kInvalidValue : kOk;  // the real driver: unknown codes are invalid values
}

// ---- Runtime API (libcudart.so) ----
const char* cudaGetErrorString(int error) {
  const char* text = nullptr;
  if (error == kOutOfMemory) return "out of memory";
  if (error == kInvalidHandle) return "invalid resource handle";
  return error != kNotInitialized && cuGetErrorString(error, &text) == kOk ? text : "unrecognized error code";
}
int cudaRuntimeGetVersion(int* v) { return v == nullptr ? kInvalidValue : (*v = 13000, kOk); }
int cudaSetDevice(int dev) { return Devices() <= 0 ? kNoDevice : dev < 0 || dev >= Devices() ? kInvalidDevice : kOk; }
int cudaDeviceGetAttribute(int* value, int attr, int dev) {
  if (value == nullptr) return kInvalidValue;
  if (dev < 0 || dev >= Devices()) return Devices() <= 0 ? kNoDevice : kInvalidDevice;
  int major = 0, minor = 0;
  ComputeCapability(major, minor);
  switch (attr) {
    case 13:
      *value = 1980000;
      return kOk;  // cudaDevAttrClockRate, kHz
    case 16:
      *value = 132;
      return kOk;  // cudaDevAttrMultiProcessorCount
    case 36:
      *value = 2619000;
      return kOk;  // cudaDevAttrMemoryClockRate, kHz
    case 37:
      *value = 5120;
      return kOk;  // cudaDevAttrGlobalMemoryBusWidth, bits
    case 75:
      *value = major;
      return kOk;  // cudaDevAttrComputeCapabilityMajor
    case 76:
      *value = minor;
      return kOk;  // cudaDevAttrComputeCapabilityMinor
    default:
      return kInvalidValue;  // not faked
  }
}
int cudaMalloc(void** p, size_t bytes) {
  if (p == nullptr) return kInvalidValue;
  if (Devices() <= 0) return kNoDevice;
  const long limit = EnvLong("FAKE_CUDA_OOM_BYTES", -1);
  if (limit >= 0 && bytes > static_cast<size_t>(limit)) return kOutOfMemory;
  *p = std::malloc(std::max<size_t>(bytes, 1));  // 16-byte aligned, as GPU kernels expect
  if (*p == nullptr) return kOutOfMemory;
  const std::lock_guard lock(g_mutex);
  g_allocations[reinterpret_cast<uintptr_t>(*p)] = bytes;
  return kOk;
}
int cudaFree(void* p) {
  if (p == nullptr) return kOk;
  const std::lock_guard lock(g_mutex);
  if (g_allocations.erase(reinterpret_cast<uintptr_t>(p)) == 0) return kInvalidValue;  // not from cudaMalloc
  std::free(p);
  return kOk;
}
int cudaMemcpy(void* dst, const void* src, size_t bytes, int kind) {
  if (bytes == 0) return kOk;
  if (kind != 1 && kind != 2) return kInvalidValue;  // only host→device and device→host are faked
  if (dst == nullptr || src == nullptr || !OnDevice(kind == 1 ? dst : src, bytes)) return kInvalidValue;
  std::memcpy(dst, src, bytes);
  return kOk;
}
int cudaDeviceSynchronize() { return kOk; }  // everything ran synchronously
int cudaEventCreate(void** event) { return event == nullptr ? kInvalidValue : Create<Event>(event); }
int cudaEventDestroy(void* event) { return Destroy<Event>(event, kInvalidHandle); }
int cudaEventRecord(void* event, void* /*stream*/) {
  if (event == nullptr) return kInvalidHandle;
  *static_cast<Event*>(event) = {std::chrono::steady_clock::now(), true};
  return kOk;
}
int cudaEventSynchronize(void* event) { return event == nullptr ? kInvalidHandle : kOk; }
int cudaEventElapsedTime(float* ms, void* start, void* stop) {
  if (ms == nullptr) return kInvalidValue;
  const auto* a = static_cast<const Event*>(start);
  const auto* b = static_cast<const Event*>(stop);
  if (a == nullptr || b == nullptr || !a->recorded || !b->recorded) return kInvalidHandle;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return kOk;
}

// ---- cuBLAS (libcublas.so) ----
int cublasCreate_v2(void** handle) { return Create<Handle>(handle); }
int cublasDestroy_v2(void* handle) { return Destroy<Handle>(handle, kBlasNotInitialized); }
int cublasGetVersion_v2(void* handle, int* v) {
  if (handle == nullptr) return kBlasNotInitialized;
  return v == nullptr ? kBlasInvalidValue : (*v = 130000, 0);
}
int cublasGemmEx(void* handle, int transa, int transb, int m, int n, int k, const void* alpha, const void* A, int Atype,
                 int lda, const void* B, int Btype, int ldb, const void* beta, void* C, int Ctype, int ldc,
                 int computeType, int /*algo*/) {
  if (handle == nullptr) return kBlasNotInitialized;
  // CUBLAS_OP_C (2) is the transpose for real types.
  if (transa < 0 || transa > 2 || transb < 0 || transb > 2 || m < 0 || n < 0 || k < 0) return kBlasInvalidValue;
  const bool ta = transa != 0, tb = transb != 0;
  const int a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m)) return kBlasInvalidValue;
  if (alpha == nullptr || beta == nullptr) return kBlasInvalidValue;
  // cublasGemmEx's table, for the compute types faked: 32F takes fp32, or fp16/bf16 into itself or fp32.
  const bool supported =
      Atype == Btype && (computeType == kCompute64F    ? Atype == kF64 && Ctype == kF64
                         : computeType == kComputeTf32 ? Atype == kF32 && Ctype == kF32
                         : computeType == kCompute32F
                             ? (Atype == kF32 || Atype == kF16 || Atype == kBf16) && (Ctype == kF32 || Ctype == Atype)
                             : false);
  if (!supported) return kBlasNotSupported;
  if (m == 0 || n == 0) return 0;
  if (!OnDevice(A, Atype, a_rows, a_cols, lda) || !OnDevice(B, Btype, b_rows, b_cols, ldb) ||
      !OnDevice(C, Ctype, m, n, ldc)) {
    return kBlasExecutionFailed;  // a GPU would fault on a host or out-of-range pointer
  }
  const bool fp64 = computeType == kCompute64F;  // alpha and beta have the compute type's precision
  const double al = fp64 ? Read<double>(alpha) : Read<float>(alpha), be = fp64 ? Read<double>(beta) : Read<float>(beta);
  Multiply(m, n, k, al, {A, Atype, lda, ta}, {B, Btype, ldb, tb}, be, {C, Ctype, ldc, false}, C, ldc,
           computeType == kComputeTf32);
  return 0;
}

// ---- cuBLASLt (libcublasLt.so) ----
int cublasLtCreate(void** handle) { return cublasCreate_v2(handle); }
int cublasLtDestroy(void* handle) { return cublasDestroy_v2(handle); }
int cublasLtMatmulDescCreate(void** desc, int computeType, int scaleType) {
  return Create<MatmulDesc>(desc, computeType, scaleType);
}
int cublasLtMatmulDescDestroy(void* desc) { return Destroy<MatmulDesc>(desc, 0); }
int cublasLtMatmulDescSetAttribute(void* desc, int attr, const void* buf, size_t size) {
  if (desc == nullptr) return kBlasInvalidValue;
  auto& d = *static_cast<MatmulDesc*>(desc);
  int8_t fast_accum = 0;
  switch (attr) {
    case 3:
      return SetFrom(d.transa, buf, size);  // CUBLASLT_MATMUL_DESC_TRANSA, int32
    case 4:
      return SetFrom(d.transb, buf, size);  // TRANSB
    case 17:
      return SetFrom(d.scale_a, buf, size);  // A_SCALE_POINTER: the pointer's value, by address
    case 18:
      return SetFrom(d.scale_b, buf, size);  // B_SCALE_POINTER
    case 20:
      return SetFrom(d.scale_d, buf, size);  // D_SCALE_POINTER
    case 25:
      return SetFrom(fast_accum, buf, size);  // FAST_ACCUM, int8: changes only rounding; ignored
    default:
      return kBlasNotSupported;  // real attributes the fake lacks: a test should notice
  }
}
int cublasLtMatrixLayoutCreate(void** layout, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (rows > INT64_MAX || cols > INT64_MAX) return kBlasInvalidValue;
  return Create<Layout>(layout, type, static_cast<int64_t>(rows), static_cast<int64_t>(cols), ld);
}
int cublasLtMatrixLayoutDestroy(void* layout) { return Destroy<Layout>(layout, 0); }
int cublasLtMatmulPreferenceCreate(void** pref) { return Create<uint64_t>(pref, uint64_t{0}); }  // max workspace
int cublasLtMatmulPreferenceDestroy(void* pref) { return Destroy<uint64_t>(pref, 0); }
int cublasLtMatmulPreferenceSetAttribute(void* pref, int attr, const void* buf, size_t size) {
  if (pref == nullptr) return kBlasInvalidValue;
  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: kept, unused, since the fake needs no workspace.
  return attr == 1 ? SetFrom(*static_cast<uint64_t*>(pref), buf, size) : kBlasNotSupported;
}
int cublasLtMatmulAlgoGetHeuristic(void* handle, void* desc, void* Adesc, void* Bdesc, void* Cdesc, void* Ddesc,
                                   void* pref, int requested, HeuristicResult* results, int* returned) {
  if (handle == nullptr) return kBlasNotInitialized;
  if (pref == nullptr || requested <= 0 || results == nullptr || returned == nullptr) return kBlasInvalidValue;
  *returned = 0;
  const int status = LtCheck(static_cast<MatmulDesc*>(desc), static_cast<Layout*>(Adesc), static_cast<Layout*>(Bdesc),
                             static_cast<Layout*>(Cdesc), static_cast<Layout*>(Ddesc));
  if (status != 0) return status;
  if (RefusesSize(static_cast<Layout*>(Ddesc), static_cast<Layout*>(Adesc), static_cast<MatmulDesc*>(desc))) {
    return kBlasNotSupported;
  }
  // Up to four algorithms, numbered in algo[0]; no workspace, state CUBLAS_STATUS_SUCCESS.
  *returned = std::min(requested, 4);
  for (int i = 0; i < *returned; ++i) results[i] = {.algo = {static_cast<uint64_t>(i)}, .waves_count = 1};
  return 0;
}
int cublasLtMatmul(void* handle, void* desc, const void* alpha, const void* A, void* Adesc, const void* B, void* Bdesc,
                   const void* beta, const void* C, void* Cdesc, void* D, void* Ddesc, const void* algo,
                   void* /*workspace*/, size_t /*workspaceSize*/, void* /*stream*/) {
  if (handle == nullptr) return kBlasNotInitialized;
  const auto* d = static_cast<const MatmulDesc*>(desc);
  const auto *la = static_cast<const Layout*>(Adesc), *lb = static_cast<const Layout*>(Bdesc);
  const auto *lc = static_cast<const Layout*>(Cdesc), *ld = static_cast<const Layout*>(Ddesc);
  if (const int status = LtCheck(d, la, lb, lc, ld); status != 0) return status;
  if (RefusesSize(ld, la, d) || RefusesAlgo(algo)) return kBlasNotSupported;
  if (la->type == kE4m3 && !(Aligned16(A) && Aligned16(B) && Aligned16(C) && Aligned16(D) && Aligned16(d->scale_a) &&
                             Aligned16(d->scale_b))) {
    return kBlasNotSupported;  // after GetHeuristic offered algorithms, as the H200 did
  }
  if (alpha == nullptr || beta == nullptr) return kBlasInvalidValue;
  const double al = Read<float>(alpha), be = Read<float>(beta);
  const std::optional<double> sa = Scale(d->scale_a), sb = Scale(d->scale_b);
  const auto on_device = [](const void* p, const Layout* l) { return OnDevice(p, l->type, l->rows, l->cols, l->ld); };
  if (!sa || !sb || !on_device(A, la) || !on_device(B, lb) || (be != 0 && !on_device(C, lc)) || !on_device(D, ld)) {
    return kBlasExecutionFailed;  // a GPU would fault on a host or out-of-range pointer
  }
  // D and C share a type, so C's operand can carry D's type for the store.
  const int64_t k = d->transa != 0 ? la->rows : la->cols;
  Multiply(ld->rows, ld->cols, k, al * *sa * *sb, {A, la->type, la->ld, d->transa != 0},
           {B, lb->type, lb->ld, d->transb != 0}, be, {C, lc->type, lc->ld, false}, D, ld->ld, false);
  return 0;
}

}  // extern "C"
#pragma GCC visibility pop
