// Diagnostic for issue 31, run by scripts/gpu/measure_fp8_check.sh on a GPU machine (never in
// ctest): which cublasLtMatmul fp8 calls the installed cuBLASLt takes, one line per variant. It asks
// the same questions as tally's LtFp8Gemm (src/measure/cuda_backend.cc) and a few it must not ask,
// so a refusal names the rule it broke. Built against the toolkit's headers:
//   g++ -O1 -I/usr/local/cuda/include scripts/gpu/fp8_probe.cc -L/usr/local/cuda/lib64 -lcublasLt -lcudart
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

struct Variant {
  const char* name;
  int m, n, k;               // row-major C (m x n) = A (m x k) · B (k x n), as tally names shapes
  cublasOperation_t ta, tb;  // cuBLASLt's flags on its A (our B) and its B (our A)
  int scales;                // 0: none; 1: each its own cudaMalloc; 2: one allocation, B's at +4 bytes
  cudaDataType_t d_type;
};

// One variant: the heuristic's count and the first status cublasLtMatmul returns over its algorithms.
void Probe(cublasLtHandle_t lt, const Variant& v) {
  // Column-major D (n x m) = op(A')·op(B'); A' is our B, B' our A, as tally lays them out.
  const int64_t a_rows = v.ta == CUBLAS_OP_T ? v.k : v.n, a_cols = v.ta == CUBLAS_OP_T ? v.n : v.k;
  const int64_t b_rows = v.tb == CUBLAS_OP_N ? v.k : v.m, b_cols = v.tb == CUBLAS_OP_N ? v.m : v.k;
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr, *s1 = nullptr, *s2 = nullptr;
  const size_t d_bytes = v.d_type == CUDA_R_32F ? 4 : 2, workspace = 32u << 20;
  cudaMalloc(&a, static_cast<size_t>(v.n) * v.k);
  cudaMalloc(&b, static_cast<size_t>(v.m) * v.k);
  cudaMalloc(&d, static_cast<size_t>(v.m) * v.n * d_bytes);
  cudaMalloc(&ws, workspace);
  cudaMemset(a, 0x38, static_cast<size_t>(v.n) * v.k);  // e4m3 1.0
  cudaMemset(b, 0x38, static_cast<size_t>(v.m) * v.k);
  const float ones[2] = {1, 1};
  const void *sa = nullptr, *sb = nullptr;
  if (v.scales == 1) {
    cudaMalloc(&s1, 4);
    cudaMalloc(&s2, 4);
    cudaMemcpy(s1, ones, 4, cudaMemcpyHostToDevice);
    cudaMemcpy(s2, ones, 4, cudaMemcpyHostToDevice);
    sa = s1, sb = s2;
  } else if (v.scales == 2) {
    cudaMalloc(&s1, 8);
    cudaMemcpy(s1, ones, 8, cudaMemcpyHostToDevice);
    sa = s1, sb = static_cast<const float*>(s1) + 1;
  }
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &v.ta, sizeof v.ta);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &v.tb, sizeof v.tb);
  if (sa != nullptr) {
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
  }
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, a_rows, a_cols, a_rows);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, b_rows, b_cols, b_rows);
  cublasLtMatrixLayoutCreate(&ld, v.d_type, v.n, v.m, v.n);
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  cublasLtMatmulHeuristicResult_t algos[8] = {};
  int found = 0;
  const int heuristic = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 8, algos, &found);
  std::printf("%-34s %5dx%5dx%5d heuristic %2d, %d algorithms;", v.name, v.m, v.n, v.k, heuristic, found);
  const float one = 1, zero = 0;
  for (int i = 0; i < found; ++i) {
    const int run =
        cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, d, ld, d, ld, &algos[i].algo, ws, workspace, nullptr);
    std::printf(" %d", run);
  }
  const cudaError_t sync = cudaDeviceSynchronize();
  std::vector<unsigned short> out(2);
  if (found > 0 && v.d_type == CUDA_R_16BF) {
    cudaMemcpy(out.data(), d, 4, cudaMemcpyDeviceToHost);
    unsigned bits = static_cast<unsigned>(out[0]) << 16;
    float f = 0;
    std::memcpy(&f, &bits, 4);
    std::printf("; D[0] = %g (want %d)", f, v.k);
  }
  std::printf("; sync %d\n", static_cast<int>(sync));
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
  for (void* p : {a, b, d, ws, s1, s2}) cudaFree(p);
}

}  // namespace

int main() {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  std::printf("cuBLASLt %zu, compute capability %d.%d\n", cublasLtGetVersion(), major, minor);
  cublasLtHandle_t lt = nullptr;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 1;
  const cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
  const Variant variants[] = {
      {"TN, own scales (tally now)", 16, 32, 48, T, N, 1, CUDA_R_16BF},
      {"TN, own scales (tally now)", 48, 16, 32, T, N, 1, CUDA_R_16BF},
      {"TN, own scales (tally now)", 64, 48, 16, T, N, 1, CUDA_R_16BF},
      {"TN, own scales (tally now)", 4096, 4096, 4096, T, N, 1, CUDA_R_16BF},
      {"TN, scales 4 bytes apart (before)", 16, 32, 48, T, N, 2, CUDA_R_16BF},
      {"TN, no scale pointers", 16, 32, 48, T, N, 0, CUDA_R_16BF},
      {"TN, fp32 D", 16, 32, 48, T, N, 1, CUDA_R_32F},
      {"NN (not TN)", 16, 32, 48, N, N, 1, CUDA_R_16BF},
      {"TT (not TN)", 16, 32, 48, T, T, 1, CUDA_R_16BF},
      {"TN, k = 50 (not a multiple of 16)", 16, 32, 50, T, N, 1, CUDA_R_16BF},
      {"TN, n = 40 (multiple of 8, not 16)", 16, 40, 48, T, N, 1, CUDA_R_16BF},
  };
  for (const Variant& v : variants) Probe(lt, v);
  cublasLtDestroy(lt);
  return 0;
}
