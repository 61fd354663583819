// OpenBLAS through dlopen: cblas_sgemm, cblas_dgemm and, where the library exports it,
// cblas_sbgemm. The library's own thread count and core type are reported, never changed behind
// the user's back: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are only echoed.
#include <climits>
#include <cstdlib>

#include "measure/aligned_buffer.h"
#include "measure/backend.h"
#include "measure/dynamic_library.h"
#include "measure/float_convert.h"
#include "measure/stopwatch.h"
#include "util/error.h"

namespace tally {
namespace {

// Values of CBLAS_ORDER and CBLAS_TRANSPOSE in OpenBLAS's cblas.h; blasint is int in the LP64
// library (libopenblas.so.0; the ILP64 one is libopenblas64.so.0).
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111, kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using DgemmFn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                         int);
using SbgemmFn = void (*)(int, int, int, int, int, int, float, const uint16_t*, int, const uint16_t*, int, float,
                          float*, int);
using TextFn = char* (*)();
using GetThreadsFn = int (*)();
using SetThreadsFn = void (*)(int);

struct OpenBlas {
  DynamicLibrary lib;
  SgemmFn sgemm = nullptr;
  DgemmFn dgemm = nullptr;
  SbgemmFn sbgemm = nullptr;
  TextFn config = nullptr;
  TextFn corename = nullptr;
  GetThreadsFn get_threads = nullptr;
  SetThreadsFn set_threads = nullptr;
};

int Dim(uint64_t d, const GemmShape& s) {  // OpenBLAS's dimensions are int
  if (d > static_cast<uint64_t>(INT_MAX)) {
    throw InputError("GEMM " + s.Text() + ": OpenBLAS (32-bit blasint) takes dimensions up to 2^31 - 1");
  }
  return static_cast<int>(d);
}

// Pseudo-random values in [-1, 1): no zeros that a BLAS could skip, no denormals.
float FillValue(uint64_t i, uint64_t salt) {
  const uint64_t x = (i + salt) * 6364136223846793005ULL + 1442695040888963407ULL;
  return static_cast<float>(static_cast<double>(x >> 40) / static_cast<double>(1ULL << 23)) - 1.0f;
}

template <typename In, typename Out>
class CpuGemm : public PreparedGemm {
 public:
  using Call = void (*)(const OpenBlas&, const GemmShape&, const In*, const In*, Out*);
  CpuGemm(const OpenBlas& blas, const GemmShape& s, Call call, In (*convert)(float))
      : blas_(blas), shape_(s), call_(call), a_(s.m * s.k), b_(s.k * s.n), c_(s.m * s.n) {
    for (uint64_t i = 0; i < a_.size(); ++i) a_[i] = convert(FillValue(i, 1));
    for (uint64_t i = 0; i < b_.size(); ++i) b_[i] = convert(FillValue(i, 2));
    for (uint64_t i = 0; i < c_.size(); ++i) c_[i] = Out{};
  }

  double Time(uint64_t iterations) override {
    const auto start = Clock::now();
    for (uint64_t i = 0; i < iterations; ++i) call_(blas_, shape_, a_.data(), b_.data(), c_.data());
    return SecondsSince(start);
  }

 private:
  const OpenBlas& blas_;
  GemmShape shape_;
  Call call_;
  AlignedBuffer<In> a_, b_;
  AlignedBuffer<Out> c_;
};

// The row-major arguments of one call: each operand's op and leading dimension (its stored row).
struct Args {
  int m, n, k, trans_a, trans_b, lda, ldb;
};

Args ArgsOf(const GemmShape& s) {
  const int m = Dim(s.m, s), n = Dim(s.n, s), k = Dim(s.k, s);
  return {m, n, k, s.trans_a ? kTrans : kNoTrans, s.trans_b ? kTrans : kNoTrans, s.trans_a ? m : k, s.trans_b ? k : n};
}

void CallSgemm(const OpenBlas& o, const GemmShape& s, const float* a, const float* b, float* c) {
  const Args x = ArgsOf(s);
  o.sgemm(kRowMajor, x.trans_a, x.trans_b, x.m, x.n, x.k, 1.0f, a, x.lda, b, x.ldb, 0.0f, c, x.n);
}

void CallDgemm(const OpenBlas& o, const GemmShape& s, const double* a, const double* b, double* c) {
  const Args x = ArgsOf(s);
  o.dgemm(kRowMajor, x.trans_a, x.trans_b, x.m, x.n, x.k, 1.0, a, x.lda, b, x.ldb, 0.0, c, x.n);
}

void CallSbgemm(const OpenBlas& o, const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c) {
  const Args x = ArgsOf(s);
  o.sbgemm(kRowMajor, x.trans_a, x.trans_b, x.m, x.n, x.k, 1.0f, a, x.lda, b, x.ldb, 0.0f, c, x.n);
}

float AsFloat(float f) { return f; }
double AsDouble(float f) { return f; }

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "unset" : value;
}

class OpenBlasBackend : public GemmBackend {
 public:
  explicit OpenBlasBackend(OpenBlas blas) : blas_(std::move(blas)) {}

  std::string Device() const override { return "cpu"; }

