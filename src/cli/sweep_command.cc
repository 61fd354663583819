#include "cli/sweep_command.h"

#include <nlohmann/json.hpp>

#include "config/load_config.h"
#include "estimate/estimate_graph.h"
#include "estimate/point_eval.h"
#include "graph/build_graph.h"
#include "report/format.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/spellcheck.h"
#include "util/units.h"

namespace tally {
namespace {

constexpr uint64_t kMaxPoints = 10'000'000;

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

struct Axis {
  const TextFlag* dim;
  std::vector<std::string> values;
};

// A wrong --keys ends the sweep; an invalid point is only a row.
class UnknownKey : public InputError {
 public:
  using InputError::InputError;
};

void CheckKeys(const Report& reference, const std::vector<std::string>& keys) {
  for (const std::string& k : keys) {
    const ReportNode* n = reference.Find(k);
    if (n == nullptr || n->is_group) {
      throw UnknownKey("--keys: unknown key '" + k + "'" + DidYouMean(k, reference.LeafKeys()) +
                       "; 'tally estimate MODEL --format json' shows every key");
    }
  }
}

const std::vector<std::string> kDefaultKeys = {"params.total", "flops.step", "memory.train.total",
                                               "memory.infer.total"};

// One output row: the grid values, the status, the key values (nullopt = empty cell).
struct Row {
  std::vector<std::string> grid;
  std::string status;
  std::vector<std::optional<Value>> values;
};

std::string Render(const std::vector<Axis>& axes, const std::vector<std::string>& keys, const std::vector<Row>& rows,
                   const std::string& format) {
  std::vector<std::string> header;
  for (const Axis& a : axes) header.push_back(std::string("settings.") + a.dim->name);
  header.push_back("status");
  header.insert(header.end(), keys.begin(), keys.end());
  if (format == "csv" || format == "tsv") {
    Report table;
    table.columns = header;
    for (const Row& r : rows) {
      std::vector<std::string> cells = r.grid;
      cells.push_back(r.status);
      for (const auto& v : r.values) cells.push_back(v ? ValueText(*v) : "");
      table.rows.push_back(cells);
    }
    if (table.rows.empty()) return "";
    return FormatDelimited(table, format == "csv" ? ',' : '\t');
  }
  using Json = nlohmann::ordered_json;
  std::string out;
  Json array = Json::array();
  for (const Row& r : rows) {
    Json o = Json::object();
    size_t i = 0;
    for (; i < r.grid.size(); ++i) o[header[i]] = r.grid[i];
    o["status"] = r.status;
    for (size_t k = 0; k < keys.size(); ++k) {
      const auto& v = r.values[k];
      if (!v) o[keys[k]] = nullptr;
      else if (const auto* n = std::get_if<uint64_t>(&*v)) o[keys[k]] = *n;
      else if (const auto* d = std::get_if<double>(&*v)) o[keys[k]] = *d;
      else if (const auto* b = std::get_if<bool>(&*v)) o[keys[k]] = *b;
      else o[keys[k]] = std::get<std::string>(*v);
    }
    // Invalid UTF-8 in a name or path prints as U+FFFD rather than failing the dump.
    if (format == "jsonl") out += o.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    else array.push_back(std::move(o));
  }
  if (format == "json") {
    return Json{{"schema", "tally/1"}, {"sweep", array}}.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  return out;
}

}  // namespace

void AddSweepFlags(CLI::App* cmd, SweepFlags& f) {
  cmd->add_option("--keys", f.keys, "comma list of report keys to print (default params.total, flops.step, "
                                    "memory.train.total, memory.infer.total)")
      ->type_name("LIST");
  cmd->add_option("--memory", f.memory, "mark points whose memory per device exceeds this as 'does not fit'")
      ->type_name("SIZE");
}

std::string RunSweep(const std::string& model, const WorkloadFlags& grid, const SweepFlags& flags,
                     const std::string& format) {
  const std::vector<std::string> formats = {"csv", "tsv", "jsonl", "json"};
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    throw InputError("--format: sweep writes csv, tsv, jsonl or json, not '" + format + "'" +
                     DidYouMean(format, formats));
  }
  const uint64_t limit = flags.memory ? ParseBytes(*flags.memory, "memory") : 0;  // 0: no limit
  const std::vector<std::string> keys = flags.keys ? Split(*flags.keys) : kDefaultKeys;
  ModelSpec spec = ResolveModel(model);

  std::vector<Axis> axes;
  uint64_t points = 1;
  // Every text flag takes a comma list, except --lora-targets, which is one itself.
  for (const TextFlag& d : TextFlags()) {
    if (!(grid.*d.field) || std::string(d.name) == "lora_targets") continue;
    axes.push_back({&d, Split(*(grid.*d.field))});
    points = CheckedMul(points, axes.back().values.size(), "the number of sweep points");
  }
  if (points > kMaxPoints) {
    throw InputError("sweep: " + std::to_string(points) + " points is more than " + std::to_string(kMaxPoints) +
                     "; split the grid");
  }

  // Keys are checked once, against the full report at the grid's first point that is valid.
  std::optional<Report> reference;
  PointEvaluator eval(spec);
  std::vector<Row> rows;
  rows.reserve(points);
  std::vector<size_t> index(axes.size(), 0);
  for (uint64_t p = 0; p < points; ++p) {
    WorkloadFlags point = grid;
    Row row;
    for (size_t a = 0; a < axes.size(); ++a) {
      point.*(axes[a].dim->field) = axes[a].values[index[a]];
      row.grid.push_back(axes[a].values[index[a]]);
    }
    try {
      const Settings s = ReadSettings(point);
      if (!reference) {
        reference = EstimateGraph(spec, s, BuildGraph(spec, s), {.memory = true});
        // The default keys span both modes: one a point's mode lacks is an empty cell.
        if (flags.keys) CheckKeys(*reference, keys);
      }
      row.values = eval.Evaluate(keys, s);
      for (size_t k = 0; k < keys.size(); ++k) {
        if (row.values[k] || PointEvaluator::IsFastKey(keys[k])) continue;
        Report full = EstimateGraph(spec, s, BuildGraph(spec, s), {.memory = true});
        for (size_t j = k; j < keys.size(); ++j) {
          if (const ReportNode* n = full.Find(keys[j]); n != nullptr && !n->is_group) row.values[j] = n->value;
        }
        break;
      }
      row.status = "ok";
      if (limit) {
        const std::string total = s.mode == Mode::kInfer ? "memory.infer.total" : "memory.train.total";
        if (std::get<uint64_t>(*eval.Evaluate({total}, s)[0]) > limit) row.status = "does not fit";
      }
    } catch (const UnknownKey&) {
      throw;
    } catch (const InputError& e) {
      row.status = "invalid: " + e.message();
      row.values.assign(keys.size(), std::nullopt);
    }
    rows.push_back(std::move(row));
    // The last axis varies fastest.
    for (size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].values.size()) break;
      index[a] = 0;
    }
  }
  // No point was valid: the keys are still checked, against the model at the default settings.
  if (!reference && flags.keys) {
    const Settings s = ReadSettings(WorkloadFlags{});
    CheckKeys(EstimateGraph(spec, s, BuildGraph(spec, s), {.memory = true}), keys);
  }
  return Render(axes, keys, rows, format);
}

}  // namespace tally
