#include "cli/sweep_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <optional>

#include "config/load_config.h"
#include "config/resolve.h"
#include "report/format.h"
#include "sections/key_reader.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/spellcheck.h"
#include "util/units.h"

namespace tally {
namespace {

constexpr uint64_t kMaxPoints = 10'000'000;
// The most revisited graphs a sweep keeps the summaries of, per model (about 17 KB each for
// Llama-2-7B: 280 MB, twice that with time's keys): a grid that comes back to more distinct graphs
// than this builds each past the first 1,024 again at every visit.
constexpr uint64_t kMaxKeptGraphs = 16384;
// Graphs a point may ask for beside its own: time's kernels count causal attention on a second one.
constexpr uint64_t kGraphsPerPoint = 2;

struct Axis {
  const TextFlag* dim;
  std::vector<std::string> values;
  std::vector<Cell> cells;  // the values as row cells, made once
};

const std::vector<std::string> kDefaultKeys = {"params.total", "flops.step", "memory.train.total",
                                               "memory.infer.total"};

// The grid's axes: every text flag given as a comma list, except --lora-targets, which is one itself.
std::vector<Axis> AxesOf(const WorkloadFlags& grid, uint64_t& points) {
  std::vector<Axis> axes;
  points = 1;
  for (const TextFlag& d : TextFlags()) {
    if (!(grid.*d.field) || std::string(d.name) == "lora_targets") continue;
    std::string flag = "--" + std::string(d.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    Axis axis{&d, SplitList(*(grid.*d.field), flag), {}};
    axis.cells.assign(axis.values.begin(), axis.values.end());
    points = CheckedMul(points, axis.values.size(), "the number of sweep points");
    axes.push_back(std::move(axis));
  }
  return axes;
}

// The distinct graphs a sweep comes back to. The last axis varies fastest, so a graph axis ahead of
// every other axis changes only between runs of points that share its value, and is never revisited;
// past the first other axis, the graph axes' values come round again at each of its steps. Keeping
// that many graphs, least recently used first out, builds each graph of the grid once.
uint64_t RevisitedGraphs(const std::vector<Axis>& axes) {
  uint64_t graphs = 1;
  bool revisited = false;
  for (const Axis& a : axes) {
    if (!a.dim->graph) {
      revisited = true;
    } else if (revisited) {
      graphs = std::min(graphs * a.values.size(), kMaxKeptGraphs + 1);  // points are at most 10^7: no overflow
    }
  }
  return graphs;
}

// A time.* key needs a device to time on; say so rather than print empty cells.
void CheckTimeKeys(const WorkloadFlags& grid, const std::vector<std::string>& keys) {
  if (grid.hardware) return;
  for (const std::string& k : keys) {
    if (k.rfind("time.", 0) == 0) {
      throw InputError("--keys: " + k + " needs a device: add --hardware NAME ('tally hardware' lists them)");
    }
  }
}

StreamFormat StreamFormatOf(const std::string& format) {
  const std::vector<std::string> formats = {"csv", "tsv", "jsonl", "json"};
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    throw InputError("--format: sweep writes csv, tsv, jsonl or json, not '" + format + "'" +
                     DidYouMean(format, formats));
  }
  return format == "csv"     ? StreamFormat::kCsv
         : format == "tsv"   ? StreamFormat::kTsv
         : format == "jsonl" ? StreamFormat::kJsonl
                             : StreamFormat::kJson;
}

// One model's rows. `point` holds the grid's flags; its axes are set here as they move.
class ModelSweep {
 public:
  ModelSweep(const std::vector<Axis>& axes, size_t first_axis, size_t n_keys, uint64_t limit)
      : axes_(axes),
        first_axis_(first_axis),
        first_key_(first_axis + axes.size() + 1),
        n_keys_(n_keys),
        limit_(limit) {}

  void Run(WorkloadFlags& point, const DeviceReader& read_device, KeyReader& reader, const ModelSpec& spec,
           uint64_t points, std::vector<Cell>& row, TableWriter& writer, std::ostream& out) {
    std::vector<size_t> index(axes_.size(), 0);
    for (size_t a = 0; a < axes_.size(); ++a) Set(point, row, a, 0);
    for (uint64_t p = 0; p < points; ++p) {
      try {
        reader.Read(ResolveSettings(ReadSettings(point, read_device), spec), values_);
        row[first_key_ - 1] = Fits() ? kOk : kDoesNotFit;
        for (size_t k = 0; k < n_keys_; ++k) row[first_key_ + k] = std::move(values_[k]);
      } catch (const InputError& e) {
        row[first_key_ - 1] = "invalid: " + e.message();
        for (size_t k = 0; k < n_keys_; ++k) row[first_key_ + k].reset();
      }
      writer.Row(row);
      if ((p & 0xFFFF) == 0 && !out) break;  // a failed write: RunMain reports it
      // The last axis varies fastest; only the axes that moved are set again.
      for (size_t a = axes_.size(); a-- > 0;) {
        const bool wrapped = ++index[a] == axes_[a].values.size();
        if (wrapped) index[a] = 0;
        Set(point, row, a, index[a]);
        if (!wrapped) break;
      }
    }
  }

