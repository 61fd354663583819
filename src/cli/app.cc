#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <optional>

#include "cli/check_command.h"
#include "cli/completion.h"
#include "cli/dtypes_command.h"
#include "cli/exit_code.h"
#include "cli/fit_command.h"
#include "cli/measure_command.h"
#include "cli/models_command.h"
#include "cli/settings_flags.h"
#include "cli/sweep_command.h"
#include "cli/time_command.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/estimate_graph.h"
#include "report/format.h"
#include "util/error.h"
#include "util/spellcheck.h"
#include "util/text.h"
#include "util/units.h"
#include "version.h"

namespace tally {
namespace {

constexpr const char* kFooter =
    "Conventions: a FLOP is one add or one multiply, so a GEMM (m x k)·(k x n) costs 2·m·n·k FLOPs;\n"
    "MACs are labelled MACs. Matmul FLOPs are the headline; softmax, norms, activations and adds are\n"
    "reported apart. Attention has no causal discount unless --causal. Backward counts dX and dW per GEMM.\n"
    "Memory defaults: mixed-bf16, adamw, flash attention, no recomputation, one device.\n"
    "Exit codes: 0 success, 1 budget failed or nothing fits, 2 bad input, 3 runtime failure, 4 internal error.";

// Optional values are std::optional so that an empty argument (--get '') is an error, not "unset".
struct Options {
  std::string model;
  bool layers = false;
  bool explain = false;
  std::string format = "table";
  std::optional<std::string> get;
  std::string units = "iec";
  WorkloadFlags workload;
  FitFlags fit;
  std::optional<std::string> value;  // dtypes --value
  CheckFlags check;
  SweepFlags sweep;
  TimeFlags time;
};

const std::vector<std::string> kCommands = {"estimate", "params", "flops", "memory", "fit", "time", "check", "sweep", "measure", "models", "hardware", "dtypes", "completion"};

void AddOutputOptions(CLI::App* cmd, Options& o) {
  cmd->add_option("--format", o.format, "table | json | csv | tsv (default table)")->type_name("FORMAT");
  cmd->add_option("--get", o.get, "print only the value at this dotted JSON key, e.g. params.total")
      ->type_name("KEY");
  cmd->add_option("--units", o.units, "byte units in tables: iec (GiB) | si (GB); JSON is always bytes")
      ->type_name("iec|si");
  cmd->add_flag("--explain", o.explain, "show each figure's formula and source under it (table)");
}

void AddModelOptions(CLI::App* cmd, Options& o, bool workload) {
  cmd->add_option("MODEL", o.model, "a preset name ('tally models') or a path to a tally YAML/JSON config or "
                                    "a Hugging Face config.json")
      ->required()
      ->type_name("");
  if (workload) AddWorkloadFlags(cmd, o.workload);
  cmd->add_flag("--layers", o.layers, "add the per-node breakdown (table, JSON 'layers', or one CSV row per node)");
  AddOutputOptions(cmd, o);
}

// CLI11 words its errors in sentence case; tally's messages start in lower case.
std::string CliMessage(const CLI::ParseError& e) {
  std::string text = e.what();
  // "The following argument..." reads mid-sentence in lower case; "MODEL is required" keeps its name.
  const auto upper = [&](size_t i) { return i < text.size() && std::isupper(static_cast<unsigned char>(text[i])); };
  if (upper(0) && !upper(1)) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

FormatOptions ReadFormat(const Options& o) {
  return {ParseOutputFormat(o.format), ParseUnitSystem(o.units), o.explain};
}

// Renders first, prints after: a late error never leaves half a document on stdout.
std::string Render(const Report& report, const Options& o, std::ostream& err) {
  std::string text = o.get ? GetKey(report, *o.get) : FormatReport(report, ReadFormat(o));
  // A note may quote a model's name: its control characters are escaped, as in the table.
  for (const std::string& note : report.notes) err << "tally: warning: " << EscapeControl(note) << "\n";
  return text;
}

std::string RunModelCommand(const Options& o, ReportRequest request, bool workload, std::ostream& err) {
  ReadFormat(o);  // flag errors before the model is read
  Settings settings = workload ? ReadSettings(o.workload) : Settings{};
  Evaluation evaluation(ResolveModel(o.model));
  request.layers = o.layers;
  return Render(EstimateReport(evaluation, ResolveSettings(settings, evaluation.spec()), request), o, err);
}

std::string RunDtypes(const Options& o, std::ostream& err) {
  ReadFormat(o);  // flag errors before the value is read
  return Render(DtypesReport(o.value), o, err);
}

std::string RunCheckCommand(const Options& o, std::ostream& err, int& code) {
  ReadFormat(o);
  CheckOutcome outcome = RunCheck(o.model, o.workload, o.check, o.time);
  if (!outcome.pass) code = static_cast<int>(ExitCode::kBudgetFailed);
  return Render(outcome.report, o, err);
}

std::string RunTime(const Options& o, std::ostream& err) {
  ReadFormat(o);
  Settings settings = ReadSettings(o.workload);
  TimeRequest request = ReadTimeRequest(o.time, o.workload.gpus.has_value(), settings.gpus);
  Evaluation evaluation(ResolveModel(o.model));
  settings = ResolveSettings(settings, evaluation.spec());
  Report report = EstimateReport(evaluation, settings, {.params = false, .flops = false});
  AddTime(evaluation, settings, request, report);
  return Render(report, o, err);
}

std::string RunModels(const Options& o, std::ostream& err) {
  ReadFormat(o);
  return Render(ListModels(), o, err);
}

// Parses argv and runs the chosen command; returns the text for stdout and sets `code`.
std::string Dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, int& code) {
  CLI::App app{"tally: parameters, FLOPs and memory of deep-learning models, exactly, from a config", "tally"};
  app.set_version_flag("--version", std::string("tally ") + TALLY_VERSION + " (commit " + TALLY_COMMIT + ")");
  app.footer(kFooter);
  app.require_subcommand(1);
  Options o;
  CLI::App* estimate = app.add_subcommand("estimate", "everything tally knows about MODEL, in one report");
  CLI::App* params = app.add_subcommand("params", "parameters: total, embedding, non-embedding, per component and block");
  CLI::App* flops = app.add_subcommand("flops", "FLOPs: forward, backward, step, per token, per component, 6·N·D");
  CLI::App* memory = app.add_subcommand("memory", "training and inference memory per device, itemized");
  CLI::App* fit = app.add_subcommand("fit", "largest batch or sequence, or fewest devices, within a memory limit");
  CLI::App* check = app.add_subcommand("check", "budget limits on any report key: exit 0 pass, 1 fail, 2 bad input");
  CLI::App* time = app.add_subcommand("time", "training time or compute budget; --mode infer: TTFT and TPOT by roofline");
  CLI::App* hardware = app.add_subcommand("hardware", "the hardware catalog: dense peaks, memory, bandwidth");
  CLI::App* sweep = app.add_subcommand("sweep", "a grid over comma-listed flags (--batch 1,2,4 --seq 1024,2048): one row per point");
  CLI::App* measure = app.add_subcommand("measure", "GEMM FLOP/s and MFU on this CPU (OpenBLAS) or GPU (cuBLAS); --model times a model's GEMMs");
  CLI::App* models = app.add_subcommand("models", "the presets, one line each");
  CLI::App* completion = app.add_subcommand("completion", "a bash or zsh completion script: eval \"$(tally completion bash)\"");
  std::string shell = "bash";
  completion->add_option("SHELL", shell, "bash (default) or zsh")->type_name("");
  CLI::App* dtypes = app.add_subcommand("dtypes", "bit layouts, ranges and epsilon of fp32 ... int4; --value X rounds X");
  AddModelOptions(estimate, o, true);
  AddModelOptions(params, o, false);
  AddModelOptions(flops, o, true);
  AddModelOptions(memory, o, true);
  AddModelOptions(fit, o, true);
  AddFitFlags(fit, o.fit);
  check->add_option("MODEL", o.model, "a preset or config (optional with a budget file that names models)")
      ->type_name("");
  AddWorkloadFlags(check, o.workload);
  AddCheckFlags(check, o.check);
  AddTimeFlags(check, o.time);
  AddOutputOptions(check, o);
  sweep->add_option("MODEL", o.model, "a preset or config")->required()->type_name("");
  AddWorkloadFlags(sweep, o.workload);
  AddSweepFlags(sweep, o.sweep);
  sweep->add_option("--format", o.format, "csv (default) | tsv | jsonl | json")->type_name("FORMAT");
  MeasureFlags measure_flags;
  AddMeasureFlags(measure, measure_flags);
  AddOutputOptions(measure, o);
  AddModelOptions(time, o, true);
  AddTimeFlags(time, o.time);
  AddOutputOptions(hardware, o);
  AddOutputOptions(models, o);
  AddOutputOptions(dtypes, o);
  dtypes->add_option("--value", o.value, "show how this value is stored in each format (e.g. 1e-8)")->type_name("X");
  // CLI11 would call an unknown command a missing one; name it instead.
  if (!args.empty() && !args[0].empty() && args[0][0] != '-' &&
      std::find(kCommands.begin(), kCommands.end(), args[0]) == kCommands.end()) {
    std::string list;
    for (const std::string& c : kCommands) list += (list.empty() ? "" : ", ") + c;
    throw InputError("unknown command '" + args[0] + "'" + DidYouMean(args[0], kCommands) + "; commands are " + list);
  }

  std::vector<const char*> argv = {"tally"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::CallForAllHelp& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::CallForVersion& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::ParseError& e) {
    throw InputError(CliMessage(e) + "; run 'tally --help' for usage");
  }
  code = static_cast<int>(ExitCode::kSuccess);
  if (estimate->parsed()) return RunModelCommand(o, {.memory = true}, true, err);
  if (params->parsed()) return RunModelCommand(o, {.settings = false, .flops = false}, false, err);
  if (flops->parsed()) return RunModelCommand(o, {.params = false}, true, err);
  if (memory->parsed()) return RunModelCommand(o, {.params = false, .flops = false, .memory = true}, true, err);
  if (fit->parsed()) {
    ReadFormat(o);
    FitOutcome outcome = RunFit(ResolveModel(o.model), ReadSettings(o.workload), o.fit);
    if (o.get) GetKey(outcome.report, *o.get);  // a bad key fails before the verdict is printed
    if (!outcome.fits) {
      err << "tally: " << EscapeControl(outcome.message) << "\n";
      code = static_cast<int>(ExitCode::kBudgetFailed);
    }
    return Render(outcome.report, o, err);
  }
  if (dtypes->parsed()) return RunDtypes(o, err);
  if (completion->parsed()) return CompletionScript(app, shell);
  if (time->parsed()) return RunTime(o, err);
  if (hardware->parsed()) {
    ReadFormat(o);
    return Render(HardwareReport(), o, err);
  }
  if (check->parsed()) return RunCheckCommand(o, err, code);
  if (measure->parsed()) return RunMeasureCommand(measure_flags, ReadFormat(o), o.get, err);
  if (sweep->parsed()) {
    RunSweep(o.model, o.workload, o.sweep, o.format == "table" ? "csv" : o.format, out);  // streams to stdout
    return "";
  }
  return RunModels(o, err);
}

}  // namespace

int RunMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    int code = 0;
    std::string text = Dispatch(args, out, err, code);
    out << text;
    out.flush();
    if (!out) throw RuntimeError("cannot write the output (is stdout closed or the disk full?)");
    return code;
  } catch (const InputError& e) {
    err << FormatDiagnostic(e) << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const RuntimeError& e) {
    err << "tally: error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kRuntime);
  } catch (const std::exception& e) {
    err << "tally: internal error: " << e.what() << " (this is a bug; please report it with the command line)\n";
    return static_cast<int>(ExitCode::kInternal);
  }
}

}  // namespace tally
