// What every Hugging Face config.json reader reads the same way.
#pragma once

#include <optional>
#include <string>

#include "config/model_spec.h"
#include "config/yaml_reader.h"
#include "util/dtype.h"

namespace tally {

// torch_dtype (or transformers v5's dtype: "bfloat16"); other values (fp8 checkpoints name theirs
// in quantization_config) leave it unstated.
std::optional<DType> HfTorchDtype(const ConfigMap& m);

// A ModelSpec of `family` named by _name_or_path (else the file's stem), described by its model_type;
// a transformer's weight dtype from HfTorchDtype.
ModelSpec HfModelSpec(const ConfigMap& m, Family family, const std::string& model_type);

}  // namespace tally
