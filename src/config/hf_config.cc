// ReadHfConfig: a config.json's model_type looked up in the table of families
// (config/hf_families.cc), whose rows name each family's reader.
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

}  // namespace

const std::vector<std::string>& HfFamilies() {
  static const std::vector<std::string> kFamilies = [] {
    std::vector<std::string> names;
    for (const HfFamily& f : HfFamilyTable()) names.emplace_back(f.model_type);
    return names;
  }();
  return kFamilies;
}

ModelSpec ReadHfConfig(const YAML::Node& root, const std::string& file) {
  const YAML::Node& const_root = root;
  YAML::Node type = const_root["model_type"];
  std::string name = type.IsScalar() ? type.Scalar() : "";
  const HfFamily* family = FindHfFamily(name);
  if (family == nullptr) {
    const std::vector<std::string>& families = HfFamilies();
    std::string list;
    for (const std::string& f : families) list += (list.empty() ? "" : ", ") + f;
    std::string shown = type.IsScalar() ? "'" + type.Scalar() + "'" : Describe(type);
    throw InputError(LocOf(type, file), "unsupported model_type " + shown + NearSpelling(name, families) +
                                            "; tally reads " + list +
                                            "; for another model, write a tally YAML config (README, \"Model "
                                            "configs\")");
  }
  return family->read(root, file, name);
}

}  // namespace tally
