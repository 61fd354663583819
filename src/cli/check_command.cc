#include "cli/check_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "cli/exit_code.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "config/yaml_reader.h"
#include "report/format.h"
#include "sections/estimate_report.h"
#include "sections/key_reader.h"
#include "sections/sections.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"
#include "util/text.h"
#include "util/units.h"

namespace tally {
namespace {

struct Limit {
  std::string key;
  bool is_max = true;
  std::string text;
  std::optional<SourceLoc> loc;  // where a budget file wrote it; none for a flag
};

struct Budget {
  std::vector<std::pair<std::string, std::optional<SourceLoc>>> models;
  WorkloadFlags flags;
  std::vector<Limit> limits;
  // Where the file's settings set each one, by its flag's spelling ("--micro-batch"): an error a
  // setting causes only once the others are known (gpus against tp, sp against tp) is blamed there.
  std::map<std::string, SourceLoc> setting_locs;
};

// "--micro-batch" for the setting "micro_batch".
std::string FlagOf(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

std::vector<std::string> SettingNames() {
  std::vector<std::string> names = {"causal", "sp", "trainable"};
  for (const TextFlag& s : TextFlags()) names.emplace_back(s.name);
  return names;
}

// A setting's own errors are reported at its line in the budget file.
void ValidateAt(const WorkloadFlags& single, const SourceLoc& loc) {
  try {
    ReadSettings(single);
  } catch (const InputError& e) {
    throw InputError(loc, e.message());
  }
}

void ReadSettingsMap(const ConfigMap& m, WorkloadFlags& flags, std::map<std::string, SourceLoc>& locs) {
  for (const TextFlag& s : TextFlags()) {
    if (!m.Has(s.name)) continue;
    WorkloadFlags single;
    single.*s.field = m.String(s.name, "");
    ValidateAt(single, m.Loc(s.name));
    flags.*s.field = single.*s.field;
    locs.emplace(FlagOf(s.name), m.Loc(s.name));
  }
  flags.causal = m.Bool("causal", false);
  flags.sp = m.Bool("sp", false);
  if (flags.sp) locs.emplace("--sp", m.Loc("sp"));
  if (m.Has("trainable")) {
    WorkloadFlags single;
    single.trainable = {m.String("trainable", "")};
    ValidateAt(single, m.Loc("trainable"));
    flags.trainable = single.trainable;
  }
}

void ReadLimits(const ConfigMap& budget, const char* key, bool is_max, std::vector<Limit>& out) {
  if (!budget.Has(key)) return;
  const YAML::Node& map = budget.Get(key);
  const ConfigMap checked(map, budget.file(), key, {}, UnknownKeys::kIgnore);  // a map, without duplicates
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node name = it->first, value = it->second;
    if (!value.IsScalar())
      throw InputError(LocOf(value, budget.file()), "a limit must be a number, got " + Describe(value));
    out.push_back({name.Scalar(), is_max, value.Scalar(), LocOf(name, budget.file())});
  }
}

// A model a budget names by a relative path is looked up beside the budget file first, as a file's
// references are (issue 28); a preset, a Hugging Face cache ID or a path that is not there stays as
// written (a path relative to the working directory, as before).
std::string BesideBudget(const std::string& budget, const std::string& model) {
  const std::filesystem::path p(model);
  if (p.is_absolute() || model.empty()) return model;
  const std::filesystem::path beside = std::filesystem::path(budget).parent_path() / p;
  std::error_code ec;
  return std::filesystem::is_regular_file(beside, ec) || std::filesystem::is_directory(beside, ec) ? beside.string()
                                                                                                   : model;
}

Budget ReadBudget(const std::string& path) {
  Budget b;
  YAML::Node root = ParseYaml(path, ReadFileText(path));
  if (root.IsNull()) throw InputError({path, 1, 1}, "the budget is empty");
  ConfigMap m(root, path, "budget", {"description", "model", "models", "settings", "max", "min"});
  if (m.Has("model")) b.models.push_back({BesideBudget(path, m.String("model", "")), m.Loc("model")});
  if (m.Has("models")) {
    const YAML::Node& list = m.Get("models");
    if (!list.IsSequence()) throw InputError(m.Loc("models"), "'models' must be a list of model names or paths");
    for (const YAML::Node& item : list) {
      if (!item.IsScalar())
        throw InputError(LocOf(item, path), "a model must be a name or a path, got " + Describe(item));
      b.models.push_back({BesideBudget(path, item.Scalar()), LocOf(item, path)});
    }
  }
  if (m.Has("settings")) {
    ReadSettingsMap(ConfigMap(m.Get("settings"), path, "settings", SettingNames()), b.flags, b.setting_locs);
  }
  ReadLimits(m, "max", true, b.limits);
  ReadLimits(m, "min", false, b.limits);
  return b;
}

// Command-line flags override the budget file's settings.
WorkloadFlags Merge(WorkloadFlags file, const WorkloadFlags& cli) {
  for (const TextFlag& s : TextFlags()) {
    if (cli.*s.field) file.*s.field = cli.*s.field;
  }
  file.causal = file.causal || cli.causal;
  file.sp = file.sp || cli.sp;
  file.trainable.insert(file.trainable.end(), cli.trainable.begin(), cli.trainable.end());
  return file;
}

// Whether the command line gave `flag` ("--tp"), which then answers for it rather than the file.
bool FlagGiven(const WorkloadFlags& cli, const std::string& flag) {
  if (flag == "--sp") return cli.sp;
  for (const TextFlag& s : TextFlags()) {
    if (FlagOf(s.name) == flag) return (cli.*s.field).has_value();
  }
  return false;
}

void ReadFlagLimits(const std::vector<std::string>& items, bool is_max, std::vector<Limit>& out) {
  const std::string flag = is_max ? "--max" : "--min";
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      std::string message = flag;
      message.append(": expected KEY=VALUE such as memory.train.total=80GiB, got '").append(item).append("'");
      throw InputError(message);
    }
    out.push_back({item.substr(0, eq), is_max, item.substr(eq + 1), std::nullopt});
  }
}

