// Hugging Face config.json -> ModelSpec for the common decoder families. Keys tally does not use are
// ignored; the ones it uses are checked with file:line:col errors. Nothing is downloaded.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/model_spec.h"

namespace tally {

// The model_type values tally reads: the rows of config/hf_families.cc, in its order.
const std::vector<std::string>& HfFamilies();

// `root` is the parsed config.json (it has a model_type, or an `architectures` class the table
// knows: HfReadsArchitecture); `file` names it in errors.
ModelSpec ReadHfConfig(const YAML::Node& root, const std::string& file);

// Whether the first entry of `root`'s architectures is a model class a row of the table reads.
bool HfReadsArchitecture(const YAML::Node& root);

}  // namespace tally
