#include "cli/sweep_command.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "config/load_config.h"
#include "config/resolve.h"
#include "sections/estimate_report.h"
#include "estimate/point_eval.h"
#include "sections/sections.h"
#include "report/format.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"
#include "util/units.h"

namespace tally {
namespace {

constexpr uint64_t kMaxPoints = 10'000'000;

struct Axis {
  const TextFlag* dim;
  std::vector<std::string> values;
};

// A wrong --keys ends the sweep; an invalid point is only a row.
class UnknownKey : public InputError {
 public:
  using InputError::InputError;
};

bool HasLeaf(const Report& report, const std::string& key) {
  const ReportNode* n = report.Find(key);
  return n != nullptr && !n->is_group;
}

// Refuses the first key that neither `reference` nor any report `more` gives has. `more(keys)`
// returns the next grid point's report, or nullopt at the end of the grid; it is only called while
// a key is still unseen.
void CheckKeys(const Report& reference, const std::vector<std::string>& keys,
               const std::function<std::optional<Report>()>& more = {}) {
  std::vector<std::string> unseen;
  for (const std::string& k : keys) {
    if (!HasLeaf(reference, k)) unseen.push_back(k);
  }
  std::set<std::string> known;  // every point's keys, for the suggestion
  for (const std::string& k : reference.LeafKeys()) known.insert(k);
  while (!unseen.empty() && more) {
    const std::optional<Report> next = more();
    if (!next) break;
    std::erase_if(unseen, [&](const std::string& k) { return HasLeaf(*next, k); });
    for (const std::string& k : next->LeafKeys()) known.insert(k);
  }
  if (!unseen.empty()) {
    const std::string& k = unseen.front();
    throw UnknownKey("--keys: unknown key '" + k + "'" + DidYouMean(k, {known.begin(), known.end()}) +
                     "; 'tally estimate MODEL --format json' shows every key");
  }
}

const std::vector<std::string> kDefaultKeys = {"params.total", "flops.step", "memory.train.total",
                                               "memory.infer.total"};

// The whole report at a point: the memory ledgers, and the time.* keys when a key asks for them
// and a device is named (with time's default workload: Chinchilla tokens, MFU 0.4 or the catalog's
// modelled step).
Report FullReport(Evaluation& evaluation, const Settings& s, const std::vector<std::string>& keys) {
  Report report = EstimateReport(evaluation, s, {.memory = true});
  const bool timed =
      std::any_of(keys.begin(), keys.end(), [](const std::string& k) { return k.rfind("time.", 0) == 0; });
  if (timed && !s.hardware.empty()) {
    // time's own report restates the settings it computed (an inference batch, the prompt): only its
    // time.* group joins the estimate's, whose settings.* the sweep prints.
    Report timing;
    AddTime(evaluation, s, TimeRequest{}, timing);
    if (const ReportNode* time = timing.root().Child("time")) report.Group("time") = *time;
    report.notes.insert(report.notes.end(), timing.notes.begin(), timing.notes.end());
  }
  return report;
}

}  // namespace

void AddSweepFlags(CLI::App* cmd, SweepFlags& f) {
  cmd->add_option("--keys", f.keys,
                  "comma list of report keys to print (default params.total, flops.step, "
                  "memory.train.total, memory.infer.total)")
      ->type_name("LIST");
  cmd->add_option("--memory", f.memory, "mark points whose memory per device exceeds this as 'does not fit'")
      ->type_name("SIZE");
}

void RunSweep(const std::string& model, const WorkloadFlags& grid, const SweepFlags& flags, const std::string& format,
              std::ostream& out) {
  const std::vector<std::string> formats = {"csv", "tsv", "jsonl", "json"};
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    throw InputError("--format: sweep writes csv, tsv, jsonl or json, not '" + format + "'" +
                     DidYouMean(format, formats));
  }
  const uint64_t limit = flags.memory ? ParseBytes(*flags.memory, "--memory") : 0;  // 0: no limit
  const std::vector<std::string> keys = flags.keys ? SplitList(*flags.keys, "--keys") : kDefaultKeys;
  ModelSpec spec = ResolveModel(model);

