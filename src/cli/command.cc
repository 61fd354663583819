#include "cli/command.h"

#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/evaluation.h"
#include "util/text.h"

namespace tally {

void AddOutputFlags(CLI::App* cmd, OutputFlags& o) {
  cmd->add_option("--format", o.format, "table | json | csv | tsv (default table)")->type_name("FORMAT");
  cmd->add_option("--get", o.get, "print only the value at this dotted JSON key, e.g. params.total")
      ->type_name("KEY");
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

void AddModelFlags(CLI::App* cmd, ModelFlags& f, bool workload) {
  cmd->add_option("MODEL", f.model, "a preset name ('tally models') or a path to a tally YAML/JSON config or "
                                    "a Hugging Face config.json")
      ->required()
      ->type_name("");
  if (workload) AddWorkloadFlags(cmd, f.workload);
  cmd->add_flag("--layers", f.layers, "add the per-node breakdown (table, JSON 'layers', or one CSV row per node)");
  AddOutputFlags(cmd, f.output);
}

std::string RunModelReport(const ModelFlags& f, ReportRequest request, bool workload, std::ostream& err) {
  ReadFormat(f.output);  // flag errors before the model is read
  Settings settings = workload ? ReadSettings(f.workload) : Settings{};
  Evaluation evaluation(ResolveModel(f.model));
  request.layers = f.layers;
  return Render(EstimateReport(evaluation, ResolveSettings(settings, evaluation.spec()), request), f.output, err);
}

}  // namespace tally
