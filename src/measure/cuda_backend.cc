// cuBLAS through dlopen: cublasGemmEx for fp32, tf32, fp16, bf16 and fp64, and cublasLtMatmul for
// fp8 (e4m3), timed with CUDA events on the default stream. Row-major C = op(A)·op(B) is computed as
// the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, which reads the same buffers with the same transpose flags.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "measure/cuda_api.h"
#include "measure/float_convert.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

struct Types {
  int ab = cuda::kR32F;  // cudaDataType of A and B
  int c = cuda::kR32F;
  int compute = cuda::kCompute32F;
  bool fp64 = false;  // alpha and beta are doubles
};

// fp16 and bf16 store C in kind with fp32 accumulation, as mixed-precision training runs them.
Types TypesOf(GemmDType d) {
  switch (d) {
    case GemmDType::kFp64:
      return {cuda::kR64F, cuda::kR64F, cuda::kCompute64F, true};
    case GemmDType::kTf32:
      return {cuda::kR32F, cuda::kR32F, cuda::kCompute32FFastTf32, false};
    case GemmDType::kFp16:
      return {cuda::kR16F, cuda::kR16F, cuda::kCompute32F, false};
    case GemmDType::kBf16:
      return {cuda::kR16BF, cuda::kR16BF, cuda::kCompute32F, false};
    case GemmDType::kFp32:
    case GemmDType::kFp8:
    case GemmDType::kInt8:
      break;
  }
  return {};
}

std::vector<unsigned char> Encode(GemmDType d, const std::vector<double>& values) {
  const uint64_t bytes = GemmDTypeBytes(d);
  std::vector<unsigned char> out(values.size() * bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    unsigned char* at = out.data() + i * bytes;
    const float f = static_cast<float>(values[i]);
    if (d == GemmDType::kFp64) {
      std::memcpy(at, &values[i], 8);
    } else if (d == GemmDType::kFp8) {
      *at = FloatToFp8E4M3(f);
    } else if (d == GemmDType::kFp16 || d == GemmDType::kBf16) {
      const uint16_t h = d == GemmDType::kFp16 ? FloatToHalf(f) : FloatToBf16(f);
      std::memcpy(at, &h, 2);
    } else {
      std::memcpy(at, &f, 4);
    }
  }
  return out;
}

double Decode(GemmDType d, const unsigned char* at) {
  uint16_t h = 0;
  float f = 0;
  double x = 0;
  if (d == GemmDType::kFp64) {
    std::memcpy(&x, at, 8);
    return x;
  }
  if (d == GemmDType::kFp16 || d == GemmDType::kBf16) {
    std::memcpy(&h, at, 2);
    return d == GemmDType::kFp16 ? HalfToFloat(h) : Bf16ToFloat(h);
  }
  std::memcpy(&f, at, 4);
  return f;
}

// Pseudo-random operand bytes for timing, made on the host once per shape (outside the timed
// region): rows x cols values (u - 32768) / 32768, u the top 16 bits of a 64-bit LCG (Knuth's MMIX
// constants), so uniform in [-1, 1), exact in fp32 and fp64 and rounded to nearest even in the
// narrow types, encoded straight into the dtype's bytes (1- and 2-byte types through a table of the
// 65,536 values), inside a zero padded_rows x padded_cols (fp8's padding). No double per element is
// held: a 128256 x 4096 fp8 LM-head operand costs 0.5 GB of host memory and about a second, where a
// vector of doubles, its transpose and its padded copy took 13 GB and minutes (the llama-3-8b run
// that timed out on an H200).
std::vector<unsigned char> RandomOperand(GemmDType d, uint64_t rows, uint64_t cols, uint64_t padded_rows,
                                         uint64_t padded_cols, uint64_t salt) {
  const uint64_t bytes = GemmDTypeBytes(d);
  std::vector<double> levels(bytes <= 2 ? 65536 : 0);
  for (size_t u = 0; u < levels.size(); ++u) levels[u] = (static_cast<double>(u) - 32768) / 32768;
  const std::vector<unsigned char> table = Encode(d, levels);
  std::vector<unsigned char> out(padded_rows * padded_cols * bytes, 0);  // zero in every dtype
  uint64_t x = salt;
  for (uint64_t i = 0; i < rows; ++i) {
    unsigned char* at = out.data() + i * padded_cols * bytes;
    for (uint64_t j = 0; j < cols; ++j, at += bytes) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const auto u = static_cast<uint32_t>(x >> 48);
      if (bytes <= 2) {
        std::memcpy(at, table.data() + u * bytes, bytes);
        continue;
      }
      const double v = (static_cast<double>(u) - 32768) / 32768;
      const auto f = static_cast<float>(v);
      if (bytes == 8) std::memcpy(at, &v, 8);
      if (bytes == 4) std::memcpy(at, &f, 4);
    }
  }
  return out;
}

