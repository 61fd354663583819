#include "config/load_config.h"

#include <filesystem>
#include <fstream>

#include "config/hf_config.h"
#include "config/presets.h"
#include "config/sequential_reader.h"
#include "config/yaml_reader.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

const std::vector<std::string> kTransformerKeys = {
    "name", "description", "family", "vocab_size", "context_length", "d_model", "n_layers", "n_heads",
    "n_kv_heads", "d_ff", "head_dim", "mlp", "norm", "bias", "qkv_bias", "out_bias", "mlp_bias",
    "lm_head_bias", "position", "position_offset", "rotary_dim", "tied_embeddings", "embed_dim",
    "embedding_norm", "final_norm", "parallel_block", "norms_per_block", "moe", "sliding_window",
    "dtype", "dropout"};
const std::vector<std::string> kSequentialKeys = {"name", "description", "family", "input", "layers", "loss"};

std::string StemOf(const std::string& file) { return std::filesystem::path(file).stem().string(); }

const std::vector<std::string> kDtypes = {"fp32", "fp16", "bf16", "fp8"};

void ReadMoe(const ConfigMap& moe, TransformerSpec& t) {
  t.n_experts = moe.PositiveInt("experts");
  t.top_k = moe.PositiveInt("top_k");
  if (t.top_k > t.n_experts) {
    throw InputError(moe.Loc("top_k"), "'top_k' (" + std::to_string(t.top_k) + ") is more than the " +
                                           std::to_string(t.n_experts) + " experts");
  }
}

// Keys that only make sense together.
void CheckCombinations(const ConfigMap& m, const TransformerSpec& t) {
  if (t.norms_per_block > 2 || (t.norms_per_block == 1 && !t.parallel_block)) {
    throw InputError(m.Loc("norms_per_block"), "'norms_per_block' must be 2, or 1 in a parallel block "
                                               "(parallel_block: true), got " +
                                                   std::to_string(t.norms_per_block));
  }
  if (m.Has("rotary_dim") && t.position != PositionKind::kRope) {
    throw InputError(m.Loc("rotary_dim"), "'rotary_dim' needs 'position: rope'");
  }
  if (t.rotary_dim > t.head_dim) {
    throw InputError(m.Loc("rotary_dim"), "'rotary_dim' (" + std::to_string(t.rotary_dim) +
                                              ") is larger than the head dimension (" + std::to_string(t.head_dim) +
                                              ")");
  }
  if (m.Has("position_offset") && t.position != PositionKind::kLearned) {
    throw InputError(m.Loc("position_offset"), "'position_offset' needs 'position: learned'");
  }
}

void ReadTransformer(const ConfigMap& m, ModelSpec& spec) {
  TransformerSpec& t = spec.transformer;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.context_length = m.PositiveInt("context_length");
  t.d_model = m.PositiveInt("d_model");
  t.n_layers = m.PositiveInt("n_layers");
  t.n_heads = m.PositiveInt("n_heads");
  t.n_kv_heads = m.PositiveInt("n_kv_heads", t.n_heads);
  t.d_ff = m.PositiveInt("d_ff");
  t.mlp = static_cast<MlpKind>(m.Choice("mlp", {"gelu", "relu", "swiglu", "geglu"}, 0));
  t.norm = static_cast<NormKind>(m.Choice("norm", {"layernorm", "rmsnorm"}, 0));
  const bool bias = m.Bool("bias", true);
  t.qkv_bias = m.Bool("qkv_bias", bias);
  t.out_bias = m.Bool("out_bias", bias);
  t.mlp_bias = m.Bool("mlp_bias", bias);
  t.lm_head_bias = m.Bool("lm_head_bias", false);
  t.position = static_cast<PositionKind>(m.Choice("position", {"learned", "rope", "none", "alibi"}, 0));
  t.position_offset = m.NonNegativeInt("position_offset", 0);
  t.tied_embeddings = m.Bool("tied_embeddings", true);
  t.embed_dim = m.PositiveInt("embed_dim", 0);
  t.embedding_norm = m.Bool("embedding_norm", false);
  t.final_norm = m.Bool("final_norm", true);
  t.parallel_block = m.Bool("parallel_block", false);
  t.norms_per_block = m.PositiveInt("norms_per_block", 2);
  t.sliding_window = m.PositiveInt("sliding_window", 0);
  t.dtype = m.Has("dtype") ? kDtypes[m.Choice("dtype", kDtypes, 0)] : "";
  t.dropout = m.Probability("dropout", 0);
  if (m.Has("moe")) ReadMoe(ConfigMap(m.Get("moe"), m.file(), "moe", {"experts", "top_k"}), t);
  if (m.Has("head_dim")) {
    t.head_dim = m.PositiveInt("head_dim");
  } else if (t.d_model % t.n_heads != 0) {
    throw InputError(m.Loc("n_heads"), "'d_model' (" + std::to_string(t.d_model) +
                                           ") is not divisible by 'n_heads' (" +
                                           std::to_string(t.n_heads) +
                                           "); set 'head_dim' to use another head size");
  } else {
    t.head_dim = t.d_model / t.n_heads;
  }
  t.rotary_dim = m.PositiveInt("rotary_dim", 0);
  if (t.n_heads % t.n_kv_heads != 0) {
    throw InputError(m.Loc("n_kv_heads"), "'n_heads' (" + std::to_string(t.n_heads) +
                                              ") is not divisible by 'n_kv_heads' (" +
                                              std::to_string(t.n_kv_heads) + ")");
  }
  CheckCombinations(m, t);
}

}  // namespace

