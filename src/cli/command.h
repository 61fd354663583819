// The command table (ninja's kTools[]): one row per `tally` command, {name, help, add_flags, run,
// examples}, and the flags and rendering every command shares. Adding a command adds one row in
// commands.cc and one small file (flags → input → evaluation → report).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/settings_flags.h"
#include "sections/estimate_report.h"
#include "report/format.h"
#include "report/report.h"

namespace tally {

// --format, --get, --units, --explain. Optional values are std::optional so that an empty
// argument (--get '') is an error, not "unset".
struct OutputFlags {
  std::string format = "table";
  std::optional<std::string> get;
  std::string units = "iec";
  bool explain = false;
};

void AddOutputFlags(CLI::App* cmd, OutputFlags& o);
FormatOptions ReadFormat(const OutputFlags& o);

// The text for stdout (or the --get value); the report's notes go to `err` as warnings.
std::string Render(const Report& report, const OutputFlags& o, std::ostream& err);

// What a command's run sees besides its flags: the parsed command line (completion reads it),
// the streams (sweep streams its rows to `out`) and the exit code it may set.
struct RunContext {
  const CLI::App& app;
  std::ostream& out;
  std::ostream& err;
  int code = 0;
};

// Returns the text for stdout; RunMain prints it only when no exception was thrown.
using RunFn = std::function<std::string(RunContext&)>;

struct Command {
  std::string_view name;
  std::string_view help;
  // Wires the command's flags into `cmd` and returns its run, bound to where those flags land.
  std::function<RunFn(CLI::App* cmd)> add_flags;
  std::vector<std::string_view> examples;  // command lines (without "tally ") for --help
  // The workload flags (and --layers) whose values change what this command reports. A flag that
  // some command reads, given to one that does not, is an error naming those that do.
  std::vector<std::string> reads;
};

// A row from a command's own pieces: its flags struct, the function that declares the flags and
// the one that runs on them. Each parse gets fresh flags.
template <typename Flags>
Command MakeCommand(std::string_view name, std::string_view help, void (*add_flags)(CLI::App*, Flags&),
                    std::string (*run)(const Flags&, RunContext&), std::vector<std::string_view> examples,
                    std::vector<std::string> reads = {}) {
  return {name, help,
          [add_flags, run](CLI::App* cmd) -> RunFn {
            auto flags = std::make_shared<Flags>();
            add_flags(cmd, *flags);
            return [flags, run](RunContext& context) { return run(*flags, context); };
          },
          std::move(examples), std::move(reads)};
}

// Every command, in the order of `tally --help`.
const std::vector<Command>& Commands();

// The flags of the commands that take one model and report on it: estimate, params, flops,
// memory, time and fit.
struct ModelFlags {
  std::string model;
  bool layers = false;
  WorkloadFlags workload;
  OutputFlags output;
};

// MODEL, the workload flags (when `workload`), --layers and the output flags.
void AddModelFlags(CLI::App* cmd, ModelFlags& flags, bool workload);

// The model's report for `request`, with the workload's settings when `workload`.
std::string RunModelReport(const ModelFlags& flags, ReportRequest request, bool workload, std::ostream& err);

// Every flag AddWorkloadFlags declares ("--batch", ...), less `unread`.
std::vector<std::string> WorkloadFlagsRead(std::initializer_list<std::string_view> unread = {});

// Cuts the keyed table at `path` to the row named `name` (tally hardware h100): the same
// formatters then print one item.
void KeepRow(const Report& report, const std::string& path, const std::string& name);

// `tally COMMAND NAME` (hardware, models, dtypes): cuts COMMAND's keyed table to the row `found`, the
// row NAME stands for; nothing when NAME is empty. `found` empty (NAME names no row) is an InputError
// "unknown NOUN 'NAME'" + suggest() + "; run 'tally COMMAND' for the LIST".
struct NamedRow {
  std::string command;
  std::string noun;
  std::string list;
};
void KeepNamedRow(const Report& report, const NamedRow& what, const std::string& name, const std::string& found,
                  const std::function<std::string()>& suggest);

// flops: a model's, or one GEMM's with --gemm MxNxK.
struct FlopsFlags {
  ModelFlags model;
  std::optional<std::string> gemm;
};

// The four commands that are one request on ModelFlags, each in its own file (estimate_command.cc, ...).
void AddEstimateFlags(CLI::App* cmd, ModelFlags& flags);
std::string RunEstimate(const ModelFlags& flags, RunContext& context);
void AddParamsFlags(CLI::App* cmd, ModelFlags& flags);
std::string RunParams(const ModelFlags& flags, RunContext& context);
void AddFlopsFlags(CLI::App* cmd, FlopsFlags& flags);
std::string RunFlops(const FlopsFlags& flags, RunContext& context);
void AddMemoryFlags(CLI::App* cmd, ModelFlags& flags);
std::string RunMemory(const ModelFlags& flags, RunContext& context);

}  // namespace tally
