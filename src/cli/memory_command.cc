// `tally memory`: training and inference memory per device, the training step's peak, and with
// --timeline its picture.
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/output_file.h"
#include "estimate/memory_estimate.h"
#include "report/timeline_svg.h"
#include "util/error.h"

namespace tally {

SharedFlags SharedOf(const MemoryFlags& flags) { return SharedOf(flags.model); }

void AddMemoryFlags(CLI::App* cmd, MemoryFlags& flags) {
  AddModelFlags(cmd, flags.model, true);
  cmd->add_option("--timeline", flags.timeline,
                  "draw the training step's live bytes over its events, by category, into an SVG file; with "
                  "--format json or csv the report lists the events too (docs/timeline.md)")
      ->type_name("FILE.svg");
}

std::optional<Report> RunMemory(const MemoryFlags& flags, Prepared& prepared, RunContext& /*context*/) {
  if (flags.timeline) {
    CheckWritable(flags.timeline, "--timeline");
    if (prepared.settings.mode == Mode::kInfer) {
      throw InputError("--timeline: it draws the training step; drop --mode infer");
    }
  }
  ReportRequest request{.params = false, .flops = false, .memory = true};
  request.timeline = flags.timeline.has_value() && flags.model.output.format != "table";
  Report report = ModelReport(prepared, request, flags.model.layers);
  if (flags.timeline) {
    const MemoryEstimate memory = EstimateMemory(*prepared.evaluation, prepared.settings, {.events = true});
    const std::string title = "tally: one training step of " + prepared.spec().name + " (micro-batch " +
                              std::to_string(prepared.settings.micro_batch) + ")";
    WriteFile(*flags.timeline, TimelineSvg(memory.step->step, title), "--timeline");
  }
  return report;
}

}  // namespace tally
