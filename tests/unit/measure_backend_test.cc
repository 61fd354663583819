// Each backend against a naive product, the checks that refuse a wrong BLAS, and the CUDA paths
// that need no GPU (library loading and its errors).
#include <doctest/doctest.h>

#include "measure/backend.h"
#include "measure/cuda_api.h"
#include "measure/dynamic_library.h"
#include "measure/measure.h"
#include "util/error.h"

namespace tally {
namespace {

// C = op(A)·op(B) with A stored k x m when trans_a and B stored n x k when trans_b.
std::vector<double> Naive(const GemmShape& s, const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> c(s.m * s.n, 0);
  for (uint64_t i = 0; i < s.m; ++i) {
    for (uint64_t j = 0; j < s.n; ++j) {
      for (uint64_t p = 0; p < s.k; ++p) {
        const double x = s.trans_a ? a[p * s.m + i] : a[i * s.k + p];
        const double y = s.trans_b ? b[j * s.k + p] : b[p * s.n + j];
        c[i * s.n + j] += x * y;
      }
    }
  }
  return c;
}

// Quarters in [-1, 1]: exact in fp32 and fp64 products and sums.
std::vector<double> Quarters(uint64_t size, uint64_t salt) {
  std::vector<double> v(size);
  for (uint64_t i = 0; i < size; ++i) v[i] = static_cast<double>(static_cast<int>((i * 5 + salt) % 9) - 4) / 4;
  return v;
}

TEST_CASE("measure backend: OpenBLAS sgemm and dgemm equal a naive triple loop") {
  std::unique_ptr<GemmBackend> blas = MakeOpenBlasBackend();
  CHECK(blas->Device() == "cpu");
  for (GemmDType d : {GemmDType::kFp32, GemmDType::kFp64}) {
    CAPTURE(GemmDTypeName(d));
    CHECK(blas->Unsupported(d).empty());
    for (int threads : {1, 2}) {
      blas->SetThreads(threads);
      for (GemmShape s : {GemmShape{3, 5, 7}, GemmShape{17, 13, 11}, GemmShape{1, 1, 1}, GemmShape{40, 2, 90}}) {
        for (const std::string layout : {"NN", "NT", "TN", "TT"}) {
          s.trans_a = layout[0] == 'T';
          s.trans_b = layout[1] == 'T';
          CAPTURE(s.Text());
          const std::vector<double> a = Quarters(s.m * s.k, 1), b = Quarters(s.k * s.n, 2);
          CHECK(blas->Multiply(s, d, a, b) == Naive(s, a, b));
        }
      }
      CHECK_NOTHROW(CheckAgainstNaive(*blas, d));
    }
  }
}

TEST_CASE("measure backend: OpenBLAS says why it cannot run a dtype") {
  std::unique_ptr<GemmBackend> blas = MakeOpenBlasBackend();
  CHECK(blas->Unsupported(GemmDType::kTf32) == "tf32 is a tensor-core format of NVIDIA GPUs");
  CHECK(blas->Unsupported(GemmDType::kFp16) == "CBLAS has no fp16 GEMM");
  // Debian's libopenblas.so.0 declares cblas_sbgemm in cblas.h but does not export it.
  if (DynamicLibrary::Open({"libopenblas.so.0"}).Symbol("cblas_sbgemm") == nullptr) {
    CHECK(blas->Unsupported(GemmDType::kBf16) ==
          "this OpenBLAS (libopenblas.so.0) does not export cblas_sbgemm (Debian's 0.3.21 declares it in cblas.h "
          "but builds the library without it)");
  } else {
    CHECK_NOTHROW(CheckAgainstNaive(*blas, GemmDType::kBf16));
  }
}

TEST_CASE("measure backend: a prepared GEMM runs outside any allocation") {
  std::unique_ptr<GemmBackend> blas = MakeOpenBlasBackend();
  std::unique_ptr<PreparedGemm> gemm = blas->Prepare({64, 48, 32}, GemmDType::kFp32);
  CHECK(gemm->Time(3) >= 0);  // runs; its duration is not asserted
}

TEST_CASE("measure backend: a library that cannot load is a RuntimeError naming it") {
  CHECK_THROWS_WITH_AS(MakeOpenBlasBackend({{"libtally-no-such-blas.so"}}),
                       "cannot load OpenBLAS: libtally-no-such-blas.so: cannot open shared object file: No such "
                       "file or directory",
                       RuntimeError);
  CHECK_THROWS_WITH_AS(MakeCudaBackend({.driver = {"libtally-no-such-driver.so.1", "libtally-no-such-driver.so"}}),
                       "no CUDA driver found: libtally-no-such-driver.so.1: cannot open shared object file: No such "
                       "file or directory",
                       RuntimeError);
  CHECK_THROWS_AS(MakeBackend("tpu"), InputError);
}

TEST_CASE("measure backend: without a GPU, --device cuda stops at the driver or the device") {
  // On a machine with a driver and a GPU this constructs; without, it names what is missing.
  try {
    std::unique_ptr<GemmBackend> cuda = MakeCudaBackend();
    CHECK(cuda->Device() == "cuda");
    CHECK_NOTHROW(CheckAgainstNaive(*cuda, GemmDType::kFp32));
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    CHECK((what.rfind("no CUDA driver found: ", 0) == 0 || what.rfind("no CUDA device found: ", 0) == 0 ||
           what.rfind("the CUDA driver failed to start: ", 0) == 0));
  }
}

TEST_CASE("measure backend: every CUDA symbol tally calls exists in an installed toolkit") {
  // The toolkit's libraries load without a driver; LoadToolkit resolves each symbol by name and
  // throws naming any that is missing. Skipped where no toolkit is installed.
  if (!DynamicLibrary::Open(CudaLibraryNames{}.runtime).loaded()) {
    MESSAGE("no CUDA toolkit on this machine: symbol check skipped");
    return;
  }
  cuda::Api api;
  REQUIRE_NOTHROW(cuda::LoadToolkit(api, CudaLibraryNames{}));
  CHECK(api.cublas_lt_error.empty());
  CHECK((api.cublas_gemm_ex != nullptr && api.lt_matmul != nullptr && api.lt_heuristic != nullptr &&
         api.event_elapsed_time != nullptr));
}

TEST_CASE("measure backend: the toolkit's stub libcuda is named as a stub, not a driver") {
  // CUDA toolkits ship lib64/stubs/libcuda.so for linking; its cuInit fails with
  // CUDA_ERROR_STUB_LIBRARY (34) and cuGetErrorString has no text for it.
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!DynamicLibrary::Open({stub}).loaded()) {
    MESSAGE("no stub libcuda at " << stub << ": skipped");
    return;
  }
  CHECK_THROWS_WITH_AS(MakeCudaBackend({.driver = {stub}}),
                       "the CUDA driver failed to start: cuInit: libcuda is the toolkit's stub library, not a driver; "
                       "install the NVIDIA driver, or put its libcuda.so.1 before the stubs/ folder on the library "
                       "path (code 34)",
                       RuntimeError);
}

TEST_CASE("measure backend: the clock is read on both sides of the timing and the higher kept") {
  MeasureRequest request;
  request.dtypes = {GemmDType::kFp32};
  request.shapes = {{64, 64, 64}};
  request.threads = {1};
  request.bench.budget_s = 0.005;
  request.bench.warmup_s = 0.001;
  const MeasureOutcome out = RunMeasure(request);
  auto number = [&](const std::string& key) {
    const ReportNode* node = out.report.Find(key);
    REQUIRE(node != nullptr);
    return std::get<double>(node->value);
  };
  const double clock = number("measure.cpu.clock_hz");
  CHECK(clock == std::max(number("measure.cpu.clock_before_hz"), number("measure.cpu.clock_after_hz")));
  CHECK(clock > 0);
  // The result's peak is one core's at the final clock: FLOP/cycle x 1 x clock.
  const double per_cycle = number("measure.peak.fp32.flop_per_cycle");
  const Table& results = *out.report.Find("measure.results")->table;
  REQUIRE(results.rows.size() == 1);
  const double peak = std::get<double>(*results.rows[0][results.ColumnIndex("peak_flop_per_s")]);
  CHECK(peak == doctest::Approx(per_cycle * clock));
}

// A BLAS that gets one element wrong: the check must refuse it.
class WrongBlas : public GemmBackend {
 public:
  std::string Device() const override { return "cpu"; }
  std::vector<std::pair<std::string, std::string>> Describe() const override { return {}; }
  std::string Unsupported(GemmDType) const override { return ""; }
  void SetThreads(int) override {}
  int Threads() const override { return 1; }
  std::vector<double> Multiply(const GemmShape& s, GemmDType, const std::vector<double>& a,
                               const std::vector<double>& b) override {
    std::vector<double> c = Naive(s, a, b);
    if (s.m == 17 && s.Layout() == "TN") c[2 * s.n + 3] += 0.5;
    return c;
  }
  std::unique_ptr<PreparedGemm> Prepare(const GemmShape&, GemmDType) override { return nullptr; }
};

TEST_CASE("measure backend: a wrong result stops the measurement") {
  WrongBlas wrong;
  // Operand values: ((i·7 + salt) mod 11 − 5) / 8; element (2, 3) of the 17x13x11 product when A
  // is read transposed: every layout is checked, not only NN.
  CHECK_THROWS_WITH_AS(CheckAgainstNaive(wrong, GemmDType::kFp32),
                       doctest::Contains("cpu fp32 GEMM 17x13x11:TN is wrong at element (2, 3): got "), RuntimeError);
}

}  // namespace
}  // namespace tally
