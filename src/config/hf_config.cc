// ReadHfConfig: a config.json's model_type looked up in the table of families
// (config/hf_families.cc), whose rows name each family's reader; a config whose model_type is
// missing or no row is read by the row of its `architectures` model class, with a note.
#include "config/hf_config.h"

#include <algorithm>

#include "config/hf_families.h"
#include "config/yaml_reader.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// A suggestion only for what is a misspelling of a supported type (one or two edits, and fewer
// than a third of the name), never another family that happens to be spelled alike.
std::string NearSpelling(const std::string& name, const std::vector<std::string>& families) {
  const std::span<const std::string_view> others = HfLookalikeTypes();
  if (std::find(others.begin(), others.end(), name) != others.end()) return "";
  const std::string match = ClosestMatch(name, families);
  if (match.empty()) return "";
  const int distance = EditDistance(name, match);
  if (distance > 2 || static_cast<size_t>(distance) * 3 > name.size()) return "";
  return " (did you mean '" + match + "'?)";
}

// The first entry of `architectures` when it is a name, else "" (the readers check the key's shape).
std::string FirstArchitecture(const YAML::Node& root) {
  const YAML::Node list = root["architectures"];
  if (!list || !list.IsSequence() || list.size() == 0 || !list[0].IsScalar()) return "";
  return list[0].Scalar();
}

}  // namespace

const std::vector<std::string>& HfFamilies() {
  static const std::vector<std::string> kFamilies = [] {
    std::vector<std::string> names;
    for (const HfFamily& f : HfFamilyTable()) names.emplace_back(f.model_type);
    return names;
  }();
  return kFamilies;
}

bool HfReadsArchitecture(const YAML::Node& root) {
  return FindHfFamilyByArchitecture(FirstArchitecture(root)) != nullptr;
}

ModelSpec ReadHfConfig(const YAML::Node& root, const std::string& file) {
  const YAML::Node& const_root = root;
  YAML::Node type = const_root["model_type"];
  const bool typed = type.IsDefined() && type.IsScalar();  // a missing key is an undefined node
  std::string name = typed ? type.Scalar() : "";
  const HfFamily* family = FindHfFamily(name);
  const std::string architecture = FirstArchitecture(const_root);
  const HfFamily* by_class = FindHfFamilyByArchitecture(architecture);
  if (family == nullptr && by_class != nullptr) {
    ModelSpec spec = by_class->read(root, file, std::string(by_class->model_type));
    const std::string shown = typed ? "model_type '" + name + "' is not one tally reads" : "no model_type";
    spec.notes.push_back(file + ": " + shown + "; read as '" + std::string(by_class->model_type) +
                         "' from its architectures entry '" + architecture + "'");
    return spec;
  }
  if (family == nullptr) {
    const std::vector<std::string>& families = HfFamilies();
    std::string list;
    for (const std::string& f : families) list += (list.empty() ? "" : ", ") + f;
    std::string shown = type.IsScalar() ? "'" + type.Scalar() + "'" : Describe(type);
    throw InputError(LocOf(type, file), "unsupported model_type " + shown + NearSpelling(name, families) +
                                            "; tally reads " + list +
                                            "; for another model, write a tally YAML config (docs/models.md, "
                                            "\"Model configs\")");
  }
  // A known model_type wins over the class: remote-code configs name classes of their own
  // (phi-msft's PhiForCausalLM is not transformers' Phi).
  return family->read(root, file, name);
}

}  // namespace tally
