#include "cli/sweep_command.h"

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

struct Axis {
  const TextFlag* dim;
  std::vector<std::string> values;
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
    axes.push_back({&d, SplitList(*(grid.*d.field), flag)});
    points = CheckedMul(points, axes.back().values.size(), "the number of sweep points");
  }
  return axes;
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
  const std::vector<std::string> formats = {"csv", "tsv", "jsonl", "json"};
  if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
    throw InputError("--format: sweep writes csv, tsv, jsonl or json, not '" + format + "'" +
                     DidYouMean(format, formats));
  }
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
  const StreamFormat stream = format == "csv"     ? StreamFormat::kCsv
                              : format == "tsv"   ? StreamFormat::kTsv
                              : format == "jsonl" ? StreamFormat::kJsonl
                                                  : StreamFormat::kJson;
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
  const size_t first_axis = several ? 1 : 0;
  const size_t first_key = first_axis + axes.size() + 1;
  std::vector<Cell> row(header.columns.size());
  WorkloadFlags point = grid;  // only the axes change from point to point
  // Each device the grid names is read once, not at every point.
  std::map<std::string, std::shared_ptr<const HardwareSpec>> devices;
  const DeviceReader read_device = [&devices](const std::string& name) {
    auto it = devices.find(name);
    if (it == devices.end()) it = devices.emplace(name, ReadDevice(name)).first;
    return it->second;
  };
  for (size_t m = 0; m < models.size(); ++m) {
    const ModelSpec& spec = evaluations[m]->spec();
    if (several) row[0] = models[m];
    std::vector<size_t> index(axes.size(), 0);
    for (size_t a = 0; a < axes.size(); ++a) point.*(axes[a].dim->field) = axes[a].values[0];
    for (uint64_t p = 0; p < points; ++p) {
      for (size_t a = 0; a < axes.size(); ++a) row[first_axis + a] = axes[a].values[index[a]];
      std::string status = "ok";
      try {
        std::vector<Cell> values = readers[m].Read(ResolveSettings(ReadSettings(point, read_device), spec));
        if (limit) {
          const Cell& total = values[keys.size() + (values[keys.size()] ? 0 : 1)];
          if (total && std::get<uint64_t>(*total) > limit) status = "does not fit";
        }
        for (size_t k = 0; k < keys.size(); ++k) row[first_key + k] = std::move(values[k]);
      } catch (const InputError& e) {
        status = "invalid: " + e.message();
        for (size_t k = 0; k < keys.size(); ++k) row[first_key + k].reset();
      }
      row[first_key - 1] = std::move(status);
      writer->Row(row);
      if ((p & 0xFFFF) == 0 && !out) break;  // a failed write: RunMain reports it
      // The last axis varies fastest; only the axes that moved are set again.
      for (size_t a = axes.size(); a-- > 0;) {
        const bool wrapped = ++index[a] == axes[a].values.size();
        if (wrapped) index[a] = 0;
        point.*(axes[a].dim->field) = axes[a].values[index[a]];
        if (!wrapped) break;
      }
    }
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
