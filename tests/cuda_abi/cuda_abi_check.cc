// tally declares the slice of CUDA it calls by hand (src/measure/cuda_api.h), so that it builds
// and runs without a toolkit. Where a toolkit's headers are installed, this file checks each of
// those declarations against them: compiling it is the test. Built only when cmake finds the
// headers (tests/CMakeLists.txt).
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

#include "measure/cuda_api.h"

namespace c = tally::cuda;

// Data and compute types, operations, the default algorithm, copy directions.
static_assert(c::kR32F == CUDA_R_32F && c::kR64F == CUDA_R_64F && c::kR16F == CUDA_R_16F);
static_assert(c::kR16BF == CUDA_R_16BF && c::kR8FE4M3 == CUDA_R_8F_E4M3);
static_assert(c::kCompute32F == CUBLAS_COMPUTE_32F && c::kCompute32FFastTf32 == CUBLAS_COMPUTE_32F_FAST_TF32 &&
              c::kCompute64F == CUBLAS_COMPUTE_64F);
static_assert(c::kOpN == CUBLAS_OP_N && c::kOpT == CUBLAS_OP_T && c::kGemmDefault == CUBLAS_GEMM_DEFAULT);
static_assert(c::kHostToDevice == cudaMemcpyHostToDevice && c::kDeviceToHost == cudaMemcpyDeviceToHost);

// Device attributes read for the report.
static_assert(c::kAttrClockRateKhz == cudaDevAttrClockRate &&
              c::kAttrMultiprocessors == cudaDevAttrMultiProcessorCount);
static_assert(c::kAttrMemoryClockKhz == cudaDevAttrMemoryClockRate &&
              c::kAttrMemoryBusBits == cudaDevAttrGlobalMemoryBusWidth);
static_assert(c::kAttrMajor == cudaDevAttrComputeCapabilityMajor && c::kAttrMinor == cudaDevAttrComputeCapabilityMinor);