InputError LimitError(const Limit& limit, const std::string& message) {
  if (limit.loc) return InputError(*limit.loc, message);
  return InputError(std::string(limit.is_max ? "--max" : "--min") + ": " + message);
}

// The limit in the key's own unit: bytes take 80GiB or 80GB (a bare number is an error, as for
// --memory); counts and FLOPs take 7B or 1.5e12.
Value ParseLimit(const Limit& limit, Unit unit) {
  try {
    if (unit == Unit::kByte) return ParseBytes(limit.text, limit.key);
    const SiNumber n = ParseSiNumber(limit.text, limit.key);
    // 7B is the whole number 7,000,000,000: keep it an exact integer where it is one (a ratio only
    // when written as digits: 1.0 stays a double).
    const bool digits = limit.text.find_first_not_of("0123456789") == std::string::npos;
    if (n.exact && (unit != Unit::kRatio || digits)) return *n.exact;
    return n.value;
  } catch (const InputError& e) {
    if (unit == Unit::kByte && e.message().find("has no unit") != std::string::npos)
      throw LimitError(limit, e.message());
    const char* forms =
        unit == Unit::kByte ? "a size such as 80GiB, 80GB or 4096B" : "a number such as 7B, 1.5e12, 2T or 0.35";
    throw LimitError(limit, "'" + limit.text + "' is not a limit for " + limit.key + "; expected " + forms);
  }
}

long double AsLong(const Value& v) {
  if (const auto* n = std::get_if<uint64_t>(&v)) return static_cast<long double>(*n);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return 0;
}

}  // namespace

void AddCheckFlags(CLI::App* cmd, CheckFlags& f) {
  cmd->add_option("--max", f.max, "KEY=VALUE: fail when the key exceeds VALUE (repeatable), e.g. params.total=2B")
      ->type_name("KEY=VALUE");
  cmd->add_option("--min", f.min, "KEY=VALUE: fail when the key is below VALUE (repeatable)")->type_name("KEY=VALUE");
  cmd->add_option("--budget", f.budget, "a budget file: models, settings and limits (configs/budgets/)")
      ->type_name("FILE");
}

