#include "cli/models_command.h"

#include "config/hf_config.h"
#include "config/load_config.h"
#include "config/presets.h"
#include "estimate/params.h"
#include "estimate/evaluation.h"

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
                           Evaluation(spec).Summary(Settings{})->params.total, std::string(p.path), spec.description});
  }
  std::string families;
  for (const std::string& f : HfFamilies()) families += (families.empty() ? "" : ", ") + f;
  r.Set("hf_model_types", "Hugging Face config.json model_type values read", families, Unit::kText);
  return r;
}

void AddModelsFlags(CLI::App* cmd, OutputFlags& flags) { AddOutputFlags(cmd, flags); }

std::string RunModels(const OutputFlags& flags, RunContext& context) {
  ReadFormat(flags);
  return Render(ListModels(), flags, context.err);
}

}  // namespace tally
