#include "cli/command.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/evaluation.h"
#include "util/error.h"
#include "util/text.h"

namespace tally {

void AddOutputFlags(CLI::App* cmd, OutputFlags& o) {
  cmd->add_option("--format", o.format, "table | json | csv | tsv (default table)")->type_name("FORMAT");
  cmd->add_option("--get", o.get, "print only the value at this dotted JSON key, e.g. params.total")->type_name("KEY");
  cmd->add_option("--units", o.units, "byte units in tables: iec (GiB) | si (GB); JSON is always bytes")
      ->type_name("iec|si");
  cmd->add_flag("--explain", o.explain, "show each figure's formula and source under it (table)");
}

FormatOptions ReadFormat(const OutputFlags& o) {
  return {ParseOutputFormat(o.format), ParseUnitSystem(o.units), o.explain};
}

// Renders first, prints after: a late error never leaves half a document on stdout.
std::string Render(const Report& report, const OutputFlags& o, std::ostream& err) {
  std::string text = o.get ? GetKey(report, *o.get) : FormatReport(report, ReadFormat(o));
  // A note may quote a model's name: its control characters are escaped, as in the table.
  for (const std::string& note : report.notes) err << "tally: warning: " << EscapeControl(note) << "\n";
  return text;
}

std::vector<std::string> WorkloadFlagsRead(std::initializer_list<std::string_view> unread) {
  CLI::App probe;
  WorkloadFlags flags;
  AddWorkloadFlags(&probe, flags);
  std::vector<std::string> read;
  for (const CLI::Option* o : probe.get_options()) {
    if (o->get_lnames().empty()) continue;
    const std::string flag = "--" + o->get_lnames().front();
    if (std::find(unread.begin(), unread.end(), flag) == unread.end()) read.push_back(flag);
  }
  return read;
}

void AddModelFlags(CLI::App* cmd, ModelFlags& f, bool workload) {
  cmd->add_option("MODEL", f.model,
                  "a preset name ('tally models') or a path to a tally YAML/JSON config or "
                  "a Hugging Face config.json")
      ->required()
      ->type_name("");
  if (workload) AddWorkloadFlags(cmd, f.workload);
  cmd->add_flag("--layers", f.layers, "add the per-node breakdown (table, JSON 'layers', or one CSV row per node)");
  AddOutputFlags(cmd, f.output);
}

SharedFlags SharedOf(const ModelFlags& f, bool workload) {
  return {.output = &f.output, .model = &f.model, .workload = workload ? &f.workload : nullptr};
}

SharedFlags SharedOf(const ParamsFlags& f) { return SharedOf(f, false); }

Report ModelReport(Prepared& prepared, ReportRequest request, bool layers) {
  request.layers = layers;
  return EstimateReport(*prepared.evaluation, prepared.settings, request);
}

Prepared Prepare(Stage stage, const SharedFlags& shared) {
  if (shared.output != nullptr) ReadFormat(*shared.output);  // flag errors before the model is read
  Prepared prepared;
  const bool model = stage != Stage::kNone && shared.model != nullptr && !shared.model->empty();
  if (!model) return prepared;
  if (stage == Stage::kSettings && shared.workload != nullptr) prepared.settings = ReadSettings(*shared.workload);
  prepared.evaluation.emplace(ResolveModel(*shared.model));
  if (stage == Stage::kSettings) {
    prepared.settings = ResolveSettings(prepared.settings, prepared.spec());
    // Without workload flags the defaults are no news ("--seq: defaulting to ...").
    if (shared.workload == nullptr) prepared.settings.notes.clear();
  }
  return prepared;
}

void KeepRow(const Report& report, const std::string& path, const std::string& name) {
  Table& table = *report.Find(path)->table;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> explain;
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const std::vector<Cell>& row = table.rows[i];
    if (row.empty() || !row[0] || *row[0] != Value(name)) continue;
    rows.push_back(row);
    if (i < table.explain.size()) explain.push_back(table.explain[i]);
  }
  table.rows = std::move(rows);
  table.explain = std::move(explain);
}

void KeepNamedRow(const Report& report, const NamedRow& what, const std::string& name, const std::string& found,
                  const std::function<std::string()>& suggest) {
  if (name.empty()) return;
  if (found.empty()) {
    throw InputError("unknown " + what.noun + " '" + name + "'" + suggest() + "; run 'tally " + what.command +
                     "' for the " + what.list);
  }
  KeepRow(report, what.command, found);
}

}  // namespace tally
