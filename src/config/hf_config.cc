// ReadHfConfig: a config.json's model_type looked up in the table of families
// (config/hf_families.cc), whose rows name each family's reader; a config whose model_type is
// missing or no row is read by the row of its `architectures` model class, with a note; one of an
// unknown model_type with the standard decoder keys is read as a generic (Llama) decoder, with a
// warning.
#include "config/hf_config.h"

#include <algorithm>

#include "config/hf_families.h"
#include "config/hf_reader.h"
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

// The keys every generic decoder has (ReadGenericDecoder reads the others when they are there).
constexpr const char* kDecoderKeys[] = {"hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size",
                                        "vocab_size"};
// Keys of layouts the Llama reading would count wrong: latent attention and DeepSeek's experts,
// parallel blocks, state-space mixers.
constexpr const char* kOtherLayoutKeys[] = {"kv_lora_rank",          "n_routed_experts", "parallel_attn",
                                            "use_parallel_residual", "ssm_state_size",   "layers_block_type"};

bool Given(const YAML::Node& root, const char* key) {
  const YAML::Node v = root[key];
  return v.IsDefined() && !v.IsNull() && !(v.IsScalar() && (v.Scalar() == "false" || v.Scalar() == "0"));
}

// Why `root` is not a generic decoder ("no 'intermediate_size'"), or "" when it is one.
std::string NotGenericDecoder(const YAML::Node& root) {
  std::vector<std::string> missing;
  for (const char* k : kDecoderKeys) {
    const YAML::Node v = root[k];
    if (!v.IsDefined() || v.IsNull()) missing.push_back("'" + std::string(k) + "'");
  }
  std::string out;
  for (size_t i = 0; i < missing.size(); ++i) {
    out += (i == 0 ? "no " : i + 1 == missing.size() ? " or " : ", ") + missing[i];
  }
  if (!out.empty()) return out;
  for (const char* k : kOtherLayoutKeys) {
    if (Given(root, k)) return "'" + std::string(k) + "' is no key of the Llama layout";
  }
  return "";
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
    const std::string not_generic = typed ? NotGenericDecoder(const_root) : "";
    if (typed && not_generic.empty()) {
      // The standard decoder keys: read as a Llama, loudly (a checkpoint beside the config
      // confirms or refutes it: ConfirmGuessedLayout).
      ModelSpec spec = ReadHfTransformer<ReadGenericDecoder>(root, file, name);
      spec.guessed_layout = "unknown model_type '" + name + "'" + NearSpelling(name, families) +
                            ": read as a generic decoder (Llama layout: RMSNorm, gated MLP, rotary, q, k and v "
                            "projections stored apart; no biases "
                            "unless attention_bias/mlp_bias say so); verify against its checkpoint";
      spec.notes.push_back(file + ": " + spec.guessed_layout);
      return spec;
    }
    std::string list;
    for (const std::string& f : families) list += (list.empty() ? "" : ", ") + f;
    std::string shown = type.IsScalar() ? "'" + type.Scalar() + "'" : Describe(type);
    if (!not_generic.empty()) shown += " (and not a generic decoder: " + not_generic + ")";
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
