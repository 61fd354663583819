// `tally dtypes`: the number formats' layouts and limits, and how a value rounds in each.
#pragma once

#include <optional>
#include <string>

#include "cli/command.h"
#include "report/report.h"

namespace tally {

// dtypes: a table keyed by name, with bits, ..., decimal_digits (JSON dtypes.<name>.*); with
// `value`, also value and the columns rounded, relative_error and note.
Report DtypesReport(const std::optional<std::string>& value);

// [NAME]: one format; --value X: how X is stored.
struct DtypesFlags {
  std::string name;
  OutputFlags output;
  std::optional<std::string> value;
};
void AddDtypesFlags(CLI::App* cmd, DtypesFlags& flags);
SharedFlags SharedOf(const DtypesFlags& flags);
std::optional<Report> RunDtypes(const DtypesFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
