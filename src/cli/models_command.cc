#include "cli/models_command.h"

#include "config/hf_config.h"
#include "config/load_config.h"
#include "config/presets.h"
#include "estimate/params.h"
#include "estimate/evaluation.h"
#include "report/format.h"
#include "util/units.h"

namespace tally {

Report ListModels() {
  Report r;
  ReportNode& models = r.Group("models", "Presets");
  for (const EmbeddedPreset& p : EmbeddedPresets()) {
    ModelSpec spec = LoadModelText(p.path, p.text);
    ReportNode& m = models.AddGroup(p.name, p.name);
    m.AddLeaf("family", "family", FamilyName(spec.family), Unit::kText);
    m.AddLeaf("params", "params", Evaluation(spec).Summary(Settings{})->params.total, Unit::kCount);
    m.AddLeaf("source", "config", p.path, Unit::kText);
    m.AddLeaf("description", "description", spec.description, Unit::kText);
  }
  std::string families;
  for (const std::string& f : HfFamilies()) families += (families.empty() ? "" : ", ") + f;
  r.Set("hf_model_types", "Hugging Face config.json model_type values read", families, Unit::kText);
  return r;
}

namespace {

std::string Text(const ReportNode& model, const char* key) {
  const ReportNode* c = model.Child(key);
  return c == nullptr ? "" : ValueText(c->value);
}

}  // namespace

std::string FormatModelsTable(const Report& list) {
  std::string out;
  for (const ReportNode& m : list.Find("models")->children) {
    uint64_t params = std::get<uint64_t>(m.Child("params")->value);
    std::string line = m.key;
    line.resize(std::max<size_t>(line.size() + 1, 20), ' ');
    std::string family = Text(m, "family");
    family.resize(13, ' ');
    std::string count = FormatCount(params);
    line += family + std::string(count.size() < 10 ? 10 - count.size() : 0, ' ') + count + "  " +
            Text(m, "description");
    out += line + "\n";
  }
  const ReportNode* families = list.Find("hf_model_types");
  return out + "\nAlso read: Hugging Face config.json with model_type " + ValueText(families->value) + "\n";
}

std::string FormatModelsDelimited(const Report& list, char separator) {
  Report table;
  for (const ReportNode& m : list.Find("models")->children) {
    table.rows.push_back({m.key, Text(m, "family"), Text(m, "params"), Text(m, "source"), Text(m, "description")});
  }
  table.columns = {"name", "family", "params", "source", "description"};
  return FormatDelimited(table, separator);
}

}  // namespace tally
