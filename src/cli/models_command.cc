#include "cli/models_command.h"

#include <CLI/CLI.hpp>

#include "config/hf_config.h"
#include "config/load_config.h"
#include "config/model_lookup.h"
#include "config/presets.h"
#include "config/resolve.h"
#include "estimate/evaluation.h"
#include "estimate/params.h"
#include "util/error.h"
#include "util/spellcheck.h"
#include "util/text.h"

namespace tally {

Report ListModels() {
  Report r;
  Table& models = r.AddTable("models", "Presets",
                             {{.key = "name"},
                              {.key = "family"},
                              {.key = "params", .unit = Unit::kCount},
                              {.key = "source", .label = "config", .shown = false},
                              {.key = "description"}});
  models.keyed = true;
  for (const EmbeddedPreset& p : EmbeddedPresets()) {
    ModelSpec spec = LoadModelText(p.path, p.text);
    models.rows.push_back({std::string(p.name), std::string(FamilyName(spec.family)),
                           Evaluation(spec).Summary(ResolveSettings({}, spec))->params.total, std::string(p.path),
                           spec.description});
  }
  std::string families;
  for (const std::string& f : HfFamilies()) families += (families.empty() ? "" : ", ") + f;
  r.Set("hf_model_types", "Hugging Face config.json model_type values read", families, Unit::kText);
  return r;
}

void AddModelsFlags(CLI::App* cmd, ModelsFlags& f) {
  cmd->add_option("NAME", f.name,
                  "show one preset (gpt2, llama-3-8b, ...), or the presets whose names hold NAME (llama)")
      ->type_name("");
  AddOutputFlags(cmd, f.output);
}

SharedFlags SharedOf(const ModelsFlags& f) { return {.output = &f.output}; }

std::optional<Report> RunModels(const ModelsFlags& f, Prepared& /*prepared*/, RunContext& /*context*/) {
  Report report = ListModels();
  if (f.name.empty()) return report;
  // A preset's name (or alias) shows that preset; a chat or instruction tune's, its base with a note.
  std::string note;
  const EmbeddedPreset* preset = FindPresetOrAlias(f.name);
  if (preset == nullptr) preset = FindTunedPreset(f.name, note);
  if (preset != nullptr) {
    KeepRow(report, "models", preset->name);
    if (!note.empty()) report.notes.push_back(note);
    return report;
  }
  // Anything else filters the list: the presets whose names hold NAME, ignoring case.
  const std::string part = Lower(f.name);
  Table& table = *report.Find("models")->table;
  std::vector<std::vector<Cell>> rows;
  for (std::vector<Cell>& row : table.rows) {
    if (Lower(std::get<std::string>(*row[0])).find(part) != std::string::npos) rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    throw InputError("no preset is named '" + f.name + "' or has it in its name" + DidYouMean(f.name, PresetNames()) +
                     "; run 'tally models' for the list");
  }
  table.rows = std::move(rows);
  table.explain.clear();
  return report;
}

}  // namespace tally