std::string ReadFileText(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError({path, 0, 0}, "is a directory, not a config file");
  }
  if (!std::filesystem::exists(path, ec)) throw InputError({path, 0, 0}, "no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "cannot open file for reading");
  // Read with a bound, so that /dev/zero or a mistaken multi-gigabyte file ends in an error, not
  // an exhausted machine; configs are a few kilobytes.
  constexpr size_t kMaxBytes = size_t{16} << 20;
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxBytes) throw InputError({path, 0, 0}, "is larger than 16 MiB, the most a config file may be");
  }
  if (in.bad()) throw InputError({path, 0, 0}, "read error");
  return text;
}

namespace {

bool LooksLikePath(const std::string& arg) {
  return arg.find('/') != std::string::npos || std::filesystem::path(arg).has_extension();
}

}  // namespace

ModelSpec LoadModelText(const std::string& file, const std::string& text) {
  YAML::Node root = ParseYaml(file, text);
  if (root.IsNull()) throw InputError({file, 1, 1}, "the config is empty");
  const YAML::Node& const_root = root;
  if (root.IsMap() && const_root["model_type"] && !const_root["family"]) return ReadHfConfig(root, file);
  if (!root.IsMap()) {
    throw InputError(LocOf(root, file), "a model config must be a map of keys to values, got " + Describe(root));
  }
  // The family decides which keys are allowed, so read it before checking the others.
  YAML::Node family = const_root["family"];
  if (!family) {
    throw InputError(LocOf(root, file), "missing required key 'family' in 'model' (transformer or sequential)");
  }
  ModelSpec spec;
  spec.source = file;
  bool transformer = family.IsScalar() && family.Scalar() == "transformer";
  bool sequential = family.IsScalar() && family.Scalar() == "sequential";
  if (!transformer && !sequential) {
    std::string hint = family.IsScalar() ? DidYouMean(family.Scalar(), {"transformer", "sequential"}) : "";
    throw InputError(LocOf(family, file), "'family' must be transformer or sequential, got " +
                                              Describe(family) + hint);
  }
  ConfigMap m(root, file, "model", transformer ? kTransformerKeys : kSequentialKeys);
  spec.family = transformer ? Family::kTransformer : Family::kSequential;
  spec.name = m.String("name", StemOf(file));
  spec.description = m.String("description", "");
  if (transformer) {
    ReadTransformer(m, spec);
  } else {
    spec.sequential = ReadSequential(m);
  }
  return spec;
}

ModelSpec LoadModelFile(const std::string& path) { return LoadModelText(path, ReadFileText(path)); }

ModelSpec ResolveModel(const std::string& arg) {
  if (const EmbeddedPreset* p = FindPreset(arg)) return LoadModelText(p->path, p->text);
  std::error_code ec;
  if (LooksLikePath(arg) || std::filesystem::exists(arg, ec)) return LoadModelFile(arg);
  throw InputError("unknown model '" + arg + "'" + DidYouMean(arg, PresetNames()) +
                   "; run 'tally models' for the presets, or give a path to a config file");
}

}  // namespace tally
