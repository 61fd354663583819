#include "cli/fit_command.h"

#include <CLI/CLI.hpp>

#include "cli/exit_code.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/fit.h"
#include "sections/fit_section.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"
#include "util/text.h"

namespace tally {

void AddFitFlags(CLI::App* cmd, FitFlags& f) {
  cmd->add_option("--memory", f.memory, "memory per device with its unit, e.g. 80GiB or 24GB (required)")
      ->type_name("SIZE");
  cmd->add_option("--solve", f.solve,
                  std::string("what to find: ") + Name(Solve::kBatch) + " (largest micro-batch), " + Name(Solve::kSeq) +
                      " (longest), " + Name(Solve::kGpus) + " (fewest), " + Name(Solve::kRecompute) +
                      " (fewest blocks per pipeline stage to recompute: --recompute full --recompute-layers N)")
      ->type_name(JoinNames<Solve>("|"));
}

FitOutcome RunFit(Evaluation& evaluation, const Settings& base, const FitFlags& f) {
  if (!f.memory && base.hardware.empty()) {
    throw InputError(
        "--memory: fit needs the memory per device, e.g. --memory 80GiB, or a device: --hardware h100-sxm");
  }
  const std::optional<uint64_t> memory = f.memory ? std::optional(ParseBytes(*f.memory, "--memory")) : std::nullopt;
  const Solve solve = f.solve ? ParseName<Solve>(*f.solve, "--solve") : Solve::kBatch;
  const FitEstimate fit = EstimateFit(evaluation, base, solve, memory);
  FitOutcome out;
  out.fits = fit.result.fits;
  out.report = FitReport(evaluation, fit);
  if (!out.fits) out.message = FitFailure(evaluation.spec(), fit);
  return out;
}

void AddFitCommandFlags(CLI::App* cmd, FitCommandFlags& f) {
  AddModelFlags(cmd, f.model, true);
  AddFitFlags(cmd, f.fit);
}

SharedFlags SharedOf(const FitCommandFlags& flags) { return SharedOf(flags.model); }

std::optional<Report> RunFitCommand(const FitCommandFlags& f, Prepared& prepared, RunContext& context) {
  FitOutcome outcome = RunFit(*prepared.evaluation, prepared.settings, f.fit);
  if (f.model.output.get) GetKey(outcome.report, *f.model.output.get);  // a bad key fails before the verdict
  if (!outcome.fits) {
    context.err << "tally: " << EscapeControl(outcome.message) << "\n";
    context.code = static_cast<int>(ExitCode::kBudgetFailed);
  }
  return std::move(outcome.report);
}

}  // namespace tally
