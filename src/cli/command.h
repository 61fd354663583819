// The command table (ninja's kTools[]): one row per `tally` command, {name, help, add_flags, run,
// examples}, and the flags and rendering every command shares. Adding a command adds one row in
// commands.cc and one small file (flags → input → evaluation → report).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_fwd.h"
#include "cli/settings_flags.h"
#include "estimate/evaluation.h"
#include "report/format.h"
#include "report/report.h"
#include "sections/estimate_report.h"

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

// How much of the shared pipeline runs before a command (ninja's kTools[] `when`): nothing; the
// model read; or the model read and the workload's settings resolved against it, once.
enum class Stage { kNone, kModel, kSettings };

// What the pipeline reads from a command's flags (each flags struct has a SharedOf overload). A
// null `model` (or an empty one: flops --gemm, measure without --model) prepares nothing; a null
// `workload` resolves the default settings (params reads none); a null `output`: the command
// writes its own output to RunContext::out (sweep streams rows, completion prints a script).
struct SharedFlags {
  const OutputFlags* output = nullptr;
  const std::string* model = nullptr;
  const WorkloadFlags* workload = nullptr;
};

// What the pipeline hands a command: the model's evaluation and its resolved settings.
struct Prepared {
  std::optional<Evaluation> evaluation;
  Settings settings;  // resolved by ResolveSettings (Stage::kSettings)

  const ModelSpec& spec() const { return evaluation->spec(); }
};

// Runs the stages `stage` asks for on `shared`: flag errors first (--format, the workload flags),
// then the model, then the settings resolved against it.
Prepared Prepare(Stage stage, const SharedFlags& shared);

// A command's run returns its report, which RunMain renders once, or nothing when it wrote its own.
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

// A row from a command's own pieces: the stage of the shared pipeline it needs, its flags struct,
// the function that declares the flags and the one that runs on them. Each parse gets fresh flags.
template <typename Flags>
Command MakeCommand(std::string_view name, std::string_view help, Stage stage, void (*add_flags)(CLI::App*, Flags&),
                    std::optional<Report> (*run)(const Flags&, Prepared&, RunContext&),
                    std::vector<std::string_view> examples, std::vector<std::string> reads = {}) {
  return {name, help,
          [stage, add_flags, run](CLI::App* cmd) -> RunFn {
            auto flags = std::make_shared<Flags>();
            add_flags(cmd, *flags);
            return [flags, stage, run](RunContext& context) -> std::string {
              const SharedFlags shared = SharedOf(*flags);
              Prepared prepared = Prepare(stage, shared);
              const std::optional<Report> report = run(*flags, prepared, context);
              return report ? Render(*report, *shared.output, context.err) : "";
            };
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

// The model, its workload and its output flags. SharedOf(flags, false): the workload is not read.
SharedFlags SharedOf(const ModelFlags& flags, bool workload = true);

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

SharedFlags SharedOf(const FlopsFlags& flags);

// The model's report for `request` at the prepared settings, with --layers when `layers`.
Report ModelReport(Prepared& prepared, ReportRequest request, bool layers);

// params reads no workload: its flags are a ModelFlags of their own type, so that SharedOf knows.
struct ParamsFlags : ModelFlags {};
SharedFlags SharedOf(const ParamsFlags& flags);

// The four commands that are one request on ModelFlags, each in its own file (estimate_command.cc, ...).
void AddEstimateFlags(CLI::App* cmd, ModelFlags& flags);
std::optional<Report> RunEstimate(const ModelFlags& flags, Prepared& prepared, RunContext& context);
void AddParamsFlags(CLI::App* cmd, ParamsFlags& flags);
std::optional<Report> RunParams(const ParamsFlags& flags, Prepared& prepared, RunContext& context);
void AddFlopsFlags(CLI::App* cmd, FlopsFlags& flags);
std::optional<Report> RunFlops(const FlopsFlags& flags, Prepared& prepared, RunContext& context);
// memory: the ledgers and the step's peak; --timeline FILE draws the step (SVG) or lists its events (.json).
struct MemoryFlags {
  ModelFlags model;
  std::optional<std::string> timeline;
};
SharedFlags SharedOf(const MemoryFlags& flags);
void AddMemoryFlags(CLI::App* cmd, MemoryFlags& flags);
std::optional<Report> RunMemory(const MemoryFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
