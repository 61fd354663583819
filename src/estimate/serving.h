// Serving: what an inference server does with a device (vLLM's defaults: chunked prefill, a paged KV
// cache, a claimed fraction of memory), the KV tokens the memory left holds, and the decode step's
// roofline at a concurrency, with the exact batch where it turns compute-bound.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "config/hardware.h"
#include "config/model_spec.h"
#include "config/settings.h"
#include "estimate/evaluation.h"
#include "estimate/roofline.h"

namespace tally {

// vLLM's defaults (vllm/engine/arg_utils.py, EngineArgs; CacheConfig): KV pages of 16 tokens and
// gpu_memory_utilization 0.9.
inline constexpr uint64_t kVllmKvBlock = 16;
inline constexpr double kVllmGpuMemoryUtilization = 0.9;

// vLLM's default max_num_batched_tokens for its OpenAI-compatible server (EngineArgs.get_batch_defaults,
// v0.9-0.11): 8192 on a device of at least 70 GiB that is not an A100, else 2048.
uint64_t VllmMaxBatchedTokens(uint64_t device_memory, std::string_view device_name);

// vLLM's default max_num_seqs, the running sequences it allows, by the same rule: 1024, else 256.
uint64_t VllmMaxNumSeqs(uint64_t device_memory, std::string_view device_name);

// A decoder's `settings` with the serving settings left unset given vLLM's defaults for a device of
// `device_memory` bytes named `device_name` ("" when only --memory is known).
Settings WithServingDefaults(Settings settings, uint64_t device_memory, std::string_view device_name);

// The KV cache a server can allocate once weights, activations (at `batch`) and overhead are placed
// within `limit` bytes per device: whole pages of settings.kv_block tokens (1 without paging), each
// holding K and V of every attention layer on the device (vLLM's num_gpu_blocks x block_size).
struct KvCapacity {
  uint64_t free_bytes = 0;  // limit - weights - activations - overhead
  uint64_t page_bytes = 0;  // one page, every layer of the most-loaded pipeline stage
  uint64_t pages = 0;
  uint64_t tokens = 0;  // pages x page tokens
};
KvCapacity KvTokenCapacity(const ModelSpec& spec, const Settings& settings, const MemoryModel& model, uint64_t limit,
                           uint64_t batch);

// The roofline rates of a forward pass on `hw`: the precision policy's dense peak, and for the block
// matrices under --quant fp8 the fp8 peak (W8A8: fp8 weights and activations into fp8 tensor cores,
// where the device lists one); weight-only methods (int8, int4, nf4, mxfp4: W8A16, W4A16) dequantize
// to the activation dtype and run at its peak, on a GPU by settings.dequant_kernel's costs
// (estimate/kernel_costs.h). `mfu` nullopt (no --mfu): the device's GEMM efficiency
// by shape where the catalog gives one, else kDefaultMfu; those shaped GEMMs slow at the board's
// power limit where it was measured, unless `power_limit` is false (estimate/power_limit.h).
RooflineRates InferenceRates(const HardwareSpec& hw, const Settings& settings, std::optional<double> mfu,
                             std::optional<double> mbu, bool power_limit = true);

// The memory-bandwidth utilization inference runs at: --mbu, else the device's measured
// decode_bandwidth_efficiency, else kDefaultMbu.
double DecodeMbu(const HardwareSpec& hw, std::optional<double> mbu);

// One decode step of `batch` sequences, each one new token against `context` cached tokens.
Roofline DecodeStep(Evaluation& evaluation, const Settings& settings, const RooflineRates& rates, uint64_t batch,
                    uint64_t context);

// The smallest batch whose decode step's compute time reaches its memory time, found over integers with
// the real cost (experts read as E (1 - (1 - k/E)^n)); nullopt when none up to `cap`. `gemm`: the
// linear layers alone.
std::optional<uint64_t> DecodeComputeBoundBatch(Evaluation& evaluation, const Settings& settings,
                                                const RooflineRates& rates, uint64_t context, bool gemm,
                                                uint64_t cap = uint64_t{1} << 20);

// fit --mode infer at the concurrency found (settings.batch, every sequence at settings.seq): the KV
// tokens the memory left holds and, on a named device, one decode step at the rates 'tally time'
// assumes by default (kDefaultMfu, kDefaultMbu).
struct ServingEstimate {
  KvCapacity kv;
  uint64_t max_seqs = 0;   // vLLM's cap on the running sequences
  uint64_t context = 0;    // the tokens each sequence has cached
  bool on_device = false;  // --hardware: the decode step is timed, unless --ep
  struct Decode {
    double mfu = 0, mbu = 0;  // the rates it runs at
    double seconds = 0;       // TPOT: one step of `batch` sequences
    double tokens_per_second = 0;
    std::optional<uint64_t> compute_bound_batch;  // nullopt: memory-bound up to 2^20
  };
  std::optional<Decode> decode;  // on a device, without --ep (inference under expert parallelism is not modelled)
};
ServingEstimate EstimateServing(Evaluation& evaluation, const Settings& settings, uint64_t limit, uint64_t max_seqs,
                                const HardwareSpec* hw);

}  // namespace tally
