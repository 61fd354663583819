// The fake CUDA stack (tests/fake_cuda) checked on its own, through dlopen as tally loads it: if the
// fake computed wrong, tests of the GPU path built on it would prove nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "measure/dynamic_library.h"
#include "measure/float_convert.h"
#include "unit/test_util.h"

namespace {

using tally::DynamicLibrary;

constexpr int kF32 = 0, kF64 = 1, kF16 = 2, kBf16 = 14, kE4m3 = 28;
constexpr int kCompute32F = 68, kCompute64F = 70, kComputeTf32 = 77;

// cublasLtMatmulHeuristicResult_t as cublasLt.h lays it out.
struct HeuristicResult {
  uint64_t algo[8];
  size_t workspace_size;
  int state;
  float waves_count;
  int reserved[4];
};
static_assert(sizeof(HeuristicResult) == 96);

// Every entry point, resolved once from the fake's file.
struct Fake {
  DynamicLibrary lib = DynamicLibrary::Open({TALLY_FAKE_CUDA});
  template <typename Fn>
  Fn Get(const char* name) const {
    const Fn fn = lib.Function<Fn>(name);
    if (fn == nullptr) FAIL("the fake lacks ", name, ": ", lib.Error());
    return fn;
  }
  int (*cuInit)(unsigned) = Get<decltype(cuInit)>("cuInit");
  int (*cuDriverGetVersion)(int*) = Get<decltype(cuDriverGetVersion)>("cuDriverGetVersion");
  int (*cuDeviceGetCount)(int*) = Get<decltype(cuDeviceGetCount)>("cuDeviceGetCount");
  int (*cuDeviceGet)(int*, int) = Get<decltype(cuDeviceGet)>("cuDeviceGet");
  int (*cuDeviceGetName)(char*, int, int) = Get<decltype(cuDeviceGetName)>("cuDeviceGetName");
  int (*cuDeviceTotalMem)(size_t*, int) = Get<decltype(cuDeviceTotalMem)>("cuDeviceTotalMem_v2");
  int (*cuGetErrorString)(int, const char**) = Get<decltype(cuGetErrorString)>("cuGetErrorString");
  const char* (*cudaGetErrorString)(int) = Get<decltype(cudaGetErrorString)>("cudaGetErrorString");
  int (*cudaSetDevice)(int) = Get<decltype(cudaSetDevice)>("cudaSetDevice");
  int (*cudaDeviceGetAttribute)(int*, int, int) = Get<decltype(cudaDeviceGetAttribute)>("cudaDeviceGetAttribute");
  int (*cudaMalloc)(void**, size_t) = Get<decltype(cudaMalloc)>("cudaMalloc");
  int (*cudaFree)(void*) = Get<decltype(cudaFree)>("cudaFree");
  int (*cudaMemcpy)(void*, const void*, size_t, int) = Get<decltype(cudaMemcpy)>("cudaMemcpy");
  int (*cudaEventCreate)(void**) = Get<decltype(cudaEventCreate)>("cudaEventCreate");
  int (*cudaEventRecord)(void*, void*) = Get<decltype(cudaEventRecord)>("cudaEventRecord");
  int (*cudaEventSynchronize)(void*) = Get<decltype(cudaEventSynchronize)>("cudaEventSynchronize");
  int (*cudaEventElapsedTime)(float*, void*, void*) = Get<decltype(cudaEventElapsedTime)>("cudaEventElapsedTime");
  int (*cudaEventDestroy)(void*) = Get<decltype(cudaEventDestroy)>("cudaEventDestroy");
  int (*cudaDeviceSynchronize)() = Get<decltype(cudaDeviceSynchronize)>("cudaDeviceSynchronize");
  int (*cudaRuntimeGetVersion)(int*) = Get<decltype(cudaRuntimeGetVersion)>("cudaRuntimeGetVersion");
  int (*cublasCreate)(void**) = Get<decltype(cublasCreate)>("cublasCreate_v2");
  int (*cublasDestroy)(void*) = Get<decltype(cublasDestroy)>("cublasDestroy_v2");
  int (*cublasGetVersion)(void*, int*) = Get<decltype(cublasGetVersion)>("cublasGetVersion_v2");
  int (*cublasGemmEx)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                      const void*, void*, int, int, int, int) = Get<decltype(cublasGemmEx)>("cublasGemmEx");
  int (*ltCreate)(void**) = Get<decltype(ltCreate)>("cublasLtCreate");
  int (*ltDestroy)(void*) = Get<decltype(ltDestroy)>("cublasLtDestroy");
  int (*descCreate)(void**, int, int) = Get<decltype(descCreate)>("cublasLtMatmulDescCreate");
  int (*descDestroy)(void*) = Get<decltype(descDestroy)>("cublasLtMatmulDescDestroy");
  int (*descSet)(void*, int, const void*, size_t) = Get<decltype(descSet)>("cublasLtMatmulDescSetAttribute");
  int (*layoutCreate)(void**, int, uint64_t, uint64_t,
                      int64_t) = Get<decltype(layoutCreate)>("cublasLtMatrixLayoutCreate");
  int (*layoutDestroy)(void*) = Get<decltype(layoutDestroy)>("cublasLtMatrixLayoutDestroy");
  int (*prefCreate)(void**) = Get<decltype(prefCreate)>("cublasLtMatmulPreferenceCreate");
  int (*prefDestroy)(void*) = Get<decltype(prefDestroy)>("cublasLtMatmulPreferenceDestroy");
  int (*prefSet)(void*, int, const void*, size_t) = Get<decltype(prefSet)>("cublasLtMatmulPreferenceSetAttribute");
  int (*heuristic)(void*, void*, void*, void*, void*, void*, void*, int, HeuristicResult*,
                   int*) = Get<decltype(heuristic)>("cublasLtMatmulAlgoGetHeuristic");
  int (*ltMatmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*,
                  void*, void*, const void*, void*, size_t, void*) = Get<decltype(ltMatmul)>("cublasLtMatmul");
};