 private:
  void Set(WorkloadFlags& point, std::vector<Cell>& row, size_t a, size_t i) const {
    point.*(axes_[a].dim->field) = axes_[a].values[i];
    row[first_axis_ + a] = axes_[a].cells[i];
  }
  // --memory: the training total, else (inference only) the inference total, the two values the
  // reader answers after the keys.
  bool Fits() const {
    if (limit_ == 0) return true;
    const Cell& total = values_[n_keys_ + (values_[n_keys_] ? 0 : 1)];
    return !total || std::get<uint64_t>(*total) <= limit_;
  }

  inline static const Cell kOk = std::string("ok");
  inline static const Cell kDoesNotFit = std::string("does not fit");
  const std::vector<Axis>& axes_;
  size_t first_axis_, first_key_, n_keys_;
  uint64_t limit_;
  std::vector<Cell> values_;
};

}  // namespace

void AddSweepFlags(CLI::App* cmd, SweepFlags& f) {
  cmd->add_option("--keys", f.keys,
                  "comma list of report keys to print (default params.total, flops.step, "
                  "memory.train.total, memory.infer.total)")
      ->type_name("LIST");
  cmd->add_option("--memory", f.memory, "mark points whose memory per device exceeds this as 'does not fit'")
      ->type_name("SIZE");
  AddTimeFlags(cmd, f.time);
}

void RunSweep(const std::vector<std::string>& models, const WorkloadFlags& grid, const SweepFlags& flags,
              const std::string& format, std::ostream& out) {
  const StreamFormat stream = StreamFormatOf(format);
  const uint64_t limit = flags.memory ? ParseBytes(*flags.memory, "--memory") : 0;  // 0: no limit
  const std::vector<std::string> keys = flags.keys ? SplitList(*flags.keys, "--keys") : kDefaultKeys;
  CheckTimeKeys(grid, keys);
  // Time's flags hold for every point; each point's devices are its settings' (as time reads them
  // without --gpus: the workload's).
  const TimeRequest time = ReadTimeRequest(flags.time, false, 1);
  uint64_t points = 1;
  const std::vector<Axis> axes = AxesOf(grid, points);
  if (CheckedMul(points, models.size(), "the number of sweep points") > kMaxPoints) {
    throw InputError("sweep: " + std::to_string(points * models.size()) + " points is more than " +
                     std::to_string(kMaxPoints) + "; split the grid");
  }

  Table header;  // the row layout: the model, the grid's settings, the status, the keys, as flat JSON names
  const bool several = models.size() > 1;
  if (several) header.columns.push_back({.key = "model"});
  for (const Axis& a : axes) header.columns.push_back({.key = std::string("settings.") + a.dim->name});
  header.columns.push_back({.key = "status"});
  for (const std::string& k : keys) header.columns.push_back({.key = k});
  header.flat_keys = true;
  // --memory also reads the mode's total: the last two columns the reader answers.
  std::vector<std::string> read = keys;
  if (limit) read.insert(read.end(), {"memory.train.total", "memory.infer.total"});
  std::vector<std::unique_ptr<Evaluation>> evaluations;
  std::vector<KeyReader> readers;
  for (const std::string& model : models) {
    evaluations.push_back(std::make_unique<Evaluation>(ResolveModel(model)));
    readers.emplace_back(*evaluations.back(), read, time);  // an unknown key fails here, before any row
  }
  std::unique_ptr<TableWriter> writer = MakeTableWriter(out, stream, "sweep", header);
  std::vector<Cell> row(header.columns.size());
  WorkloadFlags point = grid;  // the grid's flags, read at every point; only the axes change
  // Each device the grid names is read once, not at every point.
  std::map<std::string, std::shared_ptr<const HardwareSpec>> devices;
  const DeviceReader read_device = [&devices](const std::string& name) {
    auto it = devices.find(name);
    if (it == devices.end()) it = devices.emplace(name, ReadDevice(name)).first;
    return it->second;
  };
  const uint64_t graphs = RevisitedGraphs(axes);
  ModelSweep sweep(axes, several ? 1 : 0, keys.size(), limit);
  for (size_t m = 0; m < models.size(); ++m) {
    if (graphs <= kMaxKeptGraphs) {
      evaluations[m]->CacheSummaries(std::max<uint64_t>(graphs * kGraphsPerPoint, Evaluation::kDefaultSummaries));
    }
    if (several) row[0] = models[m];
    sweep.Run(point, read_device, readers[m], evaluations[m]->spec(), points, row, *writer, out);
    evaluations[m].reset();  // its graphs are done with: memory holds one model's at a time
  }
  writer->End();
}

void AddSweepCommandFlags(CLI::App* cmd, SweepCommandFlags& f) {
  cmd->add_option("MODEL", f.models, "presets or configs; with several, a model column comes first")
      ->required()
      ->type_name("");
  AddWorkloadFlags(cmd, f.grid);
  AddSweepFlags(cmd, f.sweep);
  cmd->add_option("--format", f.format, "csv (default) | tsv | jsonl | json")->type_name("FORMAT");
}

SharedFlags SharedOf(const SweepCommandFlags& /*flags*/) { return {}; }

// Several models, each point's settings resolved in turn, rows streamed: sweep runs its own pipeline.
std::optional<Report> RunSweepCommand(const SweepCommandFlags& f, Prepared& /*prepared*/, RunContext& context) {
  RunSweep(f.models, f.grid, f.sweep, f.format == "table" ? "csv" : f.format, context.out);
  return std::nullopt;
}

}  // namespace tally
