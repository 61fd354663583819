#include "cli/hardware_command.h"

#include <map>

#include "config/hardware.h"
#include "util/error.h"

namespace tally {

Report HardwareReport() {
  const std::vector<std::string> names = HardwareNames();
  std::vector<HardwareSpec> specs;
  std::map<std::string, GemmDType> dtypes;  // every dtype with a peak somewhere, ordered by name
  for (const std::string& name : names) {
    specs.push_back(ResolveHardware(name));
    for (const auto& peak : specs.back().peak_flops) dtypes.emplace(Name(peak.first), peak.first);
  }
  std::vector<Column> columns = {{.key = "name", .label = "device"},
                                 {.key = "kind"},
                                 {.key = "aliases", .shown = false},
                                 {.key = "description", .shown = false},
                                 {.key = "memory_bytes", .label = "memory", .unit = Unit::kByte},
                                 {.key = "memory_bandwidth", .label = "bandwidth", .unit = Unit::kBytePerSecond},
                                 {.key = "interconnect_bandwidth", .unit = Unit::kBytePerSecond, .shown = false},
                                 {.key = "intra_node_bandwidth", .unit = Unit::kBytePerSecond, .shown = false},
                                 {.key = "inter_node_bandwidth", .unit = Unit::kBytePerSecond, .shown = false},
                                 {.key = "board_power_w", .unit = Unit::kNumber, .shown = false},
                                 {.key = "host_bandwidth", .unit = Unit::kBytePerSecond, .shown = false}};
  for (const auto& [d, dtype] : dtypes) {
    columns.push_back(
        {.key = "peak." + d, .label = d + " peak", .unit = Unit::kFlopPerSecond, .shown = d == "bf16" || d == "fp8"});
  }
  for (const auto& [d, dtype] : dtypes) {
    columns.push_back(
        {.key = "gemm_efficiency." + d, .label = d + " GEMM efficiency", .unit = Unit::kRatio, .shown = false});
  }
  columns.push_back({.key = "source", .label = "file", .shown = false});
  Report r;
  Table& table = r.AddTable("hardware", "Hardware catalog", columns);
  table.keyed = true;
  for (size_t i = 0; i < specs.size(); ++i) {
    const HardwareSpec& h = specs[i];
    std::string aliases;
    for (const std::string& a : h.aliases) aliases += (aliases.empty() ? "" : " ") + a;
    std::vector<Cell> row = {names[i],
                             h.kind,
                             aliases.empty() ? Cell() : Cell(aliases),
                             h.description,
                             h.memory_bytes,
                             h.memory_bandwidth,
                             h.interconnect_bandwidth};
    for (double v : {h.intra_node_bandwidth, h.inter_node_bandwidth, h.board_power_w, h.host_bandwidth}) {
      if (v > 0) {
        row.emplace_back(v);
      } else {
        row.emplace_back();  // not in the file: absent from its JSON object
      }
    }
    // A dtype without a peak (or an efficiency) is absent from the device's JSON object.
    for (const std::map<GemmDType, double>* by_dtype : {&h.peak_flops, &h.gemm_efficiency}) {
      for (const auto& [d, dtype] : dtypes) {
        auto it = by_dtype->find(dtype);
        if (it == by_dtype->end()) {
          row.emplace_back();
        } else {
          row.emplace_back(it->second);
        }
      }
    }
    row.push_back(h.source);
    table.rows.push_back(std::move(row));
  }
  return r;
}

void AddHardwareFlags(CLI::App* cmd, HardwareFlags& f) {
  cmd->add_option("NAME", f.name, "show one device (h100, A100, mi300x, ...)")->type_name("");
  AddOutputFlags(cmd, f.output);
}

std::string RunHardware(const HardwareFlags& f, RunContext& context) {
  ReadFormat(f.output);
  Report report = HardwareReport();
  if (!f.name.empty()) {
    const std::string name = FindHardwareName(f.name);
    if (name.empty()) {
      throw InputError("unknown hardware '" + f.name + "'" + HardwareSuggestion(f.name) +
                       "; run 'tally hardware' for the catalog");
    }
    KeepRow(report, "hardware", name);
  }
  return Render(report, f.output, context.err);
}

}  // namespace tally