const Fake& F() {
  static const Fake fake;
  return fake;
}

using tally::testing::ScopedEnv;

// E4M3FN by its definition: bias 7, subnormals at exponent 0, S.1111.111 the only NaN.
double E4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  double v = e == 0 ? m / 8.0 * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return (b & 0x80) != 0 ? -v : v;
}

size_t Bytes(int type) { return type == kF64 ? 8 : type == kF32 ? 4 : type == kE4m3 ? 1 : 2; }

// One value in a type's bytes (exact inputs only: e4m3 searches for the pattern).
void Encode(int type, double v, unsigned char* at) {
  const float f = static_cast<float>(v);
  uint16_t h = type == kF16 ? tally::FloatToHalf(f) : tally::FloatToBf16(f);
  if (type == kF64) std::memcpy(at, &v, 8);
  if (type == kF32) std::memcpy(at, &f, 4);
  if (type == kF16 || type == kBf16) std::memcpy(at, &h, 2);
  if (type == kE4m3) {
    at[0] = 0x7F;  // NaN unless v is found
    for (int b = 0; b < 256; ++b) {
      if (E4m3(static_cast<uint8_t>(b)) == v) at[0] = static_cast<unsigned char>(b);
    }
  }
}

double Decode(int type, const unsigned char* at) {
  double d = 0;
  float f = 0;
  uint16_t h = 0;
  if (type == kF64) return std::memcpy(&d, at, 8), d;
  if (type == kF32) return std::memcpy(&f, at, 4), f;
  std::memcpy(&h, at, 2);
  return type == kF16 ? tally::HalfToFloat(h) : tally::Bf16ToFloat(h);
}

// What the fake must store for an exact result x: x rounded to the output type.
double RoundTo(int type, double x) {
  std::vector<unsigned char> bytes(8);
  Encode(type, x, bytes.data());
  return Decode(type, bytes.data());
}

// Device memory holding `values` in `type`, freed at scope end.
class Device {
 public:
  Device(int type, const std::vector<double>& values) : type_(type), bytes_(values.size() * Bytes(type)) {
    REQUIRE(F().cudaMalloc(&p_, bytes_) == 0);
    std::vector<unsigned char> host(bytes_);
    for (size_t i = 0; i < values.size(); ++i) Encode(type, values[i], host.data() + i * Bytes(type));
    REQUIRE(F().cudaMemcpy(p_, host.data(), bytes_, 1) == 0);
  }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() { F().cudaFree(p_); }
  void* get() const { return p_; }
  std::vector<double> Read() const {
    std::vector<unsigned char> host(bytes_);
    REQUIRE(F().cudaMemcpy(host.data(), p_, bytes_, 2) == 0);
    std::vector<double> out(bytes_ / Bytes(type_));
    for (size_t i = 0; i < out.size(); ++i) out[i] = Decode(type_, host.data() + i * Bytes(type_));
    return out;
  }

 private:
  int type_;
  size_t bytes_;
  void* p_ = nullptr;
};

// Multiples of 1/8 in [-1, 1]: exact in every type, e4m3 included.
std::vector<double> Eighths(size_t n, int salt) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>((static_cast<int>(i) * 7 + salt * 5) % 17 - 8) / 8;
  return v;
}

// Column-major C = alpha·op(A)·op(B) + beta·C by hand, in double.
std::vector<double> Reference(bool ta, bool tb, int m, int n, int k, double alpha, const std::vector<double>& a,
                              int lda, const std::vector<double>& b, int ldb, double beta, std::vector<double> c,
                              int ldc) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const double x = a[static_cast<size_t>(ta ? p + i * lda : i + p * lda)];
        sum += x * b[static_cast<size_t>(tb ? j + p * ldb : p + j * ldb)];
      }
      double& out = c[static_cast<size_t>(i + j * ldc)];
      out = alpha * sum + beta * out;
    }
  }
  return c;
}

// A cuBLASLt matmul's objects, destroyed together.
struct Lt {
  void *handle = nullptr, *desc = nullptr, *a = nullptr, *b = nullptr, *c = nullptr, *pref = nullptr;
  Lt(int ab_type, int c_type, bool ta, bool tb, int m, int n, int k) {
    REQUIRE(F().ltCreate(&handle) == 0);
    REQUIRE(F().descCreate(&desc, kCompute32F, kF32) == 0);
    const int32_t opa = ta ? 1 : 0, opb = tb ? 1 : 0;
    REQUIRE(F().descSet(desc, 3, &opa, sizeof opa) == 0);
    REQUIRE(F().descSet(desc, 4, &opb, sizeof opb) == 0);
    const auto u = [](int x) { return static_cast<uint64_t>(x); };
    REQUIRE(F().layoutCreate(&a, ab_type, u(ta ? k : m), u(ta ? m : k), ta ? k : m) == 0);
    REQUIRE(F().layoutCreate(&b, ab_type, u(tb ? n : k), u(tb ? k : n), tb ? n : k) == 0);
    REQUIRE(F().layoutCreate(&c, c_type, u(m), u(n), m) == 0);
    REQUIRE(F().prefCreate(&pref) == 0);
    const uint64_t workspace = 1 << 20;
    REQUIRE(F().prefSet(pref, 1, &workspace, sizeof workspace) == 0);
  }
  Lt(const Lt&) = delete;
  Lt& operator=(const Lt&) = delete;
  ~Lt() {
    F().prefDestroy(pref);
    F().layoutDestroy(c);
    F().layoutDestroy(b);
    F().layoutDestroy(a);
    F().descDestroy(desc);
    F().ltDestroy(handle);
  }
  int Heuristic(int* returned) const {
    HeuristicResult result{};
    result.state = -1;
    const int status = F().heuristic(handle, desc, a, b, c, c, pref, 1, &result, returned);
    if (status == 0) CHECK(result.state == 0);
    return status;
  }
  int Run(float alpha, const Device& da, const Device& db, float beta, const Device& dc) const {
    return F().ltMatmul(handle, desc, &alpha, da.get(), a, db.get(), b, &beta, dc.get(), c, dc.get(), c, nullptr,
                        nullptr, 0, nullptr);
  }
};

}  // namespace

