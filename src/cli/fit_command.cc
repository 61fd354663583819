#include "cli/fit_command.h"

#include "cli/exit_code.h"
#include "config/hardware.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "sections/estimate_report.h"
#include "estimate/fit.h"
#include "estimate/serving.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"
#include "util/text.h"
#include "util/units.h"

namespace tally {

void AddFitFlags(CLI::App* cmd, FitFlags& f) {
  cmd->add_option("--memory", f.memory, "memory per device with its unit, e.g. 80GiB or 24GB (required)")
      ->type_name("SIZE");
  cmd->add_option("--solve", f.solve,
                  std::string("what to find: ") + Name(Solve::kBatch) + " (largest micro-batch), " + Name(Solve::kSeq) +
                      " (longest), " + Name(Solve::kGpus) + " (fewest)")
      ->type_name(JoinNames<Solve>("|"));
}

namespace {

// fit --mode infer: the KV tokens the memory left holds and, on a named device, the decode step at
// the concurrency found (every sequence at --seq tokens).
void AddServing(Evaluation& ev, const Settings& s, uint64_t limit, uint64_t max_seqs, const HardwareSpec* hw,
                Report& r) {
  if (ev.spec().family != Family::kTransformer) return;
  const auto summary = ev.Summary(s);
  const KvCapacity kv = KvTokenCapacity(ev.spec(), s, summary->memory, limit, s.batch);
  r.Set("fit.kv_tokens", "KV cache tokens the memory left holds", kv.tokens, Unit::kNumber,
        "floor(free / page bytes) x " + std::to_string(s.kv_block.value_or(1)) +
            " tokens; free = limit - weights - activations (- overhead) = " + std::to_string(kv.free_bytes) +
            " B, a page = " + std::to_string(kv.page_bytes) +
            " B (K and V of every attention layer; windowed layers hold at most their span, so at long contexts "
            "they serve more: fit.batch is exact at --seq) (vLLM's num_gpu_blocks x block_size)");
  r.Set("fit.kv_pages", "KV cache pages", kv.pages, Unit::kNumber);
  // vLLM also caps the running sequences (max_num_seqs); tally answers what memory allows.
  if (s.batch > max_seqs) {
    r.notes.push_back("fit.batch " + std::to_string(s.batch) + " is what memory allows; vLLM runs at most " +
                      std::to_string(max_seqs) + " sequences at once by default (--max-num-seqs)");
  }
  if (!hw) return;
  if (s.ep > 1) {  // InferenceRates refuses it
    r.notes.push_back("--ep: no TPOT or tokens/s (inference latency under expert parallelism is not modelled)");
    return;
  }
  // The defaults of 'tally time' (estimate/time_report.cc): MFU 0.4, MBU 0.8.
  const RooflineRates rates = InferenceRates(*hw, s, 0.4, 0.8);
  const uint64_t context = summary->seq;
  const Roofline d = DecodeStep(ev, s, rates, s.batch, context);
  r.Set("fit.tpot_seconds", "TPOT at that concurrency (decode step)", d.seconds, Unit::kSecond,
        "one decode step of fit.batch sequences, each at --seq cached tokens: sum over ops of max(FLOPs / (peak x "
        "0.4), bytes / (bandwidth x 0.8)) + all-reduces ('tally time --mode infer' for other rates)");
  r.Set("fit.tokens_per_second", "generated tokens/s at that concurrency", static_cast<double>(s.batch) / d.seconds,
        Unit::kRatio, "fit.batch / fit.tpot_seconds");
  if (auto b = DecodeComputeBoundBatch(ev, s, rates, context, false)) {
    r.Set("fit.decode_compute_bound_batch", "decode turns compute-bound from batch", *b, Unit::kNumber,
          "the smallest integer batch whose decode step's compute time reaches its memory time at --seq");
  } else {
    r.notes.push_back("a decode step at --seq " + std::to_string(context) +
                      " stays memory-bound up to batch 2^20: each sequence's KV-cache reads take longer than its "
                      "compute");
  }
}

}  // namespace

FitOutcome RunFit(const ModelSpec& spec, const Settings& settings, const FitFlags& f) {
  Settings base = ResolveSettings(settings, spec);
  if (!f.memory && base.hardware.empty()) {
    throw InputError(
        "--memory: fit needs the memory per device, e.g. --memory 80GiB, or a device: --hardware h100-sxm");
  }
  const HardwareSpec* hw = base.device.get();
  const std::optional<uint64_t> memory = f.memory ? std::optional(ParseBytes(*f.memory, "--memory")) : std::nullopt;
  if (base.mode == Mode::kBoth) base.mode = Mode::kTrain;  // fit one ledger: training unless told
  // Inference is fitted as a server allocates it (estimate/serving.h): vLLM's defaults where unset.
  const bool serving = base.mode == Mode::kInfer && spec.family == Family::kTransformer && !spec.transformer.encoder;
  const uint64_t device_memory = memory ? *memory : hw->memory_bytes;
  const std::string device_name = memory ? "" : hw->name;
  if (serving) base = WithServingDefaults(base, device_memory, device_name);
  // A named device gives its usable memory (less --reserve) unless --memory says otherwise; a
  // server claims its --gpu-memory-utilization of either.
  const uint64_t limit = memory ? ClaimedMemory(*memory, base) : UsableMemory(*hw, base);
  const Solve solve = f.solve ? ParseName<Solve>(*f.solve, "--solve") : Solve::kBatch;
  const std::string kind = Name(solve);
  Evaluation evaluation(spec);
  FitResult result = Fit(evaluation, base, solve, limit);

  FitOutcome out;
  out.fits = result.fits;
  out.report = EstimateReport(evaluation, result.settings, {.params = false, .flops = false, .memory = true});
  Report& r = out.report;
  r.Group("fit", "Fit");
  r.Set("fit.limit", "memory limit per device", limit, Unit::kByte);
  r.Set("fit.fits", "fits", result.fits, Unit::kBool);
  r.Set("fit.solve", "solved for", kind, Unit::kText);
  r.Set("fit.batch", "batch per replica (micro-batch x grad-accum)", result.settings.batch, Unit::kNumber);
  r.Set("fit.global_batch", "global batch (x data-parallel replicas)", result.settings.global_batch(), Unit::kNumber);
  r.Set("fit.micro_batch", "micro-batch per device", result.settings.micro_batch, Unit::kNumber);
  r.Set("fit.seq", "sequence length", evaluation.Summary(result.settings)->seq, Unit::kNumber);
  r.Set("fit.gpus", "devices", result.settings.gpus, Unit::kNumber);
  r.Set("fit.memory", "memory per device at the answer", result.bytes, Unit::kByte);
  if (serving && result.fits) {
    AddServing(evaluation, result.settings, limit, VllmMaxNumSeqs(device_memory, device_name), hw, r);
  }
  if (!result.note.empty()) r.notes.push_back(result.note);
  if (!result.fits) {
    const std::string what = solve == Solve::kBatch ? "a micro-batch of 1"
                             : solve == Solve::kSeq ? "a sequence of 1 token"
                                                    : "2^40 data-parallel ranks";
    out.message = "'" + spec.name + "' does not fit in " + FormatBytes(limit, UnitSystem::kIec) +
                  " per device even with " + what + " (needs " + FormatBytes(result.bytes, UnitSystem::kIec) +
                  "); try ZeRO (--zero), tensor or pipeline parallelism, recomputation or a smaller precision";
  }
  return out;
}

void AddFitCommandFlags(CLI::App* cmd, FitCommandFlags& f) {
  AddModelFlags(cmd, f.model, true);
  AddFitFlags(cmd, f.fit);
}

std::string RunFitCommand(const FitCommandFlags& f, RunContext& context) {
  ReadFormat(f.model.output);
  FitOutcome outcome = RunFit(ResolveModel(f.model.model), ReadSettings(f.model.workload), f.fit);
  if (f.model.output.get) GetKey(outcome.report, *f.model.output.get);  // a bad key fails before the verdict
  if (!outcome.fits) {
    context.err << "tally: " << EscapeControl(outcome.message) << "\n";
    context.code = static_cast<int>(ExitCode::kBudgetFailed);
  }
  return Render(outcome.report, f.model.output, context.err);
}

}  // namespace tally