  std::vector<std::pair<std::string, std::string>> Describe() const override {
    return {{"library", blas_.lib.Path("cblas_sgemm")},
            {"config", blas_.config()},
            {"core", blas_.corename()},
            {"OPENBLAS_NUM_THREADS", Env("OPENBLAS_NUM_THREADS")},
            {"OPENBLAS_CORETYPE", Env("OPENBLAS_CORETYPE")},
            {"OPENBLAS_L2_SIZE", Env("OPENBLAS_L2_SIZE")}};
  }

  std::string Unsupported(GemmDType d) const override {
    switch (d) {
      case GemmDType::kFp32:
      case GemmDType::kFp64:
        return "";
      case GemmDType::kBf16:
        return blas_.sbgemm != nullptr ? ""
                                       : "this OpenBLAS (" + blas_.lib.Name() +
                                             ") does not export cblas_sbgemm (Debian's 0.3.21 declares it in "
                                             "cblas.h but builds the library without it)";
      case GemmDType::kFp16:
        return "CBLAS has no fp16 GEMM";
      case GemmDType::kTf32:
        return "tf32 is a tensor-core format of NVIDIA GPUs";
      case GemmDType::kFp8:
        return "CBLAS has no fp8 GEMM";
      case GemmDType::kInt8:
        return "tally does not time integer GEMMs";
    }
    return "unknown dtype";
  }

  void SetThreads(int threads) override { blas_.set_threads(threads); }
  int Threads() const override { return blas_.get_threads(); }

  std::vector<double> Multiply(const GemmShape& s, GemmDType d, const std::vector<double>& a,
                               const std::vector<double>& b) override;
  std::unique_ptr<PreparedGemm> Prepare(const GemmShape& s, GemmDType d) override;

 private:
  OpenBlas blas_;
};

template <typename In, typename Out>
std::vector<double> MultiplyWith(const OpenBlas& o, const GemmShape& s,
                                 void (*call)(const OpenBlas&, const GemmShape&, const In*, const In*, Out*),
                                 In (*convert)(float), const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<In> a_in(a.size()), b_in(b.size());
  for (size_t i = 0; i < a.size(); ++i) a_in[i] = convert(static_cast<float>(a[i]));
  for (size_t i = 0; i < b.size(); ++i) b_in[i] = convert(static_cast<float>(b[i]));
  std::vector<Out> c(s.m * s.n);
  call(o, s, a_in.data(), b_in.data(), c.data());
  return std::vector<double>(c.begin(), c.end());
}

std::vector<double> OpenBlasBackend::Multiply(const GemmShape& s, GemmDType d, const std::vector<double>& a,
                                              const std::vector<double>& b) {
  if (d == GemmDType::kFp64) {
    // The fp64 check must not round through float: convert directly.
    std::vector<double> c(s.m * s.n);
    CallDgemm(blas_, s, a.data(), b.data(), c.data());
    return c;
  }
  if (d == GemmDType::kBf16) return MultiplyWith<uint16_t, float>(blas_, s, CallSbgemm, FloatToBf16, a, b);
  return MultiplyWith<float, float>(blas_, s, CallSgemm, AsFloat, a, b);
}

std::unique_ptr<PreparedGemm> OpenBlasBackend::Prepare(const GemmShape& s, GemmDType d) {
  for (uint64_t dim : {s.m, s.n, s.k}) Dim(dim, s);  // fail before allocating
  if (d == GemmDType::kFp64) return std::make_unique<CpuGemm<double, double>>(blas_, s, CallDgemm, AsDouble);
  if (d == GemmDType::kBf16) return std::make_unique<CpuGemm<uint16_t, float>>(blas_, s, CallSbgemm, FloatToBf16);
  return std::make_unique<CpuGemm<float, float>>(blas_, s, CallSgemm, AsFloat);
}

}  // namespace

std::unique_ptr<GemmBackend> MakeOpenBlasBackend(const OpenBlasLibraryNames& names) {
  OpenBlas o;
  o.lib = DynamicLibrary::Open(names.names);
  if (!o.lib.loaded()) throw RuntimeError("cannot load OpenBLAS: " + o.lib.Error());
  o.sgemm = o.lib.Function<SgemmFn>("cblas_sgemm");
  o.dgemm = o.lib.Function<DgemmFn>("cblas_dgemm");
  o.sbgemm = o.lib.Function<SbgemmFn>("cblas_sbgemm");
  o.config = o.lib.Function<TextFn>("openblas_get_config");
  o.corename = o.lib.Function<TextFn>("openblas_get_corename");
  o.get_threads = o.lib.Function<GetThreadsFn>("openblas_get_num_threads");
  o.set_threads = o.lib.Function<SetThreadsFn>("openblas_set_num_threads");
  if (!o.sgemm || !o.dgemm || !o.config || !o.corename || !o.get_threads || !o.set_threads) {
    throw RuntimeError(o.lib.Name() + " lacks cblas_sgemm, cblas_dgemm or the openblas_* queries; is it OpenBLAS?");
  }
  if (std::string(o.config()).find("USE64BITINT") != std::string::npos) {
    throw RuntimeError(o.lib.Name() + " is an ILP64 build (64-bit blasint); tally calls the LP64 interface");
  }
  return std::make_unique<OpenBlasBackend>(std::move(o));
}

}  // namespace tally
