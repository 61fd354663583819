#include "cli/hardware_command.h"

#include <CLI/CLI.hpp>
#include <map>

#include "config/hardware.h"
#include "util/units.h"

namespace tally {
namespace {

// The report's key for a field the file spells `key`: peak_flops.bf16 is the column peak.bf16,
// achieved_flops.bf16 is achieved.bf16; the others are the same.
std::string ReportKey(const std::string& key) {
  for (auto [file, report] :
       {std::pair<std::string, std::string>{"peak_flops.", "peak."}, {"achieved_flops.", "achieved."}}) {
    if (key.rfind(file, 0) == 0) return report + key.substr(file.size());
  }
  return key;
}

// The field's value as --explain shows it, or "" when the file does not give it.
std::string FieldValue(const HardwareSpec& h, const std::string& key) {
  auto rate = [](double bytes_per_s) { return FormatFixed(bytes_per_s / 1e9) + " GB/s"; };
  if (key == "memory_bytes") return FormatBytes(h.memory_bytes, UnitSystem::kIec);
  if (key == "memory_bandwidth") return rate(h.memory_bandwidth);
  const std::pair<const char*, double> links[] = {{"interconnect_bandwidth", h.interconnect_bandwidth},
                                                  {"intra_node_bandwidth", h.intra_node_bandwidth},
                                                  {"inter_node_bandwidth", h.inter_node_bandwidth},
                                                  {"host_bandwidth", h.host_bandwidth}};
  for (auto [name, v] : links) {
    // interconnect_bandwidth 0 is a value (no scale-up link); the others are 0 when not given.
    if (key == name) return v > 0 || key == "interconnect_bandwidth" ? rate(v) : "";
  }
  if (key == "board_power_w") return h.board_power_w > 0 ? FormatDouble(h.board_power_w) + " W" : "";
  if (key == "attention_efficiency") return h.attention_efficiency > 0 ? FormatDouble(h.attention_efficiency) : "";
  const std::pair<const char*, double> ratios[] = {{"decode_bandwidth_efficiency", h.decode_bandwidth_efficiency},
                                                   {"intra_node_collective_share", h.intra_node_collective_share}};
  for (auto [name, v] : ratios) {
    if (key == name) return v > 0 ? FormatDouble(v) : "";
  }
  if (key == "nvls") return NvlsName(h.nvls);
  if (key == "gpus_per_node") return h.gpus_per_node > 0 ? std::to_string(h.gpus_per_node) : "";
  const size_t dot = key.find('.');
  const std::string group = key.substr(0, dot);
  const std::optional<GemmDType> dtype = FindName<GemmDType>(key.substr(dot + 1));
  const std::map<GemmDType, double>& by_dtype = group == "peak_flops"        ? h.peak_flops
                                                : group == "gemm_efficiency" ? h.gemm_efficiency
                                                                             : h.achieved_flops;
  const auto it = dtype ? by_dtype.find(*dtype) : by_dtype.end();
  if (it == by_dtype.end()) return "";
  return group == "gemm_efficiency" ? FormatDouble(it->second) : FormatRate(it->second);
}

// --explain under a device's row: every field with its value and source, then the documents.
std::string ExplainHardware(const HardwareSpec& h) {
  std::string text;
  for (const std::string& key : HardwareFieldKeys()) {
    const std::string value = FieldValue(h, key);
    const auto source = h.field_sources.find(key);
    const bool scalar = key.find('.') == std::string::npos;
    if (value.empty() && source == h.field_sources.end() && !scalar) continue;  // a dtype nobody mentions
    text += (text.empty() ? "" : "\n") + key + " " + (value.empty() ? "not given" : value);
    if (source != h.field_sources.end()) text += ": " + source->second;
  }
  for (const std::string& document : h.sources) text += "\ndocument: " + document;
  return text;
}

}  // namespace

Report HardwareReport() {
  const std::vector<std::string> names = HardwareNames();
  std::vector<HardwareSpec> specs;
  std::map<std::string, GemmDType> dtypes;  // every dtype with a peak somewhere, ordered by name
  for (const std::string& name : names) {
    specs.push_back(ResolveHardware(name));
    for (const auto& peak : specs.back().peak_flops) dtypes.emplace(Name(peak.first), peak.first);
  }
  std::map<std::string, GemmDType> measured;  // every dtype with an achieved rate somewhere
  std::vector<std::string> sourced;           // every field with a source somewhere, in field order
  for (const std::string& key : HardwareFieldKeys()) {
    for (const HardwareSpec& h : specs) {
      if (h.field_sources.contains(key)) {
        sourced.push_back(key);
        break;
      }
    }
  }
  for (const HardwareSpec& h : specs) {
    for (const auto& rate : h.achieved_flops) measured.emplace(Name(rate.first), rate.first);
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
                                 {.key = "host_bandwidth", .unit = Unit::kBytePerSecond, .shown = false},
                                 {.key = "attention_efficiency", .unit = Unit::kRatio, .shown = false},
                                 {.key = "decode_bandwidth_efficiency", .unit = Unit::kRatio, .shown = false},
                                 {.key = "intra_node_collective_share", .unit = Unit::kRatio, .shown = false},
                                 {.key = "nvls", .shown = false},
                                 {.key = "gpus_per_node", .unit = Unit::kNumber, .shown = false}};
  for (const auto& [d, dtype] : dtypes) {
    columns.push_back(
        {.key = "peak." + d, .label = d + " peak", .unit = Unit::kFlopPerSecond, .shown = d == "bf16" || d == "fp8"});
  }
  for (const auto& [d, dtype] : dtypes) {
    columns.push_back(
        {.key = "gemm_efficiency." + d, .label = d + " GEMM efficiency", .unit = Unit::kRatio, .shown = false});
  }
  for (const auto& [d, dtype] : measured) {
    columns.push_back({.key = "achieved." + d, .label = d + " achieved", .unit = Unit::kFlopPerSecond, .shown = false});
  }
  columns.push_back({.key = "source", .label = "file", .shown = false});
  for (const std::string& key : sourced) columns.push_back({.key = "sources." + ReportKey(key), .shown = false});
  columns.push_back({.key = "documents", .shown = false});
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
    for (double v : {h.intra_node_bandwidth, h.inter_node_bandwidth, h.board_power_w, h.host_bandwidth,
                     h.attention_efficiency, h.decode_bandwidth_efficiency, h.intra_node_collective_share}) {
      if (v > 0) {
        row.emplace_back(v);
      } else {
        row.emplace_back();  // not in the file: absent from its JSON object
      }
    }
    row.push_back(h.nvls == NvlsArch::kNone ? Cell() : Cell(std::string(NvlsName(h.nvls))));
    row.push_back(h.gpus_per_node > 0 ? Cell(h.gpus_per_node) : Cell());
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
    for (const auto& [d, dtype] : measured) {
      auto it = h.achieved_flops.find(dtype);
      if (it == h.achieved_flops.end()) {
        row.emplace_back();
      } else {
        row.emplace_back(it->second);
      }
    }
    row.push_back(h.source);
    for (const std::string& key : sourced) {
      auto it = h.field_sources.find(key);
      if (it == h.field_sources.end()) {
        row.emplace_back();
      } else {
        row.emplace_back(it->second);
      }
    }
    std::string documents;  // one line for CSV, joined by " || " (the texts hold " | ")
    for (const std::string& d : h.sources) documents += (documents.empty() ? "" : " || ") + d;
    row.emplace_back(documents.empty() ? Cell() : Cell(documents));
    table.rows.push_back(std::move(row));
    table.explain.push_back(ExplainHardware(h));
  }
  return r;
}

void AddHardwareFlags(CLI::App* cmd, HardwareFlags& f) {
  cmd->add_option("NAME", f.name, "show one device (h100, A100, mi300x, ...)")->type_name("");
  AddOutputFlags(cmd, f.output);
}

SharedFlags SharedOf(const HardwareFlags& f) { return {.output = &f.output}; }

std::optional<Report> RunHardware(const HardwareFlags& f, Prepared& /*prepared*/, RunContext& /*context*/) {
  Report report = HardwareReport();
  KeepNamedRow(report, {.command = "hardware", .noun = "hardware", .list = "catalog"}, f.name, FindHardwareName(f.name),
               [&] { return HardwareSuggestion(f.name); });
  return report;
}

}  // namespace tally
