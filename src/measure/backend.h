// GemmBackend: one BLAS behind one interface (OpenBLAS on the CPU, cuBLAS on an NVIDIA GPU), each
// loaded at run time. MakeBackend picks one by device name.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "measure/gemm_shape.h"
#include "util/error.h"

namespace tally {

// One shape's operands, allocated and filled when prepared, so no timed region allocates.
class PreparedGemm {
 public:
  virtual ~PreparedGemm() = default;
  // Runs the product `iterations` times back to back; returns the seconds elapsed by the device's
  // own clock (steady_clock on the CPU, CUDA events on a GPU).
  virtual double Time(uint64_t iterations) = 0;
};

// The library refuses this GEMM (cuBLASLt's CUBLAS_STATUS_NOT_SUPPORTED): a fact about the shape and
// dtype, recorded as the result's skip_reason rather than failing the whole run.
class GemmRefused : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// What a GPU backend reads from the device (zeros when unknown; the CPU's come from cpu_peak.h).
struct DeviceFacts {
  std::string name;
  uint64_t memory_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;
  double clock_hz = 0;
  uint64_t n_multiprocessors = 0;
};

class GemmBackend {
 public:
  virtual ~GemmBackend() = default;

  virtual std::string Device() const = 0;  // "cpu" or "cuda"
  // Facts to echo in the report, as (key, value): library, configuration, device, environment.
  virtual std::vector<std::pair<std::string, std::string>> Describe() const = 0;
  // Empty when `dtype` can be timed, else the reason it cannot.
  virtual std::string Unsupported(GemmDType dtype) const = 0;
  virtual DeviceFacts Facts() const { return {}; }

  // CPU threads for the next products (GPUs ignore it); Threads() is what the library reports.
  virtual void SetThreads(int threads) = 0;
  virtual int Threads() const = 0;

  // C = op(A)·op(B) once, for checking: row-major inputs stored as the shape's layout says (A is
  // k x m when trans_a), rounded to `dtype`; the result widened to double.
  virtual std::vector<double> Multiply(const GemmShape& shape, GemmDType dtype, const std::vector<double>& a,
                                       const std::vector<double>& b) = 0;
  // Throws GemmRefused when the library has no kernel for the shape and dtype.
  virtual std::unique_ptr<PreparedGemm> Prepare(const GemmShape& shape, GemmDType dtype) = 0;
  // The shape the device actually multiplies for `shape`: padded where the library requires
  // multiples (cuBLASLt's fp8), else `shape` itself.
  virtual GemmShape RunShape(const GemmShape& shape, GemmDType) const { return shape; }
};

// Library names the CUDA backend tries; tests replace them to reach the error paths.
struct CudaLibraryNames {
  std::vector<std::string> driver = {"libcuda.so.1", "libcuda.so"};
  std::vector<std::string> runtime = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  std::vector<std::string> cublas = {"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
  std::vector<std::string> cublas_lt = {"libcublasLt.so", "libcublasLt.so.13", "libcublasLt.so.12",
                                        "libcublasLt.so.11"};
};

struct OpenBlasLibraryNames {
  std::vector<std::string> names = {"libopenblas.so.0", "libopenblas.so"};
};

// "cpu" → OpenBLAS, "cuda" → cuBLAS. A library or driver that cannot be loaded is a RuntimeError
// (exit 3) naming what is missing; an unknown device is an InputError.
std::unique_ptr<GemmBackend> MakeBackend(const std::string& device);

std::unique_ptr<GemmBackend> MakeOpenBlasBackend(const OpenBlasLibraryNames& names = {});
std::unique_ptr<GemmBackend> MakeCudaBackend(const CudaLibraryNames& names = {});

// The transpose of a row-major rows x cols matrix (cols x rows): how an operand is stored when
// the shape reads it transposed.
std::vector<double> Transposed(const std::vector<double>& v, uint64_t rows, uint64_t cols);

// Checks the backend against a naive triple loop on small odd shapes (3x5x7, 17x13x11, 64x33x63)
// in every layout (NN, NT, TN, TT) before anything is timed; a wrong element is a RuntimeError, so
// a broken BLAS reports no speed. fp8 uses multiples of 16, the only shapes cuBLASLt takes. A
// GemmRefused passes through: the dtype cannot be measured on this device.
void CheckAgainstNaive(GemmBackend& backend, GemmDType dtype);

}  // namespace tally