TEST_CASE("fake_cuda: the driver reports an H100 and CUDA 13.0") {
  REQUIRE(F().cuInit(0) == 0);
  int version = 0, count = 0, dev = -1;
  CHECK((F().cuDriverGetVersion(&version) == 0 && version == 13000));
  CHECK((F().cuDeviceGetCount(&count) == 0 && count == 1));
  CHECK((F().cuDeviceGet(&dev, 0) == 0 && dev == 0));
  CHECK(F().cuDeviceGet(&dev, 1) == 101);  // CUDA_ERROR_INVALID_DEVICE
  char name[64] = {};
  CHECK(F().cuDeviceGetName(name, sizeof name, 0) == 0);
  CHECK(std::string(name) == "NVIDIA H100 80GB HBM3");
  CHECK(F().cuDeviceGetName(name, 7, 0) == 0);
  CHECK(std::string(name) == "NVIDIA");  // truncated to len - 1 characters and terminated
  size_t memory = 0;
  CHECK((F().cuDeviceTotalMem(&memory, 0) == 0 && memory == 85520809984));
  const char* text = nullptr;
  CHECK((F().cuGetErrorString(100, &text) == 0 && std::string(text) == "no CUDA-capable device is detected"));
  CHECK((F().cuGetErrorString(12345, &text) == 1 && text == nullptr));
}

TEST_CASE("fake_cuda: FAKE_CUDA_DEVICES and FAKE_CUDA_NAME") {
  {
    const ScopedEnv env("FAKE_CUDA_DEVICES", "0");
    CHECK(F().cuInit(0) == 100);  // CUDA_ERROR_NO_DEVICE
    CHECK(F().cudaSetDevice(0) == 100);
    void* p = nullptr;
    CHECK(F().cudaMalloc(&p, 16) == 100);
  }
  const ScopedEnv devices("FAKE_CUDA_DEVICES", "2"), name("FAKE_CUDA_NAME", "NVIDIA A100-SXM4-40GB");
  REQUIRE(F().cuInit(0) == 0);
  int count = 0, dev = -1;
  CHECK((F().cuDeviceGetCount(&count) == 0 && count == 2));
  CHECK((F().cuDeviceGet(&dev, 1) == 0 && dev == 1));
  CHECK(F().cudaSetDevice(1) == 0);
  CHECK(F().cudaSetDevice(2) == 101);
  char text[64] = {};
  CHECK((F().cuDeviceGetName(text, sizeof text, 1) == 0 && std::string(text) == "NVIDIA A100-SXM4-40GB"));
}

TEST_CASE("fake_cuda: runtime attributes, versions and error texts") {
  int v = 0;
  const auto attr = [&](int a) { return F().cudaDeviceGetAttribute(&v, a, 0) == 0 ? v : -1; };
  CHECK(attr(13) == 1980000);
  CHECK(attr(16) == 132);
  CHECK(attr(36) == 2619000);
  CHECK(attr(37) == 5120);
  CHECK(attr(75) == 9);
  CHECK(attr(76) == 0);
  CHECK(F().cudaDeviceGetAttribute(&v, 1, 0) == 1);  // not faked: invalid value
  CHECK(F().cudaDeviceGetAttribute(&v, 75, 1) == 101);
  {
    const ScopedEnv cc("FAKE_CUDA_CC", "8.6");
    CHECK((attr(75) == 8 && attr(76) == 6));
  }
  {
    const ScopedEnv cc("FAKE_CUDA_CC", "eight");
    CHECK((attr(75) == 9 && attr(76) == 0));
  }
  CHECK((F().cudaRuntimeGetVersion(&v) == 0 && v == 13000));
  void* handle = nullptr;
  REQUIRE(F().cublasCreate(&handle) == 0);
  CHECK((F().cublasGetVersion(handle, &v) == 0 && v == 130000));
  CHECK(F().cublasDestroy(handle) == 0);
  CHECK(std::string(F().cudaGetErrorString(0)) == "no error");
  CHECK(std::string(F().cudaGetErrorString(1)) == "invalid argument");
  CHECK(std::string(F().cudaGetErrorString(2)) == "out of memory");
  CHECK(std::string(F().cudaGetErrorString(999)) == "unrecognized error code");
  CHECK(F().cudaDeviceSynchronize() == 0);
}

