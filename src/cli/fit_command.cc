#include "cli/fit_command.h"

#include "estimate/estimate_graph.h"
#include "estimate/fit.h"
#include "graph/build_graph.h"
#include "util/error.h"
#include "util/spellcheck.h"
#include "util/units.h"

namespace tally {

void AddFitFlags(CLI::App* cmd, FitFlags& f) {
  cmd->add_option("--memory", f.memory, "memory per device, e.g. 80GiB or 24GB (required)")->type_name("SIZE");
  cmd->add_option("--solve", f.solve, "what to find: batch (largest micro-batch), seq (longest), gpus (fewest)")
      ->type_name("batch|seq|gpus");
}

FitOutcome RunFit(const ModelSpec& spec, const Settings& settings, const FitFlags& f) {
  if (!f.memory) throw InputError("--memory: fit needs the memory per device, e.g. --memory 80GiB");
  const uint64_t limit = ParseBytes(*f.memory, "memory");
  const std::vector<std::string> kinds = {"batch", "seq", "gpus"};
  const std::string kind = f.solve.value_or("batch");
  auto it = std::find(kinds.begin(), kinds.end(), kind);
  if (it == kinds.end()) {
    throw InputError("--solve: unknown value '" + kind + "'" + DidYouMean(kind, kinds) + "; use batch, seq or gpus");
  }
  const Solve solve = static_cast<Solve>(it - kinds.begin());
  Settings base = settings;
  if (base.mode == Mode::kBoth) base.mode = Mode::kTrain;  // fit one ledger: training unless told
  FitResult result = Fit(spec, base, solve, limit);

  FitOutcome out;
  out.fits = result.fits;
  LayerGraph graph = BuildGraph(spec, result.settings);
  out.report = EstimateGraph(spec, result.settings, graph, {.params = false, .flops = false, .memory = true});
  Report& r = out.report;
  r.Group("fit", "Fit");
  r.Set("fit.limit", "memory limit per device", limit, Unit::kByte);
  r.Set("fit.fits", "fits", result.fits, Unit::kBool);
  r.Set("fit.solve", "solved for", kind, Unit::kText);
  r.Set("fit.batch", "batch per replica (micro-batch x grad-accum)", result.settings.batch, Unit::kNumber);
  r.Set("fit.global_batch", "global batch (x data-parallel replicas)", result.settings.global_batch(), Unit::kNumber);
  r.Set("fit.micro_batch", "micro-batch per device", result.settings.micro_batch, Unit::kNumber);
  r.Set("fit.seq", "sequence length", graph.seq, Unit::kNumber);
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

}  // namespace tally