// Device memory freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer(const cuda::Api& api, uint64_t bytes) : api_(api) {
    cuda::CheckRuntime(api, api.cuda_malloc(&ptr_, bytes), "cudaMalloc of " + FormatBytes(bytes, UnitSystem::kIec));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { api_.cuda_free(ptr_); }
  void* get() const { return ptr_; }

 private:
  const cuda::Api& api_;
  void* ptr_ = nullptr;
};

// A product on the device: operands and result in device memory, timed by CUDA events around
// back-to-back launches of Run().
class TimedDeviceGemm : public PreparedGemm {
 public:
  explicit TimedDeviceGemm(const cuda::Api& api) : api_(api) {
    cuda::CheckRuntime(api, api.event_create(&start_), "cudaEventCreate");
    cuda::CheckRuntime(api, api.event_create(&stop_), "cudaEventCreate");
  }
  TimedDeviceGemm(const TimedDeviceGemm&) = delete;
  TimedDeviceGemm& operator=(const TimedDeviceGemm&) = delete;
  ~TimedDeviceGemm() override {
    api_.event_destroy(start_);
    api_.event_destroy(stop_);
  }

  // Row-major operands stored as the shape's layout says, rounded to the dtype (the check).
  virtual void Upload(const std::vector<double>& a, const std::vector<double>& b) = 0;
  // Pseudo-random operands (RandomOperand) in whatever layout the call reads (timing).
  virtual void Randomize() = 0;
  virtual void Run() = 0;
  virtual std::vector<double> Download() = 0;

