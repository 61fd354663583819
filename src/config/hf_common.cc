#include "config/hf_common.h"

#include <filesystem>

#include "config/names.h"

namespace tally {

std::optional<DType> HfTorchDtype(const ConfigMap& m) {
  const std::optional<DType> d = FindName<DType>(m.String("torch_dtype", m.String("dtype", "")));
  if (d == DType::kFp32 || d == DType::kFp16 || d == DType::kBf16) return d;
  return std::nullopt;
}

ModelSpec HfModelSpec(const ConfigMap& m, Family family, const std::string& model_type) {
  ModelSpec spec;
  spec.family = family;
  spec.source = m.file();
  spec.name = m.String("_name_or_path", std::filesystem::path(m.file()).stem().string());
  spec.description = "Hugging Face config.json, model_type " + model_type;
  if (family == Family::kTransformer) spec.transformer.dtype = HfTorchDtype(m);
  return spec;
}

}  // namespace tally
