// The slice of the CUDA driver, CUDA runtime, cuBLAS and cuBLASLt that measure uses, resolved with
// dlopen so that tally neither links nor needs CUDA. Signatures and enum values are those of CUDA
// 11.8-13's cuda.h, cuda_runtime_api.h, library_types.h, cublas_api.h and cublasLt.h (stable across
// those versions; tests/unit/cuda_abi_test.cc checks them against the headers where installed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "measure/backend.h"
#include "measure/dynamic_library.h"

namespace tally::cuda {

// cudaDataType (library_types.h).
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14, kR8FE4M3 = 28;
// cublasComputeType_t (cublas_api.h).
constexpr int kCompute32F = 68, kCompute32FFastTf32 = 77, kCompute64F = 70;
constexpr int kOpN = 0, kOpT = 1;                    // cublasOperation_t
constexpr int kGemmDefault = -1;                     // CUBLAS_GEMM_DEFAULT
constexpr int kHostToDevice = 1, kDeviceToHost = 2;  // cudaMemcpyKind
// cudaDeviceAttr (driver_types.h).
constexpr int kAttrClockRateKhz = 13, kAttrMultiprocessors = 16, kAttrMemoryClockKhz = 36, kAttrMemoryBusBits = 37,
              kAttrMajor = 75, kAttrMinor = 76;
// cublasLtMatmulDescAttributes_t and cublasLtMatmulPreferenceAttributes_t (cublasLt.h).
constexpr int kLtDescTransA = 3, kLtDescTransB = 4, kLtDescAScalePointer = 17, kLtDescBScalePointer = 18;
constexpr int kLtPrefMaxWorkspaceBytes = 1;

// cublasLtMatmulHeuristicResult_t: an opaque 64-byte algorithm, then what it needs.
struct LtHeuristicResult {
  uint64_t algo[8] = {};
  size_t workspace_bytes = 0;
  int state = 0;
  float waves_count = 0;
  int reserved[4] = {};
};

struct Api {
  DynamicLibrary driver, runtime, cublas, cublas_lt;
  std::string cublas_lt_error;  // why cuBLASLt (and so fp8) is unavailable; empty when loaded

  int (*cu_init)(unsigned) = nullptr;
  int (*cu_driver_get_version)(int*) = nullptr;
  int (*cu_device_get_count)(int*) = nullptr;
  int (*cu_device_get)(int*, int) = nullptr;
  int (*cu_device_get_name)(char*, int, int) = nullptr;
  int (*cu_device_total_mem)(size_t*, int) = nullptr;
  int (*cu_get_error_string)(int, const char**) = nullptr;

  int (*set_device)(int) = nullptr;
  int (*device_get_attribute)(int*, int, int) = nullptr;
  int (*cuda_malloc)(void**, size_t) = nullptr;
  int (*cuda_free)(void*) = nullptr;
  int (*cuda_memcpy)(void*, const void*, size_t, int) = nullptr;
  int (*event_create)(void**) = nullptr;
  int (*event_record)(void*, void*) = nullptr;
  int (*event_synchronize)(void*) = nullptr;
  int (*event_elapsed_time)(float*, void*, void*) = nullptr;
  int (*event_destroy)(void*) = nullptr;
  int (*device_synchronize)() = nullptr;
  int (*runtime_get_version)(int*) = nullptr;
  const char* (*get_error_string)(int) = nullptr;

  int (*cublas_create)(void**) = nullptr;
  int (*cublas_destroy)(void*) = nullptr;
  int (*cublas_get_version)(void*, int*) = nullptr;
  int (*cublas_gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                        const void*, void*, int, int, int, int) = nullptr;

  int (*lt_create)(void**) = nullptr;
  int (*lt_destroy)(void*) = nullptr;
  int (*lt_desc_create)(void**, int, int) = nullptr;
  int (*lt_desc_destroy)(void*) = nullptr;
  int (*lt_desc_set)(void*, int, const void*, size_t) = nullptr;
  int (*lt_layout_create)(void**, int, uint64_t, uint64_t, int64_t) = nullptr;
  int (*lt_layout_destroy)(void*) = nullptr;
  int (*lt_pref_create)(void**) = nullptr;
  int (*lt_pref_destroy)(void*) = nullptr;
  int (*lt_pref_set)(void*, int, const void*, size_t) = nullptr;
  int (*lt_heuristic)(void*, void*, void*, void*, void*, void*, void*, int, LtHeuristicResult*, int*) = nullptr;
  int (*lt_matmul)(void*, void*, const void*, const void*, void*, const void*, void*, const void*, const void*, void*,
                   void*, void*, const void*, void*, size_t, void*) = nullptr;
};

// Loads the four libraries and initialises the driver. Throws RuntimeError: "no CUDA driver
// found: <dlerror>" without libcuda, "no CUDA device found: ..." when the driver sees none, and
// "cannot load the CUDA runtime / cuBLAS: ..." for the toolkit libraries. A missing cuBLASLt only
// sets cublas_lt_error: everything but fp8 runs without it.
void Load(Api& api, const CudaLibraryNames& names);
// The toolkit half of Load (runtime, cuBLAS, cuBLASLt), which needs no driver: tests resolve every
// symbol against an installed toolkit with it.
void LoadToolkit(Api& api, const CudaLibraryNames& names);

// Throws RuntimeError "<what>: <runtime's error text> (code N)" unless `status` is 0.
void CheckRuntime(const Api& api, int status, const std::string& what);
void CheckCublas(int status, const std::string& what);

}  // namespace tally::cuda