  double Time(uint64_t iterations) override {
    cuda::CheckRuntime(api_, api_.event_record(start_, nullptr), "cudaEventRecord");
    for (uint64_t i = 0; i < iterations; ++i) Run();
    cuda::CheckRuntime(api_, api_.event_record(stop_, nullptr), "cudaEventRecord");
    cuda::CheckRuntime(api_, api_.event_synchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    cuda::CheckRuntime(api_, api_.event_elapsed_time(&ms, start_, stop_), "cudaEventElapsedTime");
    return static_cast<double>(ms) / 1e3;
  }

 protected:
  void CopyIn(const DeviceBuffer& to, GemmDType d, const std::vector<double>& values) const {
    CopyIn(to, Encode(d, values));
  }
  void CopyIn(const DeviceBuffer& to, const std::vector<unsigned char>& host) const {
    cuda::CheckRuntime(api_, api_.cuda_memcpy(to.get(), host.data(), host.size(), cuda::kHostToDevice), "cudaMemcpy");
  }
  std::vector<double> CopyOut(const DeviceBuffer& from, GemmDType d, uint64_t elements) const {
    std::vector<unsigned char> host(elements * GemmDTypeBytes(d));
    cuda::CheckRuntime(api_, api_.cuda_memcpy(host.data(), from.get(), host.size(), cuda::kDeviceToHost), "cudaMemcpy");
    std::vector<double> out(elements);
    for (size_t i = 0; i < out.size(); ++i) out[i] = Decode(d, host.data() + i * GemmDTypeBytes(d));
    return out;
  }

  const cuda::Api& api_;

 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

// cublasGemmEx: every layout, fp32/tf32/fp16/bf16/fp64.
class ExGemm : public TimedDeviceGemm {
 public:
  ExGemm(const cuda::Api& api, void* handle, const GemmShape& s, GemmDType d)
      : TimedDeviceGemm(api),
        handle_(handle),
        shape_(s),
        types_(TypesOf(d)),
        dtype_(d),
        a_(api, s.m * s.k * GemmDTypeBytes(d)),
        b_(api, s.k * s.n * GemmDTypeBytes(d)),
        c_(api, s.m * s.n * GemmDTypeBytes(d)) {}

  void Upload(const std::vector<double>& a, const std::vector<double>& b) override {
    CopyIn(a_, dtype_, a);
    CopyIn(b_, dtype_, b);
  }

  void Randomize() override {
    CopyIn(a_, RandomOperand(dtype_, shape_.m, shape_.k, shape_.m, shape_.k, 1));
    CopyIn(b_, RandomOperand(dtype_, shape_.k, shape_.n, shape_.k, shape_.n, 2));
  }

  std::vector<double> Download() override { return CopyOut(c_, dtype_, shape_.m * shape_.n); }

  void Run() override {
    const float one_f = 1, zero_f = 0;
    const double one_d = 1, zero_d = 0;
    const void* alpha = types_.fp64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* beta = types_.fp64 ? static_cast<const void*>(&zero_d) : &zero_f;
    const int m = static_cast<int>(shape_.m), n = static_cast<int>(shape_.n), k = static_cast<int>(shape_.k);
    // Column-major Cᵀ (n x m) = op(B)ᵀ (n x k) · op(A)ᵀ (k x m). A row-major buffer is its own
    // transpose in column-major, so each operand keeps its flag; the leading dimension is the
    // length of a stored row.
    const int op_b = shape_.trans_b ? cuda::kOpT : cuda::kOpN, ldb = shape_.trans_b ? k : n;
    const int op_a = shape_.trans_a ? cuda::kOpT : cuda::kOpN, lda = shape_.trans_a ? m : k;
    cuda::CheckCublas(
        api_.cublas_gemm_ex(handle_, op_b, op_a, n, m, k, alpha, b_.get(), types_.ab, ldb, a_.get(), types_.ab, lda,
                            beta, c_.get(), types_.c, n, types_.compute, cuda::kGemmDefault),
        "cublasGemmEx " + shape_.Text() + " " + GemmDTypeName(dtype_));
  }

 private:
  void* handle_;
  GemmShape shape_;
  Types types_;
  GemmDType dtype_;
  DeviceBuffer a_, b_, c_;
};

// A cuBLASLt descriptor destroyed with its owner.
class LtObject {
 public:
  explicit LtObject(int (*destroy)(void*)) : destroy_(destroy) {}
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;
  ~LtObject() {
    if (ptr_ != nullptr) destroy_(ptr_);
  }
  void** out() { return &ptr_; }
  void* get() const { return ptr_; }

 private:
  int (*destroy_)(void*);
  void* ptr_ = nullptr;
};

// Workspace for cuBLASLt's fp8 kernels: NVIDIA recommends 32 MiB on Hopper (cuBLAS docs, §2.1.x
// cublasSetWorkspace).
constexpr uint64_t kLtWorkspaceBytes = 32ULL << 20;
constexpr uint64_t kFp8Align = 16;
constexpr int kLtAlgos = 8;
constexpr int kBlasNotSupported = 15;  // CUBLAS_STATUS_NOT_SUPPORTED (cublas_api.h)

// cublasLtMatmul in fp8 e4m3 with fp32 accumulation, per-tensor scale factors and a bf16 result:
// the call of an fp8 training step (Transformer Engine). cuBLASLt's rules for fp8 come from the
// cuBLAS documentation (docs.nvidia.com/cuda/cublas, CUDA 12.0-13.1), section "cublasLtMatmul()":
// the list "To use FP8 kernels, the following set of requirements must be satisfied" and the table of
// FP8 type combinations under it, with section "Tensor Core Usage" for alignment. Each is kept here:
//  - all matrix pointers 16-byte aligned: every buffer is its own cudaMalloc (256-byte aligned);
//  - dimensions meeting "Tensor Core Usage": for 1-byte e4m3, m, n, k and the leading dimensions
//    multiples of 16. Each dimension is padded with zeros to a multiple of 16 (RunShape reports the
//    padded shape; the row's flop_per_s and mfu count the asked shape's FLOPs, run_flop_per_s the
//    padded one's);
//  - A transposed and B not ("TN") on Ada (8.9), Hopper (9.0) and Blackwell GeForce (12.x): the
//    column-major TN call is row-major A (m x k) times B stored as (n x k), so B is uploaded in
//    that form whatever layout was asked, as Transformer Engine keeps a transposed fp8 copy;
//  - compute type CUBLAS_COMPUTE_32F and scale type CUDA_R_32F;
//  - e4m3 x e4m3 into C = D in bf16, one of the table's combinations.
// A_SCALE_POINTER and B_SCALE_POINTER are optional (cublasLt.h: "If not specified, or set to NULL,
// the scaling factor is assumed to be 1"); tally sets both to device floats of 1, as a training step
// does, each in its own allocation (D_SCALE_POINTER and AMAX_D are for an fp8 D only, so not set).
// That matters: on an H200 with cuBLAS 13.1 (scripts/gpu/fp8_probe.cc), a B scale 4 bytes after
// the A scale in one allocation made cublasLtMatmul refuse every algorithm its heuristic had offered
// (status 15), which is issue 31's "cublasLtMatmul fp8 16x32x48: not supported". The same run
// refused NN, TT and k = 50 in the heuristic (15) and took a 40-wide n, so padding all three
// dimensions is more than the library needs, never less.
// Up to 8 algorithms are asked for and the first that cublasLtMatmul runs is kept (NVIDIA's
// LtFp8Matmul sample: the heuristic's first is not guaranteed to run). A status 15 anywhere is a
// GemmRefused, "refused by cuBLASLt: status 15 (not supported) from FUNCTION for fp8 SHAPE": the
// shape's row carries it as skip_reason and the other shapes and dtypes run.
class LtFp8Gemm : public TimedDeviceGemm {
 public:
  LtFp8Gemm(const cuda::Api& api, void* lt, const GemmShape& s)
      : TimedDeviceGemm(api),
        lt_(lt),
        shape_(s),
        m_(PadTo16(s.m)),
        n_(PadTo16(s.n)),
        k_(PadTo16(s.k)),
        a_(api, m_ * k_),
        b_(api, n_ * k_),
        d_(api, m_ * n_ * 2),
        a_scale_(api, sizeof(float)),
        b_scale_(api, sizeof(float)),
        workspace_(api, kLtWorkspaceBytes),
        desc_(api.lt_desc_destroy),
        a_layout_(api.lt_layout_destroy),
        b_layout_(api.lt_layout_destroy),
        d_layout_(api.lt_layout_destroy),
        pref_(api.lt_pref_destroy) {
    const float one = 1;
    for (const DeviceBuffer* scale : {&a_scale_, &b_scale_}) {
      cuda::CheckRuntime(api, api.cuda_memcpy(scale->get(), &one, sizeof one, cuda::kHostToDevice), "cudaMemcpy");
    }
    Check(api.lt_desc_create(desc_.out(), cuda::kCompute32F, cuda::kR32F), "cublasLtMatmulDescCreate");
    const int op_t = cuda::kOpT, op_n = cuda::kOpN;
    // cuBLASLt's A is our B buffer and its B our A (below); both scales are 1. The attributes take
    // the address of a device pointer.
    const void* lt_a_scale = b_scale_.get();
    const void* lt_b_scale = a_scale_.get();
    SetDesc(cuda::kLtDescTransA, &op_t, sizeof op_t);
    SetDesc(cuda::kLtDescTransB, &op_n, sizeof op_n);
    SetDesc(cuda::kLtDescAScalePointer, &lt_a_scale, sizeof lt_a_scale);
    SetDesc(cuda::kLtDescBScalePointer, &lt_b_scale, sizeof lt_b_scale);
    // Column-major D (n x m) = op(A')·B': cuBLASLt's A' is our B buffer, (n x k) row-major read as
    // k x n and transposed; its B' is our A buffer, (m x k) row-major read as k x m.
    const auto n = static_cast<int64_t>(n_), k = static_cast<int64_t>(k_);
    Check(api.lt_layout_create(b_layout_.out(), cuda::kR8FE4M3, k_, n_, k), "cublasLtMatrixLayoutCreate");
    Check(api.lt_layout_create(a_layout_.out(), cuda::kR8FE4M3, k_, m_, k), "cublasLtMatrixLayoutCreate");
    Check(api.lt_layout_create(d_layout_.out(), cuda::kR16BF, n_, m_, n), "cublasLtMatrixLayoutCreate");
    Check(api.lt_pref_create(pref_.out()), "cublasLtMatmulPreferenceCreate");
    const uint64_t workspace = kLtWorkspaceBytes;
    Check(api.lt_pref_set(pref_.get(), cuda::kLtPrefMaxWorkspaceBytes, &workspace, sizeof workspace),
          "cublasLtMatmulPreferenceSetAttribute");
    ChooseAlgo();
  }

  void Upload(const std::vector<double>& a, const std::vector<double>& b) override {
    // Row-major A (m x k) and B as (n x k), each padded with zeros.
    const std::vector<double> a_rows = shape_.trans_a ? Transposed(a, shape_.k, shape_.m) : a;
    const std::vector<double> b_rows = shape_.trans_b ? b : Transposed(b, shape_.k, shape_.n);
    CopyIn(a_, GemmDType::kFp8, Padded(a_rows, shape_.m, shape_.k, m_, k_));
    CopyIn(b_, GemmDType::kFp8, Padded(b_rows, shape_.n, shape_.k, n_, k_));
  }

  // Random values need no transpose: each is made where the TN call reads it, padding zero.
  void Randomize() override {
    CopyIn(a_, RandomOperand(GemmDType::kFp8, shape_.m, shape_.k, m_, k_, 1));
    CopyIn(b_, RandomOperand(GemmDType::kFp8, shape_.n, shape_.k, n_, k_, 2));
  }

  std::vector<double> Download() override {
    const std::vector<double> d = CopyOut(d_, GemmDType::kBf16, m_ * n_);
    std::vector<double> c(shape_.m * shape_.n);
    for (uint64_t i = 0; i < shape_.m; ++i) {
      for (uint64_t j = 0; j < shape_.n; ++j) c[i * shape_.n + j] = d[i * n_ + j];
    }
    return c;
  }

  void Run() override { Check(Matmul(algo_), "cublasLtMatmul"); }

  static uint64_t PadTo16(uint64_t d) { return CeilDiv(d, kFp8Align) * kFp8Align; }

 private:
  int Matmul(const cuda::LtHeuristicResult& algo) {
    const float one = 1, zero = 0;
    return api_.lt_matmul(lt_, desc_.get(), &one, b_.get(), b_layout_.get(), a_.get(), a_layout_.get(), &zero, d_.get(),
                          d_layout_.get(), d_.get(), d_layout_.get(), algo.algo, workspace_.get(), kLtWorkspaceBytes,
                          nullptr);
  }

  // "fp8 16x32x50 run as 16x32x64": the shape asked and, when padded, the one multiplied.
  std::string Subject() const {
    const GemmShape run{m_, n_, k_, shape_.trans_a, shape_.trans_b};
    return "fp8 " + shape_.Text() + (run == shape_ ? "" : " run as " + run.Text());
  }

  // Status 15 is a refusal of the shape (GemmRefused); any other failure is a RuntimeError.
  void Check(int status, const std::string& function) const {
    if (status == kBlasNotSupported) {
      throw GemmRefused("refused by cuBLASLt: status 15 (not supported) from " + function + " for " + Subject());
    }
    cuda::CheckCublas(status, function + " " + Subject());
  }

  // The first of the heuristic's algorithms that cublasLtMatmul runs, tried once on whatever the
  // buffers hold (every later run overwrites D).
  void ChooseAlgo() {
    cuda::LtHeuristicResult algos[kLtAlgos];
    int found = 0;
    Check(api_.lt_heuristic(lt_, desc_.get(), b_layout_.get(), a_layout_.get(), d_layout_.get(), d_layout_.get(),
                            pref_.get(), kLtAlgos, algos, &found),
          "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      throw GemmRefused("refused by cuBLASLt: cublasLtMatmulAlgoGetHeuristic offers no algorithm for " + Subject());
    }
    int refused = 0;
    for (int i = 0; i < std::min(found, kLtAlgos); ++i) {
      if (algos[i].state != 0) continue;  // an algorithm the heuristic itself marks unusable
      const int run = Matmul(algos[i]);
      if (run == 0) {
        algo_ = algos[i];
        return;
      }
      if (run != kBlasNotSupported) Check(run, "cublasLtMatmul");
      ++refused;
    }
    throw GemmRefused("refused by cuBLASLt: status 15 (not supported) from cublasLtMatmul for " + Subject() +
                      ", with each of the " + std::to_string(refused) + " algorithms its heuristic offered");
  }

  // rows x cols inside a zero matrix of padded_rows x padded_cols, row-major.
  static std::vector<double> Padded(const std::vector<double>& v, uint64_t rows, uint64_t cols, uint64_t padded_rows,
                                    uint64_t padded_cols) {
    std::vector<double> out(padded_rows * padded_cols, 0.0);
    for (uint64_t i = 0; i < rows; ++i) std::copy_n(v.data() + i * cols, cols, out.data() + i * padded_cols);
    return out;
  }

  void SetDesc(int attribute, const void* value, size_t bytes) {
    Check(api_.lt_desc_set(desc_.get(), attribute, value, bytes), "cublasLtMatmulDescSetAttribute");
  }

  void* lt_;
  GemmShape shape_;
  uint64_t m_, n_, k_;  // padded
  DeviceBuffer a_, b_, d_, a_scale_, b_scale_, workspace_;
  LtObject desc_, a_layout_, b_layout_, d_layout_, pref_;
  cuda::LtHeuristicResult algo_;
};

int Attribute(const cuda::Api& api, int attribute) {
  int value = 0;
  return api.device_get_attribute(&value, attribute, 0) == 0 ? value : 0;
}

std::string Version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

class CudaBackend : public GemmBackend {
 public:
  explicit CudaBackend(const CudaLibraryNames& names) {
    cuda::Load(api_, names);
    cuda::CheckRuntime(api_, api_.set_device(0), "cudaSetDevice(0)");
    cuda::CheckCublas(api_.cublas_create(&handle_), "cublasCreate");
    char name[256] = {};
    int device = 0;
    if (api_.cu_device_get(&device, 0) == 0) api_.cu_device_get_name(name, sizeof name - 1, device);
    size_t memory = 0;
    api_.cu_device_total_mem(&memory, device);
    facts_.name = name;
    facts_.memory_bytes = memory;
    facts_.clock_hz = Attribute(api_, cuda::kAttrClockRateKhz) * 1e3;
    facts_.n_multiprocessors = static_cast<uint64_t>(Attribute(api_, cuda::kAttrMultiprocessors));
    // Double data rate: two transfers per memory clock over the whole bus.
    facts_.memory_bandwidth_bytes_per_s =
        2.0 * Attribute(api_, cuda::kAttrMemoryClockKhz) * 1e3 * Attribute(api_, cuda::kAttrMemoryBusBits) / 8;
    major_ = Attribute(api_, cuda::kAttrMajor);
    minor_ = Attribute(api_, cuda::kAttrMinor);
    // Without a cuBLASLt handle only fp8 is lost (and nothing leaks the cuBLAS handle).
    if (api_.cublas_lt.loaded() && api_.lt_create(&lt_) != 0) {
      lt_ = nullptr;
      api_.cublas_lt_error = "cublasLtCreate failed";
    }
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  ~CudaBackend() override {
    if (lt_ != nullptr) api_.lt_destroy(lt_);
    api_.cublas_destroy(handle_);
  }

  std::string Device() const override { return "cuda"; }
  DeviceFacts Facts() const override { return facts_; }

  std::vector<std::pair<std::string, std::string>> Describe() const override {
    int driver = 0, runtime = 0, cublas = 0;
    api_.cu_driver_get_version(&driver);
    api_.runtime_get_version(&runtime);
    api_.cublas_get_version(handle_, &cublas);
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return {{"gpu", facts_.name},
            {"compute_capability", std::to_string(major_) + "." + std::to_string(minor_)},
            {"driver", api_.driver.Path("cuInit") + " (CUDA " + Version(driver) + ")"},
            {"runtime", api_.runtime.Path("cudaMalloc") + " (CUDA " + Version(runtime) + ")"},
            {"library", api_.cublas.Path("cublasGemmEx") + " (cuBLAS " + std::to_string(cublas) + ")"},
            {"fp8_library", lt_ != nullptr ? api_.cublas_lt.Path("cublasLtMatmul") : api_.cublas_lt_error},
            {"CUDA_VISIBLE_DEVICES", visible == nullptr ? "unset" : visible}};
  }

  std::string Unsupported(GemmDType d) const override {
    if (d == GemmDType::kFp8) {
      if (lt_ == nullptr) return "fp8 GEMMs run through cuBLASLt; " + api_.cublas_lt_error;
      // Tensor-core fp8 arrived with Ada (8.9) and Hopper (9.0) (CUDA C++ Programming Guide,
      // "Compute Capabilities").
      if (major_ * 10 + minor_ < 89) {
        return "fp8 GEMMs need compute capability 8.9 (Ada) or 9.0 (Hopper) or later; this GPU is " +
               std::to_string(major_) + "." + std::to_string(minor_);
      }
      return "";
    }
    if ((d == GemmDType::kBf16 || d == GemmDType::kTf32) && major_ < 8) {
      return std::string(GemmDTypeName(d)) + " needs compute capability 8.0 (Ampere) or later";
    }
    return "";
  }

  void SetThreads(int) override {}
  int Threads() const override { return 1; }

  std::vector<double> Multiply(const GemmShape& s, GemmDType d, const std::vector<double>& a,
                               const std::vector<double>& b) override {
    const std::unique_ptr<TimedDeviceGemm> gemm = Make(s, d);
    gemm->Upload(a, b);
    gemm->Run();
    cuda::CheckRuntime(api_, api_.device_synchronize(), "cudaDeviceSynchronize");
    return gemm->Download();
  }

  GemmShape RunShape(const GemmShape& s, GemmDType d) const override {
    if (d != GemmDType::kFp8) return s;
    return {LtFp8Gemm::PadTo16(s.m), LtFp8Gemm::PadTo16(s.n), LtFp8Gemm::PadTo16(s.k), s.trans_a, s.trans_b};
  }

  std::unique_ptr<PreparedGemm> Prepare(const GemmShape& s, GemmDType d) override {
    std::unique_ptr<TimedDeviceGemm> gemm = Make(s, d);
    gemm->Randomize();
    return gemm;
  }

 private:
  std::unique_ptr<TimedDeviceGemm> Make(const GemmShape& s, GemmDType d) {
    if (s.m > INT32_MAX || s.n > INT32_MAX || s.k > INT32_MAX) {
      throw InputError("GEMM " + s.Text() + ": cuBLAS takes dimensions up to 2^31 - 1");
    }
    if (d == GemmDType::kFp8) {
      const std::string why = Unsupported(d);
      if (!why.empty()) throw RuntimeError(why);
      return std::make_unique<LtFp8Gemm>(api_, lt_, s);
    }
    return std::make_unique<ExGemm>(api_, handle_, s, d);
  }

  cuda::Api api_;
  void* handle_ = nullptr;
  void* lt_ = nullptr;
  DeviceFacts facts_;
  int major_ = 0, minor_ = 0;
};

}  // namespace

std::unique_ptr<GemmBackend> MakeCudaBackend(const CudaLibraryNames& names) {
  return std::make_unique<CudaBackend>(names);
}

}  // namespace tally