CheckOutcome RunCheck(const std::string& model, const WorkloadFlags& cli_flags, const CheckFlags& flags,
                      const TimeFlags& time_flags) {
  Budget budget = flags.budget ? ReadBudget(*flags.budget) : Budget{};
  if (!model.empty()) budget.models = {{model, std::nullopt}};
  if (budget.models.empty()) throw InputError("check: name a MODEL, or a budget file with 'models'");
  ReadFlagLimits(flags.max, true, budget.limits);
  ReadFlagLimits(flags.min, false, budget.limits);
  if (budget.limits.empty())
    throw InputError("check: no limits; give --max KEY=VALUE, --min KEY=VALUE or --budget FILE");
  const WorkloadFlags merged = Merge(budget.flags, cli_flags);
  const Settings settings = [&] {
    try {
      return ReadSettings(merged);
    } catch (const InputError& e) {
      // A setting checked against others once all are known (sp and gpus against tp) is blamed at the
      // file's line when the file set it and the command line did not (issue 28).
      const std::string& message = e.message();
      const size_t colon = message.find(": ");
      if (colon == std::string::npos || message.rfind("--", 0) != 0) throw;
      const std::string flag = message.substr(0, colon);
      const auto at = budget.setting_locs.find(flag);
      if (at == budget.setting_locs.end() || FlagGiven(cli_flags, flag)) throw;
      throw InputError(at->second, "'" + flag.substr(2) + "': " + message.substr(colon + 2));
    }
  }();
  // With a device, the time.* keys are there to limit too (CI latency and training-time budgets).
  const bool timed = !settings.hardware.empty();
  const TimeRequest request = ReadTimeRequest(time_flags, merged.gpus.has_value(), settings.gpus);
  for (const Limit& limit : budget.limits) {
    if (!timed && limit.key.rfind("time.", 0) == 0) {
      throw LimitError(limit, "'" + limit.key +
                                  "' needs a device: add --hardware NAME (or 'hardware' in the "
                                  "budget's settings)");
    }
  }

  CheckOutcome out;
  std::vector<std::vector<Cell>> rows;  // check.results, added after the summary as JSON has it
  uint64_t passed = 0, failed = 0;
  for (const auto& [name, loc] : budget.models) {
    ModelSpec spec;
    try {
      spec = ResolveModel(name);
    } catch (const InputError& e) {
      if (loc && e.loc().file.empty()) throw InputError(*loc, e.message());
      throw;
    }
    Evaluation evaluation(spec);
    const Settings resolved = ResolveSettings(settings, spec);
    Report report = EstimateReport(evaluation, resolved, {.memory = true});
    // The estimate's settings.* are there already: inference's echo of its workload would set them twice.
    if (timed) PresentTime(EstimateTime(evaluation, resolved, request), {.settings = false}, report);
    for (const Limit& limit : budget.limits) {
      const ReportNode* node = report.Find(limit.key);
      if (node == nullptr || node->is_group || node->unit == Unit::kText || node->unit == Unit::kBool) {
        std::vector<std::string> numeric;
        for (const std::string& k : report.LeafKeys()) {
          const ReportNode* leaf = report.Find(k);
          if (leaf->unit != Unit::kText && leaf->unit != Unit::kBool) numeric.push_back(k);
        }
        // A key of the other mode's ledger exists, just not in this report (issue 28): say why.
        const bool infer_key = limit.key.rfind("memory.infer.", 0) == 0 || limit.key.rfind("time.ttft", 0) == 0 ||
                               limit.key.rfind("time.tpot", 0) == 0;
        const bool train_key = limit.key.rfind("memory.train.", 0) == 0;
        if (node == nullptr &&
            ((infer_key && resolved.mode == Mode::kTrain) || (train_key && resolved.mode == Mode::kInfer))) {
          throw LimitError(
              limit, "'" + limit.key + "' is " + (infer_key ? "an inference" : "a training") + " key, and --mode " +
                         (infer_key ? "train reports training" : "infer reports inference") +
                         " only; drop --mode, or check " + (infer_key ? "memory.train.*" : "memory.infer.*"));
        }
        // A key tally spells that this run does not report (a regime without a validation band, a
        // figure of --ep or --cp without them): say so, not that the key is unknown.
        if (node == nullptr && KeyReader::Known(limit.key)) {
          throw LimitError(limit, "'" + limit.key +
                                      "' is not in this run's report (it is reported only where it applies; "
                                      "'tally time ... --format json' shows the keys a run has)");
        }
        throw LimitError(limit, "unknown or non-numeric key '" + limit.key + "'" + DidYouMean(limit.key, numeric) +
                                    "; 'tally estimate MODEL --format json' shows every key");
      }
      const Value bound = ParseLimit(limit, node->unit);
      const long double value = AsLong(node->value), limit_value = AsLong(bound);
      const bool pass = limit.is_max ? value <= limit_value : value >= limit_value;
      const long double margin = limit.is_max ? limit_value - value : value - limit_value;
      (pass ? passed : failed) += 1;
      rows.push_back({spec.name, limit.key, std::string(limit.is_max ? "max" : "min"), node->value, bound, pass,
                      static_cast<double>(margin), std::string(UnitName(node->unit))});
    }
  }
  out.pass = failed == 0;
  out.report.Group("check", "Check");
  out.report.Set("check.pass", "all limits pass", out.pass, Unit::kBool);
  out.report.Set("check.passed", "passed", passed, Unit::kNumber);
  out.report.Set("check.failed", "failed", failed, Unit::kNumber);
  // The value, limit and margin are in the key's own unit, which the row names.
  Table& results = out.report.AddTable("check.results", "Results",
                                       {{.key = "model"},
                                        {.key = "key"},
                                        {.key = "op"},
                                        {.key = "value", .unit = Unit::kCount, .unit_column = "unit"},
                                        {.key = "limit", .unit = Unit::kCount, .unit_column = "unit"},
                                        {.key = "pass", .unit = Unit::kBool},
                                        {.key = "margin", .unit = Unit::kCount, .unit_column = "unit"},
                                        {.key = "unit", .shown = false}});
  results.rows = std::move(rows);
  return out;
}

void AddCheckCommandFlags(CLI::App* cmd, CheckCommandFlags& f) {
  cmd->add_option("MODEL", f.model, "a preset or config (optional with a budget file that names models)")
      ->type_name("");
  AddWorkloadFlags(cmd, f.workload);
  AddCheckFlags(cmd, f.check);
  AddTimeFlags(cmd, f.time);
  AddOutputFlags(cmd, f.output);
}

SharedFlags SharedOf(const CheckCommandFlags& f) { return {.output = &f.output}; }

// A budget file may name several models, each with its own settings: check runs the pipeline per
// model itself (Stage::kNone).
std::optional<Report> RunCheckCommand(const CheckCommandFlags& f, Prepared& /*prepared*/, RunContext& context) {
  CheckOutcome outcome = RunCheck(f.model, f.workload, f.check, f.time);
  if (!outcome.pass) context.code = static_cast<int>(ExitCode::kBudgetFailed);
  return std::move(outcome.report);
}

}  // namespace tally
