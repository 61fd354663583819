// `tally sweep`: a grid over workload flags given as comma lists, one row per point.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/cli_fwd.h"
#include "cli/command.h"
#include "cli/settings_flags.h"
#include "cli/time_command.h"

namespace tally {

struct SweepFlags {
  std::optional<std::string> keys;    // comma list of report keys (columns)
  std::optional<std::string> memory;  // points above this per-device memory are "does not fit"
  TimeFlags time;                     // time's own flags, for the time.* keys (one value each)
};

void AddSweepFlags(CLI::App* cmd, SweepFlags& flags);

// One row per model and grid point (the last axis varies fastest), with a model column when there
// are several models. Writes the rows to `out` as they are computed: csv/tsv (header + rows), jsonl (one object per
// line) or json (a document with the array `sweep`). Memory stays constant in the number of points.
// An error found before the first row leaves `out` untouched.
void RunSweep(const std::vector<std::string>& models, const WorkloadFlags& grid, const SweepFlags& flags,
              const std::string& format, std::ostream& out);

struct SweepCommandFlags {
  std::vector<std::string> models;
  WorkloadFlags grid;
  SweepFlags sweep;
  std::string format = "table";  // table means the default, csv
};
void AddSweepCommandFlags(CLI::App* cmd, SweepCommandFlags& flags);
SharedFlags SharedOf(const SweepCommandFlags& flags);
// Streams the rows to context.out; returns no report.
std::optional<Report> RunSweepCommand(const SweepCommandFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