TEST_CASE("fake_cuda: memory is tracked, copies stay inside allocations, FAKE_CUDA_OOM_BYTES") {
  void* p = nullptr;
  REQUIRE(F().cudaMalloc(&p, 64) == 0);
  const std::vector<unsigned char> in(64, 0xAB);
  std::vector<unsigned char> out(65, 0);
  CHECK(F().cudaMemcpy(p, in.data(), 64, 1) == 0);
  CHECK(F().cudaMemcpy(out.data(), p, 64, 2) == 0);
  CHECK(std::vector<unsigned char>(out.begin(), out.begin() + 64) == in);
  CHECK(F().cudaMemcpy(out.data(), p, 65, 2) == 1);                          // past the end
  CHECK(F().cudaMemcpy(out.data(), static_cast<char*>(p) + 8, 57, 2) == 1);  // from inside, past the end
  CHECK(F().cudaMemcpy(p, in.data(), 64, 2) == 1);                           // the wrong direction
  CHECK(F().cudaFree(out.data()) == 1);                                      // not from cudaMalloc
  CHECK(F().cudaFree(p) == 0);
  CHECK(F().cudaFree(p) == 1);  // twice
  CHECK(F().cudaFree(nullptr) == 0);
  const ScopedEnv oom("FAKE_CUDA_OOM_BYTES", "1024");
  CHECK(F().cudaMalloc(&p, 1025) == 2);
  REQUIRE(F().cudaMalloc(&p, 1024) == 0);
  CHECK(F().cudaFree(p) == 0);
}

TEST_CASE("fake_cuda: events time on the host clock") {
  void *start = nullptr, *stop = nullptr;
  REQUIRE(F().cudaEventCreate(&start) == 0);
  REQUIRE(F().cudaEventCreate(&stop) == 0);
  float ms = -1;
  CHECK(F().cudaEventElapsedTime(&ms, start, stop) == 400);  // never recorded
  CHECK(F().cudaEventRecord(start, nullptr) == 0);
  CHECK(F().cudaEventRecord(stop, nullptr) == 0);
  CHECK(F().cudaEventSynchronize(stop) == 0);
  CHECK(F().cudaEventElapsedTime(&ms, start, stop) == 0);
  CHECK(ms >= 0);
  CHECK(ms < 1000);
  CHECK(F().cudaEventDestroy(start) == 0);
  CHECK(F().cudaEventDestroy(stop) == 0);
}

