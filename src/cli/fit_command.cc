#include "cli/fit_command.h"

#include "cli/exit_code.h"
#include "config/hardware.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/estimate_graph.h"
#include "estimate/fit.h"
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

FitOutcome RunFit(const ModelSpec& spec, const Settings& settings, const FitFlags& f) {
  Settings base = ResolveSettings(settings, spec);
  if (!f.memory && base.hardware.empty()) {
    throw InputError(
        "--memory: fit needs the memory per device, e.g. --memory 80GiB, or a device: --hardware h100-sxm");
  }
  // A named device gives its usable memory (less --reserve) unless --memory says otherwise.
  const uint64_t limit =
      f.memory ? ParseBytes(*f.memory, "--memory") : UsableMemory(ResolveHardware(base.hardware), base);
  const Solve solve = f.solve ? ParseName<Solve>(*f.solve, "--solve") : Solve::kBatch;
  const std::string kind = Name(solve);
  if (base.mode == Mode::kBoth) base.mode = Mode::kTrain;  // fit one ledger: training unless told
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
