// `tally models`: the presets with their family, parameter count and description.
#pragma once

#include <string>

#include "cli/command.h"
#include "report/report.h"

namespace tally {

// models: a table keyed by name, with family, params, source, description (JSON models.<name>.*);
// each preset is loaded and counted. hf_model_types lists the Hugging Face families the
// config.json reader takes.
Report ListModels();

// [NAME]: one preset (or a Hugging Face short name for one); without, every preset.
struct ModelsFlags {
  OutputFlags output;
  std::string name;
};
void AddModelsFlags(CLI::App* cmd, ModelsFlags& flags);
SharedFlags SharedOf(const ModelsFlags& flags);
std::optional<Report> RunModels(const ModelsFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