TEST_CASE("fake_cuda: cublasGemmEx 3x5x7 in every type and transpose equals a hand loop") {
  struct Case {
    int ab, c, compute;
  };
  const Case cases[] = {{kF32, kF32, kCompute32F}, {kF32, kF32, kComputeTf32}, {kF64, kF64, kCompute64F},
                        {kF16, kF16, kCompute32F}, {kF16, kF32, kCompute32F},  {kBf16, kBf16, kCompute32F},
                        {kBf16, kF32, kCompute32F}};
  void* handle = nullptr;
  REQUIRE(F().cublasCreate(&handle) == 0);
  const int m = 3, n = 5, k = 7;
  for (const Case& t : cases) {
    for (int op = 0; op < 4; ++op) {
      const bool ta = (op & 1) != 0, tb = (op & 2) != 0;
      CAPTURE(t.ab);
      CAPTURE(t.c);
      CAPTURE(t.compute);
      CAPTURE(ta);
      CAPTURE(tb);
      // Leading dimensions one past the rows, so that strides are exercised.
      const int lda = (ta ? k : m) + 1, ldb = (tb ? n : k) + 1, ldc = m + 1;
      const std::vector<double> a = Eighths(static_cast<size_t>(lda * (ta ? m : k)), 1);
      const std::vector<double> b = Eighths(static_cast<size_t>(ldb * (tb ? k : n)), 2);
      const std::vector<double> c = Eighths(static_cast<size_t>(ldc * n), 3);
      const Device da(t.ab, a), db(t.ab, b), dc(t.c, c);
      const double alpha = 1.5, beta = -0.5;
      const float alpha_f = 1.5f, beta_f = -0.5f;
      const bool fp64 = t.compute == kCompute64F;
      const void* pa = fp64 ? static_cast<const void*>(&alpha) : &alpha_f;
      const void* pb = fp64 ? static_cast<const void*>(&beta) : &beta_f;
      REQUIRE(F().cublasGemmEx(handle, ta, tb, m, n, k, pa, da.get(), t.ab, lda, db.get(), t.ab, ldb, pb, dc.get(), t.c,
                               ldc, t.compute, -1) == 0);
      const std::vector<double> want = Reference(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      const std::vector<double> got = dc.Read();
      for (size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(got[i] == RoundTo(t.c, want[i]));  // padding rows too: beta·C there stays C
        if (static_cast<int>(i) % ldc == m) CHECK(got[i] == c[i]);
      }
    }
  }
  CHECK(F().cublasDestroy(handle) == 0);
}

TEST_CASE("fake_cuda: fp16 and bf16 outputs round to nearest even, subnormals and overflow included") {
  void* handle = nullptr;
  REQUIRE(F().cublasCreate(&handle) == 0);
  // alpha·(a0 + a1) in a 1x1x2 product with B = [1, 1], stored in `type`.
  const auto gemm = [&](int type, float alpha, double a0, double a1) {
    const Device a(type, {a0, a1}), b(type, {1.0, 1.0}), c(type, {0.0});
    const float zero = 0;
    REQUIRE(F().cublasGemmEx(handle, 0, 0, 1, 1, 2, &alpha, a.get(), type, 1, b.get(), type, 2, &zero, c.get(), type, 1,
                             kCompute32F, -1) == 0);
    return c.Read()[0];
  };
  const auto p2 = [](int e) { return std::ldexp(1.0, e); };
  CHECK(gemm(kF16, 1, 1, p2(-11)) == 1);                // a tie: to the even neighbour
  CHECK(gemm(kF16, 1, 1, 3 * p2(-12)) == 1 + p2(-10));  // above the tie: up
  CHECK(gemm(kF16, 1, -1, -p2(-11)) == -1);
  CHECK(gemm(kF16, 0.5f, p2(-24), 0) == 0);                // half the smallest subnormal: a tie, to 0
  CHECK(gemm(kF16, 0.5f, 3 * p2(-24), 0) == 2 * p2(-24));  // 1.5 subnormal steps: to the even 2
  CHECK(gemm(kF16, 1, 65504, 8) == 65504);
  CHECK(gemm(kF16, 1, 65504, 16) == INFINITY);  // 65520 rounds past the largest half
  CHECK(gemm(kBf16, 1, 1, p2(-8)) == 1);
  CHECK(gemm(kBf16, 1, 1, 3 * p2(-9)) == 1 + p2(-7));
  const double bf16_max = (2 - p2(-7)) * p2(127);
  CHECK(gemm(kBf16, 1, bf16_max, p2(119)) == INFINITY);  // a tie above the odd largest: up, to infinity
  CHECK(gemm(kBf16, 1, bf16_max, p2(118)) == bf16_max);
  CHECK(F().cublasDestroy(handle) == 0);
}

TEST_CASE("fake_cuda: TF32 compute rounds the inputs to 10 mantissa bits, to nearest even") {
  void* handle = nullptr;
  REQUIRE(F().cublasCreate(&handle) == 0);
  // 1 + 2^-11 is halfway between TF32 neighbours 1 and 1 + 2^-10 (rounds to 1, the even one);
  // 1 + 3·2^-12 lies above halfway and rounds up.
  for (const double x : {1 + std::ldexp(1, -11), 1 + 3 * std::ldexp(1, -12)}) {
    const Device a(kF32, {x}), b(kF32, {1.0}), c32(kF32, {0.0}), ctf(kF32, {0.0});
    const float one = 1, zero = 0;
    REQUIRE(F().cublasGemmEx(handle, 0, 0, 1, 1, 1, &one, a.get(), kF32, 1, b.get(), kF32, 1, &zero, c32.get(), kF32, 1,
                             kCompute32F, -1) == 0);
    REQUIRE(F().cublasGemmEx(handle, 0, 0, 1, 1, 1, &one, a.get(), kF32, 1, b.get(), kF32, 1, &zero, ctf.get(), kF32, 1,
                             kComputeTf32, -1) == 0);
    CHECK(c32.Read()[0] == x);
    CHECK(ctf.Read()[0] == (x < 1 + std::ldexp(1, -11) + 1e-9 ? 1 : 1 + std::ldexp(1, -10)));
  }
  CHECK(F().cublasDestroy(handle) == 0);
}

TEST_CASE("fake_cuda: cublasGemmEx refuses what cuBLAS refuses") {
  void* handle = nullptr;
  REQUIRE(F().cublasCreate(&handle) == 0);
  const Device a(kF32, Eighths(64, 1)), b(kF32, Eighths(64, 2)), c(kF32, Eighths(64, 3));
  const float one = 1, zero = 0;
  const auto gemm = [&](void* h, int ta, int m, int n, int k, int type, int lda, int ldc, int compute, const void* pa) {
    return F().cublasGemmEx(h, ta, 0, m, n, k, &one, pa, type, lda, b.get(), type, 8, &zero, c.get(), kF32, ldc,
                            compute, -1);
  };
  CHECK(gemm(handle, 0, 4, 4, 4, kF32, 4, 4, kCompute32F, a.get()) == 0);
  CHECK(gemm(nullptr, 0, 4, 4, 4, kF32, 4, 4, kCompute32F, a.get()) == 1);  // NOT_INITIALIZED
  CHECK(gemm(handle, 0, 4, 4, 4, kF32, 3, 4, kCompute32F, a.get()) == 7);   // lda < m
  CHECK(gemm(handle, 1, 4, 4, 6, kF32, 4, 4, kCompute32F, a.get()) == 7);   // transposed: lda < k
  CHECK(gemm(handle, 0, 4, 4, 4, kF32, 4, 3, kCompute32F, a.get()) == 7);   // ldc < m
  CHECK(gemm(handle, 0, -1, 4, 4, kF32, 4, 4, kCompute32F, a.get()) == 7);
  CHECK(gemm(handle, 3, 4, 4, 4, kF32, 4, 4, kCompute32F, a.get()) == 7);   // no such op
  CHECK(gemm(handle, 0, 4, 4, 4, kF32, 4, 4, kCompute64F, a.get()) == 15);  // fp32 data, fp64 compute
  CHECK(gemm(handle, 0, 4, 4, 4, kF16, 4, 4, kComputeTf32, a.get()) == 15);
  CHECK(gemm(handle, 0, 0, 4, 4, kF32, 1, 1, kCompute32F, a.get()) == 0);  // m = 0: nothing to do
  const std::vector<float> host(64, 0);
  CHECK(gemm(handle, 0, 4, 4, 4, kF32, 4, 4, kCompute32F, host.data()) == 13);  // not device memory
  CHECK(gemm(handle, 0, 8, 8, 8, kF32, 8, 8, kCompute32F, a.get()) == 0);
  CHECK(gemm(handle, 0, 8, 8, 8, kF32, 9, 8, kCompute32F, a.get()) == 13);  // lda 9: A overruns its 64
  CHECK(F().cublasDestroy(handle) == 0);
}

TEST_CASE("fake_cuda: FAKE_CUDA_WRONG puts element 0 off by one") {
  void* handle = nullptr;
  REQUIRE(F().cublasCreate(&handle) == 0);
  const Device a(kF32, {1, 2, 3, 4}), b(kF32, {1, 0, 0, 1}), c(kF32, {0, 0, 0, 0});
  const float one = 1, zero = 0;
  const ScopedEnv wrong("FAKE_CUDA_WRONG", "1");
  REQUIRE(F().cublasGemmEx(handle, 0, 0, 2, 2, 2, &one, a.get(), kF32, 2, b.get(), kF32, 2, &zero, c.get(), kF32, 2,
                           kCompute32F, -1) == 0);
  CHECK(c.Read() == std::vector<double>{2, 2, 3, 4});
  const Lt lt(kBf16, kF32, false, false, 2, 2, 2);
  const Device ha(kBf16, {1, 2, 3, 4}), hb(kBf16, {1, 0, 0, 1});
  REQUIRE(lt.Run(1, ha, hb, 0, c) == 0);
  CHECK(c.Read() == std::vector<double>{2, 2, 3, 4});
  CHECK(F().cublasDestroy(handle) == 0);
}

TEST_CASE("fake_cuda: cublasLtMatmul in bf16, fp16 and fp32 with any transposes") {
  const int m = 3, n = 5, k = 7;
  for (const int type : {kBf16, kF16, kF32}) {
    for (int op = 0; op < 4; ++op) {
      const bool ta = (op & 1) != 0, tb = (op & 2) != 0;
      CAPTURE(type);
      CAPTURE(ta);
      CAPTURE(tb);
      const Lt lt(type, kF32, ta, tb, m, n, k);
      int returned = -1;
      CHECK((lt.Heuristic(&returned) == 0 && returned == 1));
      const std::vector<double> a = Eighths(m * k, 1), b = Eighths(k * n, 2), c = Eighths(m * n, 3);
      const Device da(type, a), db(type, b), dc(kF32, c);
      REQUIRE(lt.Run(2, da, db, 0.25f, dc) == 0);
      CHECK(dc.Read() == Reference(ta, tb, m, n, k, 2, a, ta ? k : m, b, tb ? n : k, 0.25, c, m));
    }
  }
}

TEST_CASE("fake_cuda: cuBLASLt fp8 e4m3 decodes every byte, NaN included") {
  // D = I·B with A the identity: D holds B's 256 patterns decoded (NaN bytes apart: 0·NaN poisons
  // a whole column).
  const Lt lt(kE4m3, kF32, true, false, 16, 16, 16);
  std::vector<double> identity(256, 0), patterns(256, 0);
  for (int i = 0; i < 16; ++i) identity[static_cast<size_t>(i * 17)] = 1;
  for (int b = 0; b < 256; ++b) {
    patterns[static_cast<size_t>(b)] = b == 0x7F || b == 0xFF ? 0 : E4m3(static_cast<uint8_t>(b));
  }
  const Device a(kE4m3, identity), b(kE4m3, patterns), d(kF32, std::vector<double>(256, 0));
  REQUIRE(lt.Run(1, a, b, 0, d) == 0);
  const std::vector<double> got = d.Read();
  CHECK(got == patterns);
  CHECK(got[0x38] == 1);
  CHECK(got[0x7E] == 448);  // the largest finite value
  CHECK(got[0xFE] == -448);
  CHECK(got[0x08] == std::ldexp(1, -6));  // the smallest normal
  CHECK(got[0x01] == std::ldexp(1, -9));  // the smallest subnormal
  CHECK(got[0x7A] == 320);
  patterns[0] = NAN;  // encodes as 0x7F
  const Device nan(kE4m3, patterns);
  REQUIRE(lt.Run(1, a, nan, 0, d) == 0);
  for (int i = 0; i < 16; ++i) CHECK(std::isnan(d.Read()[static_cast<size_t>(i)]));
}

TEST_CASE("fake_cuda: cuBLASLt fp8 TN with scale factors into bf16, fp16 and fp32") {
  const int m = 16, n = 32, k = 48;
  for (const int c_type : {kBf16, kF16, kF32}) {
    CAPTURE(c_type);
    const Lt lt(kE4m3, c_type, true, false, m, n, k);
    const Device scale_a(kF32, {0.5}), scale_b(kF32, {4});
    const void* pa = scale_a.get();
    const void* pb = scale_b.get();
    REQUIRE(F().descSet(lt.desc, 17, &pa, sizeof pa) == 0);
    REQUIRE(F().descSet(lt.desc, 18, &pb, sizeof pb) == 0);
    int returned = -1;
    CHECK((lt.Heuristic(&returned) == 0 && returned == 1));
    const std::vector<double> a = Eighths(k * m, 1), b = Eighths(k * n, 2), c = Eighths(m * n, 3);
    const Device da(kE4m3, a), db(kE4m3, b), dc(c_type, c);
    REQUIRE(lt.Run(1.5f, da, db, 1, dc) == 0);
    const std::vector<double> want = Reference(true, false, m, n, k, 1.5 * 0.5 * 4, a, k, b, k, 1, c, m);
    const std::vector<double> got = dc.Read();
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == RoundTo(c_type, want[i]));
  }
}

