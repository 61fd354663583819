#include "measure/backend.h"

#include <cmath>

#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

// Multiples of 1/8 in [-5/8, 5/8]: exact in every dtype measured (fp8 e4m3 included), so for
// k < 64 every product and partial sum is exact in an fp32 accumulator and any correct GEMM
// returns the naive result bit for bit, whatever its summation order.
std::vector<double> Operand(uint64_t rows, uint64_t cols, uint64_t salt) {
  std::vector<double> v(rows * cols);
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<int>((i * 7 + salt) % 11) - 5) / 8;
  return v;
}

std::vector<double> NaiveProduct(const GemmShape& s, const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> c(s.m * s.n, 0.0);
  for (uint64_t i = 0; i < s.m; ++i) {
    for (uint64_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (uint64_t p = 0; p < s.k; ++p) sum += a[i * s.k + p] * b[p * s.n + j];
      c[i * s.n + j] = sum;
    }
  }
  return c;
}

// The rounding of C when it is stored narrow (cuBLAS writes bf16 and fp16 results in kind, and fp8
// ones as bf16): half a unit in the last place of its significand (8 bits for bf16, 11 for fp16).
double OutputTolerance(GemmDType d) {
  switch (d) {
    case GemmDType::kFp8:
    case GemmDType::kInt8:
    case GemmDType::kBf16:
      return 1.0 / 256;
    case GemmDType::kFp16:
      return 1.0 / 2048;
    case GemmDType::kFp32:
    case GemmDType::kFp64:
    case GemmDType::kTf32:
      break;
  }
  return 1e-6;
}

std::vector<GemmShape> CheckShapes(GemmDType dtype) {
  std::vector<GemmShape> dims = {{3, 5, 7}, {17, 13, 11}, {64, 33, 63}};
  if (dtype == GemmDType::kFp8) dims = {{16, 32, 48}, {48, 16, 32}, {64, 48, 16}};
  std::vector<GemmShape> out;
  for (GemmShape s : dims) {
    for (int layout = 0; layout < 4; ++layout) {
      s.trans_a = (layout & 2) != 0;
      s.trans_b = (layout & 1) != 0;
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace

std::vector<double> Transposed(const std::vector<double>& v, uint64_t rows, uint64_t cols) {
  std::vector<double> t(v.size());
  for (uint64_t i = 0; i < rows; ++i) {
    for (uint64_t j = 0; j < cols; ++j) t[j * rows + i] = v[i * cols + j];
  }
  return t;
}

std::unique_ptr<GemmBackend> MakeBackend(const std::string& device) {
  if (device == "cpu") return MakeOpenBlasBackend();
  if (device == "cuda") return MakeCudaBackend();
  throw InputError("--device: unknown device '" + device + "'; use cpu (OpenBLAS) or cuda (cuBLAS)");
}

void CheckAgainstNaive(GemmBackend& backend, GemmDType dtype) {
  for (const GemmShape& s : CheckShapes(dtype)) {
    const std::vector<double> a = Operand(s.m, s.k, 1), b = Operand(s.k, s.n, 4);
    const std::vector<double> want = NaiveProduct(s, a, b);
    const std::vector<double> got =
        backend.Multiply(s, dtype, s.trans_a ? Transposed(a, s.m, s.k) : a, s.trans_b ? Transposed(b, s.k, s.n) : b);
    for (size_t i = 0; i < want.size(); ++i) {
      // Exact by construction (see Operand) up to the rounding of a narrow C.
      if (i < got.size() && std::fabs(got[i] - want[i]) <= OutputTolerance(dtype) * (1 + std::fabs(want[i]))) {
        continue;
      }
      const std::string value = i < got.size() ? FormatDouble(got[i]) : "nothing";
      throw RuntimeError(backend.Device() + " " + GemmDTypeName(dtype) + " GEMM " + s.Text() +
                         " is wrong at element (" + std::to_string(i / s.n) + ", " + std::to_string(i % s.n) +
                         "): got " + value + ", the naive product gives " + FormatDouble(want[i]) +
                         "; refusing to time a BLAS that computes wrong results");
    }
  }
}

}  // namespace tally
