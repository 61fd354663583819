#include "estimate/inference_estimate.h"

#include <stdexcept>

#include "config/hardware.h"
#include "config/quantization.h"
#include "estimate/defaults.h"
#include "estimate/memory.h"
#include "estimate/serving.h"
#include "estimate/step_timeline.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace tally {
namespace {

// What only a decoder can be asked: it generates tokens, within its learned positions.
void CheckGenerates(const ModelSpec& spec, const Settings& s, uint64_t prompt, uint64_t generate) {
  if (spec.family != Family::kTransformer) {
    throw InputError("--mode infer: inference latency needs a transformer; '" + spec.name + "' is sequential");
  }
  const TransformerSpec& t = spec.transformer;
  if (t.encoder) {
    throw InputError("--mode infer: '" + spec.name +
                     "' is an encoder and generates no tokens; 'tally flops' gives "
                     "its forward pass and 'tally memory' its inference memory (no KV cache)");
  }
  const bool enc_dec = t.encoder_layers > 0;
  if (enc_dec && s.target_seq) {
    throw InputError("--target-seq: inference takes the decoder's tokens from --prompt and --generate");
  }
  const uint64_t positions = enc_dec && t.target_context > 0 ? t.target_context : t.context_length;
  if (t.position == PositionKind::kLearned && prompt + generate > positions) {
    throw InputError("--generate: prompt + generated tokens (" + std::to_string(prompt + generate) + ") exceed the " +
                     std::to_string(positions) + " learned positions of " + (enc_dec ? "the decoder of " : "") + "'" +
                     spec.name + "'");
  }
}

// Found over integer batches with the real cost of each (MoE: the experts read grow as
// E (1 - (1 - k/E)^n), not linearly), at the decode step's mean context.
void FindComputeBound(Evaluation& ev, const Settings& decode, InferenceEstimate& e) {
  const uint64_t context = *decode.context;
  e.compute_bound_batch = DecodeComputeBoundBatch(ev, decode, e.rates, context, false);
  if (!e.compute_bound_batch) {
    e.notes.push_back(
        std::string("a decode step stays memory-bound up to batch 2^20: each sequence's ") +
        (ev.spec().transformer.n_heads == 0 ? "SSM-state and activation traffic takes" : "KV-cache reads take") +
        " longer than its compute");
  }
  e.gemm_compute_bound_batch = DecodeComputeBoundBatch(ev, decode, e.rates, context, true);
}

}  // namespace

InferenceEstimate EstimateInference(Evaluation& ev, const Settings& s, const TimeRequest& req) {
  if (s.device == nullptr) throw std::logic_error("EstimateInference: no device (ResolveSettings reads it)");
  const ModelSpec& spec = ev.spec();
  const HardwareSpec& hw = *s.device;
  InferenceEstimate e;
  e.hardware = hw.name;
  e.dtype = ComputeDtype(s.precision);
  // An encoder–decoder: the encoder runs once over the source (--seq), the decoder prefills the
  // prompt (by default its one start token: decoder_start_token_id) and then decodes, its
  // self-attention cache growing while the cross-attention cache holds the source.
  e.enc_dec = spec.family == Family::kTransformer && spec.transformer.encoder_layers > 0;
  e.prompt = req.prompt.value_or(e.enc_dec ? 1 : 512);
  e.generate = req.generate;
  CheckGenerates(spec, s, e.prompt, e.generate);
  e.source = s.seq.value();  // resolved (config/resolve.cc)
  e.rates = InferenceRates(hw, s, req.train.mfu, req.mbu, req.train.power_limit);
  if (!req.train.power_limit && !InferenceRates(hw, s, req.train.mfu, req.mbu, true).power_limited) {
    e.notes.push_back(
        "--no-power-limit changes nothing here: the power limit is priced only on the H100 SXM, H200 and "
        "H800, for 16-bit and fp8 GEMMs at the catalog's rates by shape (no --mfu)");
  }
  e.mbu_basis = req.mbu ? "--mbu"
                : hw.decode_bandwidth_efficiency > 0
                    ? "the catalog's decode_bandwidth_efficiency ('tally hardware " + hw.name +
                          " --explain' gives its source); --mbu sets another"
                    : "assumed: " + hw.name + " has no measured decode bandwidth; --mbu sets another";
  if (hw.kind == "gpu") {
    const std::optional<QuantizationSpec> q = WeightQuantization(spec, s);
    if (q && WeightOnly(*q)) {
      e.dequant_kernel = s.dequant_kernel.value_or(DequantKernel::kMarlin);
      e.dequant_mbu = e.rates.mbu * e.rates.dequant.bandwidth;
    }
  }
  if (s.dequant_kernel && !e.dequant_kernel) {
    e.notes.push_back("--dequant-kernel is ignored: " +
                      std::string(hw.kind == "gpu" ? "'" + spec.name + "' has no weight-only quantized weights here"
                                                   : hw.name + " is not a GPU") +
                      " (--quant int8, int4, nf4 or mxfp4, or a GPTQ, AWQ or integer compressed-tensors checkpoint)");
  }
  e.batch = InferenceBatch(s);
  // Inference runs without dropout, and a decoder's prefill is causal.
  Settings prefill = s;
  prefill.batch = e.batch;
  (e.enc_dec ? prefill.target_seq : prefill.seq) = e.prompt;
  if (e.enc_dec) prefill.seq = e.source;
  prefill.dropout = 0.0;
  prefill.causal = true;
  ev.Summary(prefill);  // checks the parallelism
  e.prefill = ForwardRoofline(*ev.Graph(GraphSettingsOf(prefill)), spec, prefill, e.rates);
  // A decode step: one token per sequence against the cache; its mean context over the generation.
  Settings decode = prefill;
  (e.enc_dec ? decode.target_seq : decode.seq) = 1;
  decode.context = e.prompt + e.generate / 2;
  e.decode = ForwardRoofline(*ev.Graph(GraphSettingsOf(decode)), spec, decode, e.rates);
  e.tokens_per_second = static_cast<double>(e.batch) / e.decode.seconds;
  e.generate_seconds = e.prefill.seconds + e.decode.seconds * static_cast<double>(e.generate);
  FindComputeBound(ev, decode, e);
  Settings whole = prefill;  // the cache holds the prompt and everything generated
  (e.enc_dec ? whole.target_seq : whole.seq) = e.prompt + e.generate;
  const uint64_t total = InferenceMemory(spec, s, ev.Summary(whole)->memory, e.batch).total;
  e.fit = CheckFit(CheckedAdd(total, InferenceOverheads(s, total).Total(), "inference memory"), hw, s, "inference",
                   e.notes);
  if (s.dp() > 1) {
    e.notes.push_back("latency and tokens/s are per model replica; " + std::to_string(s.dp()) +
                      " data-parallel replicas serve that many batches at once");
  }
  return e;
}

}  // namespace tally