TEST_CASE("fake_cuda: cuBLASLt refuses fp8 outside Hopper's TN layout and multiples of 16") {
  int returned = -1;
  const Device a(kE4m3, Eighths(512, 1)), b(kE4m3, Eighths(512, 2)), d(kBf16, Eighths(512, 3));
  for (int op = 0; op < 4; ++op) {
    const bool ta = (op & 1) != 0, tb = (op & 2) != 0;
    const Lt lt(kE4m3, kBf16, ta, tb, 16, 16, 16);
    const int want = ta && !tb ? 0 : 15;
    CHECK(lt.Heuristic(&returned) == want);
    CHECK(returned == (want == 0 ? 1 : 0));
    CHECK(lt.Run(1, a, b, 0, d) == want);
  }
  const Lt odd(kE4m3, kBf16, true, false, 8, 16, 16);
  CHECK(odd.Heuristic(&returned) == 15);
  CHECK(returned == 0);
  CHECK(odd.Run(1, a, b, 0, d) == 15);
  const Lt fp64_out(kE4m3, kF64, true, false, 16, 16, 16);
  CHECK(fp64_out.Heuristic(&returned) == 15);
  const Lt fp8_out(kE4m3, kE4m3, true, false, 16, 16, 16);  // fp8 D needs a bf16/fp16 C: not faked
  CHECK(fp8_out.Heuristic(&returned) == 15);
  const Lt fp32_in_bf16_out(kF32, kBf16, false, false, 4, 4, 4);
  CHECK(fp32_in_bf16_out.Heuristic(&returned) == 15);
}

