#include "sections/fit_section.h"

#include "sections/estimate_report.h"
#include "util/units.h"

namespace tally {
namespace {

using E = const FitEstimate&;

const Settings& S(E f) { return f.result.settings; }
const ServingEstimate::Decode* Decode(E f) { return f.serving && f.serving->decode ? &*f.serving->decode : nullptr; }

void AddServingNotes(E f, Report& r) {
  if (!f.serving) return;
  const ServingEstimate& v = *f.serving;
  // vLLM also caps the running sequences (max_num_seqs); tally answers what memory allows.
  if (S(f).batch > v.max_seqs) {
    r.notes.push_back("fit.batch " + std::to_string(S(f).batch) + " is what memory allows; vLLM runs at most " +
                      std::to_string(v.max_seqs) + " sequences at once by default (--max-num-seqs)");
  }
  if (!v.on_device) return;
  if (!v.decode) {
    r.notes.push_back("--ep: no TPOT or tokens/s (inference latency under expert parallelism is not modelled)");
  } else if (!v.decode->compute_bound_batch) {
    r.notes.push_back("a decode step at --seq " + std::to_string(v.context) +
                      " stays memory-bound up to batch 2^20: each sequence's KV-cache reads take longer than its "
                      "compute");
  }
}

}  // namespace

const KeyTable<FitEstimate>& FitKeys() {
  static const KeyTable<FitEstimate> kKeys = {
      {.key = "fit", .label = "Fit"},
      {.key = "fit.limit",
       .label = "memory limit per device",
       .unit = Unit::kByte,
       .value = [](E f) -> Cell { return f.limit; }},
      {.key = "fit.fits", .label = "fits", .unit = Unit::kBool, .value = [](E f) -> Cell { return f.result.fits; }},
      {.key = "fit.solve", .label = "solved for", .value = [](E f) -> Cell { return std::string(Name(f.solve)); }},
      {.key = "fit.batch",
       .label = "batch per replica (micro-batch x grad-accum)",
       .unit = Unit::kNumber,
       .value = [](E f) -> Cell { return S(f).batch; }},
      {.key = "fit.global_batch",
       .label = "global batch (x data-parallel replicas)",
       .unit = Unit::kNumber,
       .value = [](E f) -> Cell { return S(f).global_batch(); }},
      {.key = "fit.micro_batch",
       .label = "micro-batch per device",
       .unit = Unit::kNumber,
       .value = [](E f) -> Cell { return S(f).micro_batch; }},
      {.key = "fit.seq", .label = "sequence length", .unit = Unit::kNumber, .value = [](E f) -> Cell { return f.seq; }},
      {.key = "fit.gpus", .label = "devices", .unit = Unit::kNumber, .value = [](E f) -> Cell { return S(f).gpus; }},
      {.key = "fit.recompute_layers",
       .label = "recomputed blocks per pipeline stage",
       .unit = Unit::kNumber,
       .value = [](E f) { return When(f.solve == Solve::kRecompute, S(f).recompute_layers.value_or(0)); },
       .explain = [](E) -> std::string {
         return "the fewest blocks of each pipeline stage that --recompute full --recompute-layers N reruns for the "
                "step to fit; 0: it fits without recomputation";
       }},
      {.key = "fit.memory",
       .label = "memory per device at the answer",
       .unit = Unit::kByte,
       .value = [](E f) -> Cell { return f.result.bytes; }},
      // fit --mode infer: the KV tokens the memory left holds and, on a named device, the decode step
      // at the concurrency found (every sequence at --seq tokens).
      {.key = "fit.kv_tokens",
       .label = "KV cache tokens the memory left holds",
       .unit = Unit::kNumber,
       .value = [](E f) { return When(f.serving.has_value(), f.serving ? f.serving->kv.tokens : 0); },
       .explain =
           [](E f) {
             const KvCapacity& kv = f.serving->kv;
             return "floor(free / page bytes) x " + std::to_string(S(f).kv_block.value_or(1)) +
                    " tokens; free = limit - weights - activations (- overhead) = " + std::to_string(kv.free_bytes) +
                    " B, a page = " + std::to_string(kv.page_bytes) +
                    " B (K and V of every attention layer; windowed layers hold at most their span, so at long "
                    "contexts they serve more: fit.batch is exact at --seq) (vLLM's num_gpu_blocks x block_size)";
           }},
      {.key = "fit.kv_pages",
       .label = "KV cache pages",
       .unit = Unit::kNumber,
       .value = [](E f) { return When(f.serving.has_value(), f.serving ? f.serving->kv.pages : 0); }},
      {.key = "fit.tpot_seconds",
       .label = "TPOT at that concurrency (decode step)",
       .unit = Unit::kSecond,
       .value = [](E f) { return When(Decode(f) != nullptr, Decode(f) ? Decode(f)->seconds : 0.0); },
       .explain =
           [](E f) {
             return "one decode step of fit.batch sequences, each at --seq cached tokens: sum over ops of max(FLOPs / "
                    "(peak x " +
                    FormatDouble(Decode(f)->mfu) + "), bytes / (bandwidth x " + FormatDouble(Decode(f)->mbu) +
                    ")) + all-reduces ('tally time --mode infer' for other rates)";
           }},
      {.key = "fit.tokens_per_second",
       .label = "generated tokens/s at that concurrency",
       .unit = Unit::kRatio,
       .value = [](E f) { return When(Decode(f) != nullptr, Decode(f) ? Decode(f)->tokens_per_second : 0.0); },
       .explain = [](E) -> std::string { return "fit.batch / fit.tpot_seconds"; }},
      {.key = "fit.decode_compute_bound_batch",
       .label = "decode turns compute-bound from batch",
       .unit = Unit::kNumber,
       .value =
           [](E f) {
             const ServingEstimate::Decode* d = Decode(f);
             return When(d != nullptr && d->compute_bound_batch, d ? d->compute_bound_batch.value_or(0) : 0);
           },
       .explain = [](E) -> std::string {
         return "the smallest integer batch whose decode step's compute time reaches its memory time at --seq";
       }},
  };
  return kKeys;
}

Report FitReport(Evaluation& evaluation, const FitEstimate& fit) {
  Report r = EstimateReport(evaluation, fit.result.settings, {.params = false, .flops = false, .memory = true});
  Present(FitKeys(), fit, r);
  AddServingNotes(fit, r);
  if (!fit.result.note.empty()) r.notes.push_back(fit.result.note);
  return r;
}

std::string FitFailure(const ModelSpec& spec, const FitEstimate& fit) {
  const std::string what = fit.solve == Solve::kBatch       ? "a micro-batch of 1"
                           : fit.solve == Solve::kSeq       ? "a sequence of 1 token"
                           : fit.solve == Solve::kRecompute ? "any number of blocks recomputed"
                                                            : "2^40 data-parallel ranks";
  return "'" + spec.name + "' does not fit in " + FormatBytes(fit.limit, UnitSystem::kIec) + " per device even with " +
         what + " (needs " + FormatBytes(fit.result.bytes, UnitSystem::kIec) +
         "); try ZeRO (--zero), tensor or pipeline parallelism, " +
         (fit.solve == Solve::kRecompute ? "" : "recomputation ") + "or a smaller precision";
}

}  // namespace tally
