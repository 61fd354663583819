// Inference latency on a device by the per-op roofline (estimate/roofline.h): the prefill of the
// prompt, the mean decode step, the batches where decoding turns compute-bound, and the memory fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "estimate/evaluation.h"
#include "estimate/roofline.h"
#include "estimate/time_request.h"
#include "estimate/training_estimate.h"

namespace tally {

struct InferenceEstimate {
  std::string hardware;                // the device
  GemmDType dtype = GemmDType::kBf16;  // the compute dtype of the precision policy
  bool enc_dec = false;                // an encoder–decoder: the encoder runs once over the source
  // The workload computed, not the model's context: sequences at once, the encoder's source tokens
  // (an encoder–decoder's), the prompt, the generated tokens.
  uint64_t batch = 0, source = 0, prompt = 0, generate = 0;
  RooflineRates rates;
  std::string mbu_basis;  // where rates.mbu comes from, in words
  // On a GPU, for a model with weight-only quantized weights: the kernel their GEMMs run as
  // (--dequant-kernel) and the fraction of the bandwidth its stored bytes stream at.
  std::optional<DequantKernel> dequant_kernel;
  double dequant_mbu = 0;
  Roofline prefill;              // time to first token
  Roofline decode;               // one step at the mean context prompt + generate / 2
  double tokens_per_second = 0;  // the batch's generated tokens per second
  double generate_seconds = 0;   // prefill + every decode step
  // The smallest batch whose decode step (whole, or its weight GEMMs) reaches compute-bound.
  std::optional<uint64_t> compute_bound_batch, gemm_compute_bound_batch;
  TimeFit fit;  // the cache at prompt + generate tokens
  std::vector<std::string> notes;
};

// Inference latency at `settings` (resolved: its device read) as `request` asks. Throws InputError
// for a model that generates no tokens, or a workload past its positions.
InferenceEstimate EstimateInference(Evaluation& evaluation, const Settings& settings, const TimeRequest& request);

}  // namespace tally