TEST_CASE("fake_cuda: fp8 takes only TN on Ada, Hopper and Blackwell GeForce, any layout on Blackwell B200") {
  // cuBLAS documentation, cublasLtMatmul: "A must be transposed and B non-transposed (The TN format)
  // on Ada (compute capability 8.9), Hopper (9.0), and Blackwell GeForce (12.x) GPUs".
  int returned = -1;
  for (const char* cc : {"8.9", "9.0", "12.0", "10.0"}) {
    CAPTURE(cc);
    const ScopedEnv env("FAKE_CUDA_CC", cc);
    const Lt nn(kE4m3, kBf16, false, false, 16, 16, 16);
    CHECK(nn.Heuristic(&returned) == (std::string(cc) == "10.0" ? 0 : 15));
  }
}

TEST_CASE("fake_cuda: the calls an H200 refused are refused: NN, TT and k = 50 (issue 31)") {
  // scripts/gpu/fp8_probe.cc on an H200 (cuBLASLt 130100): tally's 16x32x48 (row-major m x n x k) as
  // the column-major TN call D (32 x 16) = Aᵀ·B ran; NN, TT and 16x32x50 got 15 from the heuristic.
  // The fake's Lt takes cuBLAS's column-major m, n, k: tally's m x n x k is (n, m, k) there.
  int returned = -1;
  const Device a(kE4m3, Eighths(32 * 64, 1)), b(kE4m3, Eighths(16 * 64, 2)), d(kBf16, Eighths(32 * 16, 3));
  const Lt tn(kE4m3, kBf16, true, false, 32, 16, 48);
  CHECK(tn.Heuristic(&returned) == 0);
  CHECK(tn.Run(1, a, b, 0, d) == 0);
  for (const bool ta : {false, true}) {
    const Lt not_tn(kE4m3, kBf16, ta, ta, 32, 16, 48);  // NN and TT
    CAPTURE(ta);
    CHECK(not_tn.Heuristic(&returned) == 15);
    CHECK(returned == 0);
    CHECK(not_tn.Run(1, a, b, 0, d) == 15);
  }
  const Lt k50(kE4m3, kBf16, true, false, 32, 16, 50);  // ld = k = 50 too
  CHECK(k50.Heuristic(&returned) == 15);
  CHECK(returned == 0);
  CHECK(k50.Run(1, a, b, 0, d) == 15);
}

TEST_CASE("fake_cuda: fp8 scale pointers 4 bytes apart are refused by Matmul, not the heuristic (issue 31)") {
  // What the H200 did with tally's first fp8 call: both scales in one allocation, B's at +4 bytes.
  // The heuristic offered algorithms and cublasLtMatmul returned 15 for each.
  const Lt lt(kE4m3, kBf16, true, false, 32, 16, 48);
  const Device a(kE4m3, Eighths(32 * 48, 1)), b(kE4m3, Eighths(16 * 48, 2)), d(kBf16, Eighths(32 * 16, 3));
  const Device scales(kF32, {1, 1});
  const void* sa = scales.get();
  const void* sb = static_cast<const float*>(scales.get()) + 1;
  REQUIRE(F().descSet(lt.desc, 17, &sa, sizeof sa) == 0);
  REQUIRE(F().descSet(lt.desc, 18, &sb, sizeof sb) == 0);
  int returned = -1;
  CHECK(lt.Heuristic(&returned) == 0);
  CHECK(returned == 1);
  CHECK(lt.Run(1, a, b, 0, d) == 15);
  // Each scale in its own allocation (tally now) runs, and so does none (scale 1, cublasLt.h).
  const Device own(kF32, {1});
  const void* sc = own.get();
  REQUIRE(F().descSet(lt.desc, 18, &sc, sizeof sc) == 0);
  CHECK(lt.Run(1, a, b, 0, d) == 0);
  const void* none = nullptr;
  REQUIRE(F().descSet(lt.desc, 17, &none, sizeof none) == 0);
  REQUIRE(F().descSet(lt.desc, 18, &none, sizeof none) == 0);
  CHECK(lt.Run(1, a, b, 0, d) == 0);
}