// cuBLASLt's descriptor and preference attributes, and the heuristic result read back by value.
static_assert(c::kLtDescTransA == CUBLASLT_MATMUL_DESC_TRANSA && c::kLtDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(c::kLtDescAScalePointer == CUBLASLT_MATMUL_DESC_A_SCALE_POINTER &&
              c::kLtDescBScalePointer == CUBLASLT_MATMUL_DESC_B_SCALE_POINTER);
static_assert(c::kLtPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(sizeof(c::LtHeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(c::LtHeuristicResult, workspace_bytes) ==
              offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(c::LtHeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(sizeof(c::LtHeuristicResult::algo) == sizeof(cublasLtMatmulAlgo_t));

// Enums passed as int must be int-sized; handles and streams passed as void* must be pointers.
static_assert(sizeof(cudaDataType) == sizeof(int) && sizeof(cublasComputeType_t) == sizeof(int));
static_assert(sizeof(cublasStatus_t) == sizeof(int) && sizeof(cudaError_t) == sizeof(int));
static_assert(sizeof(CUresult) == sizeof(int) && sizeof(cublasOperation_t) == sizeof(int));
static_assert(std::is_pointer_v<cublasHandle_t> && std::is_pointer_v<cublasLtHandle_t> &&
              std::is_pointer_v<cudaEvent_t> && std::is_pointer_v<cudaStream_t> &&
              std::is_pointer_v<cublasLtMatmulDesc_t> && std::is_pointer_v<cublasLtMatrixLayout_t> &&
              std::is_pointer_v<cublasLtMatmulPreference_t>);
// The device ordinal is an int (CUdevice), and the driver's size_t-taking call is the _v2 one.
static_assert(std::is_same_v<CUdevice, int>);
static_assert(std::is_same_v<decltype(&cuDeviceTotalMem_v2), CUresult (*)(size_t*, CUdevice)>);
static_assert(CUDA_ERROR_NO_DEVICE == 100);

// Every function's arity and parameter widths, by taking its address as tally's pointer type after
// mapping the header's enums and handles to int and void*.
template <typename T>
using Plain = std::conditional_t<std::is_enum_v<T>, int, std::conditional_t<std::is_pointer_v<T>, void*, T>>;
template <typename R, typename... A, typename R2, typename... B>
constexpr bool Matches(R (*)(A...), R2 (*)(B...)) {
  if constexpr (sizeof...(A) != sizeof...(B)) {
    return false;
  } else {
    return sizeof(Plain<R>) == sizeof(R2) && (... && (sizeof(Plain<A>) == sizeof(B)));
  }
}
// C++ sees two cublasGemmEx (the second takes a cudaDataType compute type, for old callers); the
// cast picks the one tally means, and fails to compile if its signature changed.
using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                  const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                  cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
static_assert(Matches(static_cast<GemmEx>(&cublasGemmEx), decltype(c::Api::cublas_gemm_ex){}));
static_assert(Matches(&cublasLtMatmul, decltype(c::Api::lt_matmul){}));
static_assert(Matches(&cublasLtMatmulAlgoGetHeuristic, decltype(c::Api::lt_heuristic){}));
static_assert(Matches(&cublasLtMatrixLayoutCreate, decltype(c::Api::lt_layout_create){}));
static_assert(Matches(&cublasLtMatmulDescCreate, decltype(c::Api::lt_desc_create){}));
static_assert(Matches(&cublasLtMatmulDescSetAttribute, decltype(c::Api::lt_desc_set){}));
static_assert(Matches(&cublasLtMatmulPreferenceSetAttribute, decltype(c::Api::lt_pref_set){}));
static_assert(Matches(&cudaDeviceGetAttribute, decltype(c::Api::device_get_attribute){}));
static_assert(Matches(&cudaMemcpy, decltype(c::Api::cuda_memcpy){}));
static_assert(Matches(&cudaEventElapsedTime, decltype(c::Api::event_elapsed_time){}));
static_assert(Matches(&cudaEventRecord, decltype(c::Api::event_record){}));
static_assert(Matches(&cuDeviceGetName, decltype(c::Api::cu_device_get_name){}));
static_assert(Matches(&cuInit, decltype(c::Api::cu_init){}));
static_assert(Matches(&cuDriverGetVersion, decltype(c::Api::cu_driver_get_version){}));
static_assert(Matches(&cuDeviceGetCount, decltype(c::Api::cu_device_get_count){}));
static_assert(Matches(&cuDeviceGet, decltype(c::Api::cu_device_get){}));
static_assert(Matches(&cuDeviceTotalMem_v2, decltype(c::Api::cu_device_total_mem){}));
static_assert(Matches(&cuGetErrorString, decltype(c::Api::cu_get_error_string){}));
static_assert(Matches(&cudaSetDevice, decltype(c::Api::set_device){}));
static_assert(Matches(&cudaMalloc, decltype(c::Api::cuda_malloc){}));
static_assert(Matches(&cudaFree, decltype(c::Api::cuda_free){}));
static_assert(Matches(&cudaEventCreate, decltype(c::Api::event_create){}));
static_assert(Matches(&cudaEventSynchronize, decltype(c::Api::event_synchronize){}));
static_assert(Matches(&cudaEventDestroy, decltype(c::Api::event_destroy){}));
static_assert(Matches(&cudaDeviceSynchronize, decltype(c::Api::device_synchronize){}));
static_assert(Matches(&cudaRuntimeGetVersion, decltype(c::Api::runtime_get_version){}));
static_assert(Matches(&cudaGetErrorString, decltype(c::Api::get_error_string){}));
static_assert(Matches(&cublasCreate_v2, decltype(c::Api::cublas_create){}));
static_assert(Matches(&cublasDestroy_v2, decltype(c::Api::cublas_destroy){}));
static_assert(Matches(&cublasGetVersion_v2, decltype(c::Api::cublas_get_version){}));
static_assert(Matches(&cublasLtCreate, decltype(c::Api::lt_create){}));
static_assert(Matches(&cublasLtDestroy, decltype(c::Api::lt_destroy){}));
static_assert(Matches(&cublasLtMatmulDescDestroy, decltype(c::Api::lt_desc_destroy){}));
static_assert(Matches(&cublasLtMatrixLayoutDestroy, decltype(c::Api::lt_layout_destroy){}));
static_assert(Matches(&cublasLtMatmulPreferenceCreate, decltype(c::Api::lt_pref_create){}));
static_assert(Matches(&cublasLtMatmulPreferenceDestroy, decltype(c::Api::lt_pref_destroy){}));

int main() {
  std::printf("tally's CUDA declarations match this toolkit's headers (CUDA_VERSION %d)\n", CUDA_VERSION);
  return 0;
}
