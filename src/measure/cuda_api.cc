#include "measure/cuda_api.h"

#include "util/error.h"

namespace tally::cuda {
namespace {

// Resolves `symbol` into `fn`, or throws naming the library that lacks it.
template <typename Fn>
void Resolve(const DynamicLibrary& lib, const char* symbol, Fn& fn) {
  fn = lib.Function<Fn>(symbol);
  if (fn == nullptr) throw RuntimeError(lib.Name() + " lacks " + symbol + "; is the CUDA installation complete?");
}

// The driver's own text, or, where it has none (the toolkit's stub libcuda answers every call with
// CUDA_ERROR_STUB_LIBRARY and no text), what cuda.h's CUresult says of the common codes.
std::string DriverError(const Api& api, int status) {
  const char* text = nullptr;
  if (api.cu_get_error_string != nullptr && api.cu_get_error_string(status, &text) != 0) text = nullptr;
  std::string said = text != nullptr ? text
                     : status == 34  ? "libcuda is the toolkit's stub library, not a driver; install the NVIDIA "
                                       "driver, or put its libcuda.so.1 before the stubs/ folder on the library path"
                     : status == 35  ? "the installed NVIDIA driver is older than this CUDA runtime"
                     : status == 999 ? "unknown error"
                                     : "CUDA driver error";
  return said + " (code " + std::to_string(status) + ")";
}

void LoadDriver(Api& api, const CudaLibraryNames& names) {
  api.driver = DynamicLibrary::Open(names.driver);
  if (!api.driver.loaded()) throw RuntimeError("no CUDA driver found: " + api.driver.Error());
  Resolve(api.driver, "cuGetErrorString", api.cu_get_error_string);
  Resolve(api.driver, "cuInit", api.cu_init);
  Resolve(api.driver, "cuDriverGetVersion", api.cu_driver_get_version);
  Resolve(api.driver, "cuDeviceGetCount", api.cu_device_get_count);
  Resolve(api.driver, "cuDeviceGet", api.cu_device_get);
  Resolve(api.driver, "cuDeviceGetName", api.cu_device_get_name);
  Resolve(api.driver, "cuDeviceTotalMem_v2", api.cu_device_total_mem);
  constexpr int kNoDevice = 100;  // CUDA_ERROR_NO_DEVICE
  const int status = api.cu_init(0);
  if (status == kNoDevice) throw RuntimeError("no CUDA device found: the driver sees no GPU");
  if (status != 0) throw RuntimeError("the CUDA driver failed to start: cuInit: " + DriverError(api, status));
  int count = 0;
  if (api.cu_device_get_count(&count) != 0 || count == 0) {
    throw RuntimeError("no CUDA device found: the driver sees no GPU");
  }
}

void LoadRuntime(Api& api, const CudaLibraryNames& names) {
  api.runtime = DynamicLibrary::Open(names.runtime);
  if (!api.runtime.loaded()) throw RuntimeError("cannot load the CUDA runtime: " + api.runtime.Error());
  const DynamicLibrary& rt = api.runtime;
  Resolve(rt, "cudaGetErrorString", api.get_error_string);
  Resolve(rt, "cudaSetDevice", api.set_device);
  Resolve(rt, "cudaDeviceGetAttribute", api.device_get_attribute);
  Resolve(rt, "cudaMalloc", api.cuda_malloc);
  Resolve(rt, "cudaFree", api.cuda_free);
  Resolve(rt, "cudaMemcpy", api.cuda_memcpy);
  Resolve(rt, "cudaEventCreate", api.event_create);
  Resolve(rt, "cudaEventRecord", api.event_record);
  Resolve(rt, "cudaEventSynchronize", api.event_synchronize);
  Resolve(rt, "cudaEventElapsedTime", api.event_elapsed_time);
  Resolve(rt, "cudaEventDestroy", api.event_destroy);
  Resolve(rt, "cudaDeviceSynchronize", api.device_synchronize);
  Resolve(rt, "cudaRuntimeGetVersion", api.runtime_get_version);
}

void LoadCublas(Api& api, const CudaLibraryNames& names) {
  api.cublas = DynamicLibrary::Open(names.cublas);
  if (!api.cublas.loaded()) throw RuntimeError("cannot load cuBLAS: " + api.cublas.Error());
  Resolve(api.cublas, "cublasCreate_v2", api.cublas_create);
  Resolve(api.cublas, "cublasDestroy_v2", api.cublas_destroy);
  Resolve(api.cublas, "cublasGetVersion_v2", api.cublas_get_version);
  Resolve(api.cublas, "cublasGemmEx", api.cublas_gemm_ex);
}

// cuBLAS 11+ itself depends on cuBLASLt, so this rarely fails; when it does, only fp8 is lost.
void LoadCublasLt(Api& api, const CudaLibraryNames& names) {
  api.cublas_lt = DynamicLibrary::Open(names.cublas_lt);
  if (!api.cublas_lt.loaded()) {
    api.cublas_lt_error = "cannot load cuBLASLt: " + api.cublas_lt.Error();
    return;
  }
  const DynamicLibrary& lt = api.cublas_lt;
  try {
    Resolve(lt, "cublasLtCreate", api.lt_create);
    Resolve(lt, "cublasLtDestroy", api.lt_destroy);
    Resolve(lt, "cublasLtMatmulDescCreate", api.lt_desc_create);
    Resolve(lt, "cublasLtMatmulDescDestroy", api.lt_desc_destroy);
    Resolve(lt, "cublasLtMatmulDescSetAttribute", api.lt_desc_set);
    Resolve(lt, "cublasLtMatrixLayoutCreate", api.lt_layout_create);
    Resolve(lt, "cublasLtMatrixLayoutDestroy", api.lt_layout_destroy);
    Resolve(lt, "cublasLtMatmulPreferenceCreate", api.lt_pref_create);
    Resolve(lt, "cublasLtMatmulPreferenceDestroy", api.lt_pref_destroy);
    Resolve(lt, "cublasLtMatmulPreferenceSetAttribute", api.lt_pref_set);
    Resolve(lt, "cublasLtMatmulAlgoGetHeuristic", api.lt_heuristic);
    Resolve(lt, "cublasLtMatmul", api.lt_matmul);
  } catch (const RuntimeError& e) {
    api.cublas_lt_error = e.what();
    api.cublas_lt = DynamicLibrary();  // unloaded: fp8 is unavailable, the rest runs
  }
}

}  // namespace

void LoadToolkit(Api& api, const CudaLibraryNames& names) {
  LoadRuntime(api, names);
  LoadCublas(api, names);
  LoadCublasLt(api, names);
}

void Load(Api& api, const CudaLibraryNames& names) {
  LoadDriver(api, names);
  LoadToolkit(api, names);
}

void CheckRuntime(const Api& api, int status, const std::string& what) {
  if (status == 0) return;
  throw RuntimeError(what + ": " + api.get_error_string(status) + " (code " + std::to_string(status) + ")");
}

void CheckCublas(int status, const std::string& what) {
  if (status == 0) return;
  // cublasStatus_t values (cublas_api.h); cublasGetStatusString needs cuBLAS 11.4.2+.
  const char* name = status == 1    ? "not initialized"
                     : status == 3  ? "allocation failed"
                     : status == 7  ? "invalid value"
                     : status == 8  ? "architecture mismatch"
                     : status == 13 ? "execution failed"
                     : status == 15 ? "not supported"
                                    : "error";
  throw RuntimeError(what + ": cuBLAS " + name + " (status " + std::to_string(status) + ")");
}

}  // namespace tally::cuda