TEST_CASE("fake_cuda: fp8 pointers must be 16-byte aligned, and a D scale needs an fp8 D") {
  // cuBLAS documentation, cublasLtMatmul: "All matrix pointers must be 16-byte aligned" for fp8.
  const Lt lt(kE4m3, kBf16, true, false, 16, 16, 16);
  const Device a(kE4m3, Eighths(256 + 16, 1)), b(kE4m3, Eighths(256, 2)), d(kBf16, Eighths(256, 3));
  const float one = 1, zero = 0;
  const auto* base = static_cast<const unsigned char*>(a.get());
  for (const int offset : {0, 1, 8, 16}) {
    CAPTURE(offset);
    CHECK(F().ltMatmul(lt.handle, lt.desc, &one, base + offset, lt.a, b.get(), lt.b, &zero, d.get(), lt.c, d.get(),
                       lt.c, nullptr, nullptr, 0, nullptr) == (offset % 16 == 0 ? 0 : 15));
  }
  // cublasLt.h: a scale set for an unsupported combination makes cublasLtMatmul return INVALID_VALUE.
  const Device scale(kF32, {1});
  const void* ps = scale.get();
  REQUIRE(F().descSet(lt.desc, 20, &ps, sizeof ps) == 0);  // D_SCALE_POINTER with a bf16 D
  int returned = -1;
  CHECK(lt.Heuristic(&returned) == 7);
  CHECK(lt.Run(1, a, b, 0, d) == 7);
}

TEST_CASE("fake_cuda: the heuristic offers several algorithms, and the knobs refuse some or all") {
  const Lt lt(kE4m3, kBf16, true, false, 16, 16, 16);
  const Device a(kE4m3, Eighths(256, 1)), b(kE4m3, Eighths(256, 2)), d(kBf16, Eighths(256, 3));
  HeuristicResult results[8] = {};
  int returned = 0;
  REQUIRE(F().heuristic(lt.handle, lt.desc, lt.a, lt.b, lt.c, lt.c, lt.pref, 8, results, &returned) == 0);
  REQUIRE(returned == 4);
  const float one = 1, zero = 0;
  auto run = [&](const HeuristicResult& r) {
    return F().ltMatmul(lt.handle, lt.desc, &one, a.get(), lt.a, b.get(), lt.b, &zero, d.get(), lt.c, d.get(), lt.c,
                        r.algo, nullptr, 0, nullptr);
  };
  {
    // A heuristic's offer is no promise (NVIDIA's LtFp8Matmul sample): here, the first two refused.
    const ScopedEnv env("FAKE_CUDA_LT_REFUSE_ALGOS", "2");
    CHECK(run(results[0]) == 15);
    CHECK(run(results[1]) == 15);
    CHECK(run(results[2]) == 0);
  }
  CHECK(run(results[0]) == 0);
  // No kernel above 16·16·16 = 4096 multiply-adds: a 16³ product runs, 32x16x16 does not.
  const ScopedEnv env("FAKE_CUDA_LT_REFUSE_ABOVE", "4096");
  CHECK(run(results[0]) == 0);
  const Lt big(kE4m3, kBf16, true, false, 32, 16, 16);
  CHECK(big.Heuristic(&returned) == 15);
}

TEST_CASE("fake_cuda: cuBLASLt descriptors, scales and pointers are checked") {
  const Lt lt(kBf16, kBf16, false, false, 4, 4, 4);
  const Device a(kBf16, Eighths(16, 1)), b(kBf16, Eighths(16, 2)), c(kBf16, Eighths(16, 3));
  const int32_t op = 0;
  CHECK(F().descSet(lt.desc, 3, &op, 2) == 7);   // wrong size
  CHECK(F().descSet(lt.desc, 7, &op, 4) == 15);  // EPILOGUE: real, not faked
  const int8_t fast = 1;
  CHECK(F().descSet(lt.desc, 25, &fast, 1) == 0);
  const Device scale(kF32, {2});
  const void* ps = scale.get();
  REQUIRE(F().descSet(lt.desc, 17, &ps, sizeof ps) == 0);
  int returned = -1;
  CHECK(lt.Heuristic(&returned) == 7);  // scale factors apply to fp8 only
  CHECK(lt.Run(1, a, b, 0, c) == 7);
  const void* none = nullptr;
  REQUIRE(F().descSet(lt.desc, 17, &none, sizeof none) == 0);
  CHECK(lt.Run(1, a, b, 0, c) == 0);

  // An fp8 scale factor in host memory would fault on a GPU.
  const Lt fp8(kE4m3, kBf16, true, false, 16, 16, 16);
  const Device a8(kE4m3, Eighths(256, 1)), b8(kE4m3, Eighths(256, 2)), d8(kBf16, Eighths(256, 3));
  alignas(16) const float host_scale = 1;  // aligned: the fault, not the alignment, is checked
  const void* ph = &host_scale;
  REQUIRE(F().descSet(fp8.desc, 18, &ph, sizeof ph) == 0);
  CHECK(fp8.Run(1, a8, b8, 0, d8) == 13);

  void* layout = nullptr;
  REQUIRE(F().layoutCreate(&layout, kBf16, 4, 4, 3) == 0);  // ld < rows
  void* pref = lt.pref;
  HeuristicResult result{};
  CHECK(F().heuristic(lt.handle, lt.desc, layout, lt.b, lt.c, lt.c, pref, 1, &result, &returned) == 7);
  CHECK(F().layoutDestroy(layout) == 0);
}
