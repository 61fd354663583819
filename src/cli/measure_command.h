// `tally measure`: its flags, their translation into a MeasureRequest, the run, and the output
// (the table, or any report format), plus the --plot and --calibrate files.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/cli_fwd.h"
#include "cli/command.h"
#include "cli/settings_flags.h"
#include "report/format.h"

namespace tally {

// Raw flag text, parsed after CLI11 so that every error is tally's own one-liner.
struct MeasureFlags {
  std::string device = "cpu";
  std::optional<std::string> dtype, sizes, shapes, threads, budget, model, calibrate, plot;
  std::string peak;                    // --peak [FLOP/s | dtype=FLOP/s,...]
  CLI::Option* peak_option = nullptr;  // given at all (a bare --peak has no value)
  WorkloadFlags workload;              // --batch, --seq, --causal, --trainable, --lora for --model
};

void AddMeasureFlags(CLI::App* cmd, MeasureFlags& flags);

// Runs the measurement (on `prepared`'s model with --model) and returns its report. Progress lines
// go to `err` only when stderr is a terminal and the run has taken a second.
Report MeasureReport(const MeasureFlags& flags, Prepared& prepared, std::ostream& err);

struct MeasureCommandFlags {
  MeasureFlags measure;
  OutputFlags output;
};
void AddMeasureCommandFlags(CLI::App* cmd, MeasureCommandFlags& flags);
SharedFlags SharedOf(const MeasureCommandFlags& flags);
std::optional<Report> RunMeasure(const MeasureCommandFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