  std::vector<Axis> axes;
  uint64_t points = 1;
  // Every text flag takes a comma list, except --lora-targets, which is one itself.
  for (const TextFlag& d : TextFlags()) {
    if (!(grid.*d.field) || std::string(d.name) == "lora_targets") continue;
    std::string flag = "--" + std::string(d.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    axes.push_back({&d, SplitList(*(grid.*d.field), flag)});
    points = CheckedMul(points, axes.back().values.size(), "the number of sweep points");
  }
  if (points > kMaxPoints) {
    throw InputError("sweep: " + std::to_string(points) + " points is more than " + std::to_string(kMaxPoints) +
                     "; split the grid");
  }

  Table header;  // the row layout: the grid's settings, the status, the keys, as flat JSON names
  for (const Axis& a : axes) header.columns.push_back({.key = std::string("settings.") + a.dim->name});
  header.columns.push_back({.key = "status"});
  for (const std::string& k : keys) header.columns.push_back({.key = k});
  header.flat_keys = true;
  const StreamFormat stream = format == "csv"     ? StreamFormat::kCsv
                              : format == "tsv"   ? StreamFormat::kTsv
                              : format == "jsonl" ? StreamFormat::kJsonl
                                                  : StreamFormat::kJson;
  // Rows are written as they come once the keys are known good; until then (invalid points before
  // the first valid one) they wait, so that an unknown key leaves stdout empty.
  std::unique_ptr<TableWriter> writer;
  std::vector<std::vector<Cell>> waiting;
  auto emit = [&](const std::vector<Cell>& row) {
    if (writer == nullptr) {
      waiting.push_back(row);
      return;
    }
    writer->Row(row);
  };
  auto open = [&] {
    writer = MakeTableWriter(out, stream, "sweep", header);
    for (const std::vector<Cell>& row : waiting) writer->Row(row);
    waiting.clear();
  };

  // Keys are checked once, against the full report at the grid's first point that is valid.
  std::optional<Report> reference;
  // The fast keys come from one evaluator; with --memory it also answers the mode's total (the last
  // two of its keys).
  std::vector<std::string> fast_keys = keys;
  if (limit) fast_keys.insert(fast_keys.end(), {"memory.train.total", "memory.infer.total"});
  PointEvaluator eval(spec, fast_keys);
  std::vector<bool> slow;  // keys only the full report has
  slow.reserve(keys.size());
  for (const std::string& k : keys) slow.push_back(!PointEvaluator::IsFastKey(k));
  Evaluation evaluation(spec);
  std::vector<Cell> row(header.columns.size());
  std::vector<size_t> index(axes.size(), 0);
  // The settings at point `p` (the last axis varies fastest), or nullopt where they are invalid.
  auto settings_at = [&](uint64_t p) -> std::optional<Settings> {
    WorkloadFlags point = grid;
    for (size_t a = axes.size(); a-- > 0;) {
      point.*(axes[a].dim->field) = axes[a].values[p % axes[a].values.size()];
      p /= axes[a].values.size();
    }
    try {
      return ResolveSettings(ReadSettings(point), spec);
    } catch (const InputError&) {
      return std::nullopt;
    }
  };
  for (uint64_t p = 0; p < points; ++p) {
    WorkloadFlags point = grid;
    for (size_t a = 0; a < axes.size(); ++a) {
      point.*(axes[a].dim->field) = axes[a].values[index[a]];
      row[a] = axes[a].values[index[a]];
    }
    std::string status;
    const size_t first_key = axes.size() + 1;
    try {
      const Settings s = ResolveSettings(ReadSettings(point), spec);
      if (!reference) {
        reference = FullReport(evaluation, s, keys);
        // A key is known when any point of the grid has it (--offload none,optimizer and
        // memory.train.host.total); a point without it gets an empty cell, as the default keys
        // spanning both modes do. Later points are read only for a key this one lacks.
        uint64_t next = p + 1;
        auto more = [&]() -> std::optional<Report> {
          for (; next < points; ++next) {
            if (std::optional<Settings> later = settings_at(next)) {
              ++next;
              return FullReport(evaluation, *later, keys);
            }
          }
          return std::nullopt;
        };
        if (flags.keys) CheckKeys(*reference, keys, more);
        open();
      }
      std::vector<std::optional<Value>> values = eval.Evaluate(s);
      for (size_t k = 0; k < keys.size(); ++k) {
        if (values[k] || !slow[k]) continue;
        Report full = FullReport(evaluation, s, keys);
        for (size_t j = k; j < keys.size(); ++j) {
          if (const ReportNode* n = full.Find(keys[j]); n != nullptr && !n->is_group) values[j] = n->value;
        }
        break;
      }
      status = "ok";
      if (limit) {
        const std::optional<Value>& total = values[keys.size() + (s.mode == Mode::kInfer ? 1 : 0)];
        if (std::get<uint64_t>(*total) > limit) status = "does not fit";
      }
      for (size_t k = 0; k < keys.size(); ++k) row[first_key + k] = std::move(values[k]);
    } catch (const UnknownKey&) {
      throw;
    } catch (const InputError& e) {
      status = "invalid: " + e.message();
      for (size_t k = 0; k < keys.size(); ++k) row[first_key + k].reset();
    }
    row[axes.size()] = std::move(status);
    emit(row);
    if (writer != nullptr && (p & 0xFFFF) == 0 && !out) break;  // a failed write: RunMain reports it
    // The last axis varies fastest.
    for (size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].values.size()) break;
      index[a] = 0;
    }
  }
  if (writer == nullptr) {
    // No point was valid: the keys are still checked, against the model at the default settings.
    if (flags.keys) CheckKeys(FullReport(evaluation, ResolveSettings(Settings{}, spec), keys), keys);
    open();
  }
  writer->End();
}

void AddSweepCommandFlags(CLI::App* cmd, SweepCommandFlags& f) {
  cmd->add_option("MODEL", f.model, "a preset or config")->required()->type_name("");
  AddWorkloadFlags(cmd, f.grid);
  AddSweepFlags(cmd, f.sweep);
  cmd->add_option("--format", f.format, "csv (default) | tsv | jsonl | json")->type_name("FORMAT");
}

std::string RunSweepCommand(const SweepCommandFlags& f, RunContext& context) {
  RunSweep(f.model, f.grid, f.sweep, f.format == "table" ? "csv" : f.format, context.out);
  return "";
}

}  // namespace tally
