#include "cli/models_command.h"

#include "config/hf_config.h"
#include "config/load_config.h"
#include "config/model_lookup.h"
#include "config/presets.h"
#include "config/resolve.h"
#include "estimate/evaluation.h"
#include "estimate/params.h"
#include "util/spellcheck.h"

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
  cmd->add_option("NAME", f.name, "show one preset (gpt2, llama-3-8b, ...)")->type_name("");
  AddOutputFlags(cmd, f.output);
}

SharedFlags SharedOf(const ModelsFlags& f) { return {.output = &f.output}; }

std::optional<Report> RunModels(const ModelsFlags& f, Prepared& /*prepared*/, RunContext& /*context*/) {
  Report report = ListModels();
  const EmbeddedPreset* preset = f.name.empty() ? nullptr : FindPresetOrAlias(f.name);
  KeepNamedRow(report, {.command = "models", .noun = "preset", .list = "list"}, f.name,
               preset ? std::string(preset->name) : "", [&] { return DidYouMean(f.name, PresetNames()); });
  return report;
}

}  // namespace tally
