#include "config/load_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "config/hf_config.h"
#include "config/model_lookup.h"
#include "config/names.h"
#include "config/presets.h"
#include "config/sequential_reader.h"
#include "config/yaml_reader.h"
#include "util/any_case.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

const std::vector<std::string> kTransformerKeys = {"name",
                                                   "description",
                                                   "family",
                                                   "vocab_size",
                                                   "context_length",
                                                   "d_model",
                                                   "n_layers",
                                                   "n_heads",
                                                   "n_kv_heads",
                                                   "d_ff",
                                                   "head_dim",
                                                   "mlp",
                                                   "norm",
                                                   "bias",
                                                   "qkv_bias",
                                                   "qkv_fused",
                                                   "gate_up_fused",
                                                   "out_bias",
                                                   "mlp_bias",
                                                   "lm_head_bias",
                                                   "position",
                                                   "position_offset",
                                                   "rotary_dim",
                                                   "tied_embeddings",
                                                   "embed_dim",
                                                   "embedding_norm",
                                                   "final_norm",
                                                   "parallel_block",
                                                   "norms_per_block",
                                                   "moe",
                                                   "sliding_window",
                                                   "dtype",
                                                   "dropout",
                                                   "norm_placement",
                                                   "norm_params",
                                                   "qk_norm",
                                                   "attention_sinks",
                                                   "attention_pattern",
                                                   "mla",
                                                   "mtp_layers",
                                                   "mlp_activation"};
const std::vector<std::string> kSequentialKeys = {"name", "description", "family", "input", "layers", "loss"};

std::string StemOf(const std::string& file) { return std::filesystem::path(file).stem().string(); }

// `key`'s value as one of E's names: the table's own entry, never a cast of a list index.
template <typename E>
E EnumKey(const ConfigMap& m, const std::string& key, E fallback) {
  const auto table = NameTable<E>();
  size_t i = 0;
  while (table[i].value != fallback) ++i;
  return table[m.Choice(key, NameList<E>(), i)].value;
}

// The weights' dtype: the formats checkpoints are published in (fp8 is fp8_e4m3).
std::optional<DType> WeightDtype(const ConfigMap& m) {
  if (!m.Has("dtype")) return std::nullopt;
  static const std::vector<DType> kAllowed = {DType::kFp32, DType::kFp16, DType::kBf16, DType::kFp8E4m3};
  const YAML::Node& v = m.Get("dtype");
  const std::optional<DType> d = v.IsScalar() ? FindNameAnyCase<DType>(v.Scalar()) : std::nullopt;
  if (!d || std::find(kAllowed.begin(), kAllowed.end(), *d) == kAllowed.end()) {
    std::vector<std::string> names;
    names.reserve(kAllowed.size());
    for (DType a : kAllowed) names.emplace_back(Name(a));
    m.Choice("dtype", names, 0);  // not one of them: throws the usual "must be one of" at the value
  }
  return d;
}

const std::vector<std::string> kMoeKeys = {"experts",           "top_k",       "d_ff",
                                           "shared_d_ff",       "shared_gate", "router_bias",
                                           "router_score_bias", "first_dense", "every"};

void ReadMoe(const ConfigMap& moe, TransformerSpec& t) {
  t.n_experts = moe.PositiveInt("experts");
  t.top_k = moe.PositiveInt("top_k");
  if (t.top_k > t.n_experts) {
    throw InputError(moe.Loc("top_k"), "'top_k' (" + std::to_string(t.top_k) + ") is more than the " +
                                           std::to_string(t.n_experts) + " experts");
  }
  t.moe_d_ff = moe.PositiveInt("d_ff", 0);
  t.shared_expert_d_ff = moe.PositiveInt("shared_d_ff", 0);
  t.shared_expert_gate = moe.Bool("shared_gate", false);
  if (t.shared_expert_gate && t.shared_expert_d_ff == 0) {
    throw InputError(moe.Loc("shared_gate"), "'shared_gate' gates the shared experts: give 'shared_d_ff'");
  }
  t.router_bias = moe.Bool("router_bias", false);
  t.router_score_bias = moe.Bool("router_score_bias", false);
}

void ReadMla(const ConfigMap& m, TransformerSpec& t) {
  MlaSpec& mla = t.mla;
  mla.q_lora_rank = m.PositiveInt("q_lora_rank", 0);
  mla.kv_lora_rank = m.PositiveInt("kv_lora_rank");
  mla.qk_nope_head_dim = m.PositiveInt("qk_nope_head_dim");
  mla.qk_rope_head_dim = m.PositiveInt("qk_rope_head_dim");
  mla.v_head_dim = m.PositiveInt("v_head_dim");
  mla.full_kv_cache = m.Bool("full_kv_cache", false);
}

// Which blocks differ: `attention_pattern` (full attention on every full_every-th layer, sliding
// or chunked attention of `span` tokens on the others) and the MoE's first_dense / every. The
// result is TransformerSpec::layer_specs, left empty when every block is alike.
void ReadLayers(const ConfigMap& m, TransformerSpec& t) {
  uint64_t first_dense = 0, every = 1;
  if (t.n_experts > 0) {
    const ConfigMap moe(m.Get("moe"), m.file(), "moe", kMoeKeys);
    first_dense = moe.NonNegativeInt("first_dense", 0);
    every = moe.PositiveInt("every", 1);
  }
  const bool pattern = m.Has("attention_pattern");
  if (!pattern && first_dense == 0 && every == 1) return;  // every block alike (LayerRuns)
  if (t.n_layers > kMaxLayerSpecs) {
    throw InputError(m.Loc("n_layers"), "blocks that differ are spelled out for at most " +
                                            std::to_string(kMaxLayerSpecs) + " layers, got " +
                                            std::to_string(t.n_layers));
  }
  TransformerSpec one = t;  // what LayerRuns gives every block when none differ
  one.n_layers = 1;
  const LayerSpec uniform = LayerRuns(one).front().first;
  std::vector<LayerSpec> specs(t.n_layers, uniform);
  if (pattern) {
    if (m.Has("sliding_window")) {
      throw InputError(m.Loc("attention_pattern"),
                       "give 'sliding_window' (every layer) or 'attention_pattern', "
                       "not both");
    }
    ConfigMap p(m.Get("attention_pattern"), m.file(), "attention_pattern", {"kind", "span", "full_every"});
    const auto kind =
        p.Choice("kind", {"sliding", "chunked"}, 0) == 0 ? AttentionKind::kSliding : AttentionKind::kChunked;
    const uint64_t span = p.PositiveInt("span");
    const uint64_t full_every = p.PositiveInt("full_every");
    for (uint64_t i = 0; i < t.n_layers; ++i) {
      specs[i].attention = (i + 1) % full_every != 0 ? kind : AttentionKind::kFull;
      specs[i].span = (i + 1) % full_every != 0 ? span : 0;
    }
    if (kind == AttentionKind::kSliding) t.sliding_window = span;
  }
  if (t.n_experts > 0) {
    for (uint64_t i = 0; i < t.n_layers; ++i) specs[i].moe = i >= first_dense && (i + 1) % every == 0;
  }
  t.layer_specs = specs;
  const auto runs = LayerRuns(t);
  t.layer_specs.clear();
  if (LayerRuns(t) != runs) t.layer_specs = std::move(specs);
}

// Keys that only make sense together.
void CheckCombinations(const ConfigMap& m, const TransformerSpec& t) {
  if (t.norms_per_block > 2 || (t.norms_per_block == 1 && !t.parallel_block)) {
    throw InputError(m.Loc("norms_per_block"),
                     "'norms_per_block' must be 2, or 1 in a parallel block "
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
  if (m.Has("norm_placement") && t.parallel_block && t.norm_placement != NormPlacement::kPre) {
    throw InputError(m.Loc("norm_placement"), "'norm_placement' must be pre in a parallel block");
  }
  if (m.Has("mla") && m.Has("attention_pattern")) {
    throw InputError(m.Loc("attention_pattern"),
                     "'attention_pattern' does not apply to MLA, whose layers "
                     "all keep the latent of every token");
  }
  if (m.Has("mla") && t.n_kv_heads != t.n_heads) {
    throw InputError(m.Loc("n_kv_heads"),
                     "'n_kv_heads' must equal 'n_heads' under 'mla' (the latent is "
                     "expanded to every head)");
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
  t.mlp = EnumKey(m, "mlp", MlpKind::kGelu);
  t.norm = EnumKey(m, "norm", NormKind::kLayerNorm);
  const bool bias = m.Bool("bias", true);
  t.qkv_bias = m.Bool("qkv_bias", bias);
  t.out_bias = m.Bool("out_bias", bias);
  t.mlp_bias = m.Bool("mlp_bias", bias);
  t.lm_head_bias = m.Bool("lm_head_bias", false);
  t.qkv_fused = m.Bool("qkv_fused", false);
  t.gate_up_fused = m.Bool("gate_up_fused", false);
  t.position = EnumKey(m, "position", PositionKind::kLearned);
  t.position_offset = m.NonNegativeInt("position_offset", 0);
  t.tied_embeddings = m.Bool("tied_embeddings", true);
  t.embed_dim = m.PositiveInt("embed_dim", 0);
  t.embedding_norm = m.Bool("embedding_norm", false);
  t.final_norm = m.Bool("final_norm", true);
  t.parallel_block = m.Bool("parallel_block", false);
  t.norms_per_block = m.PositiveInt("norms_per_block", 2);
  t.sliding_window = m.PositiveInt("sliding_window", 0);
  t.dtype = WeightDtype(m);
  t.dropout = m.Probability("dropout", 0);
  if (m.Has("moe")) ReadMoe(ConfigMap(m.Get("moe"), m.file(), "moe", kMoeKeys), t);
  t.norm_placement = EnumKey(m, "norm_placement", NormPlacement::kPre);
  t.norm_params = EnumKey(m, "norm_params", NormParams::kAffine);
  t.qk_norm = EnumKey(m, "qk_norm", QkNorm::kNone);
  t.attention_sinks = m.Bool("attention_sinks", false);
  if (m.Has("mla")) {
    ReadMla(ConfigMap(
                m.Get("mla"), m.file(), "mla",
                {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "full_kv_cache"}),
            t);
  }
  t.mtp_layers = m.NonNegativeInt("mtp_layers", 0);
  if (m.Has("mlp_activation")) {
    // The one activation whose implementation changes what it saves (TransformerSpec::gelu_in_ops).
    const std::string act = m.String("mlp_activation", "");
    if (act != "gelu_new") {
      throw InputError(m.Loc("mlp_activation"), "unknown mlp_activation '" + act + "'; tally knows gelu_new");
    }
    t.gelu_in_ops = true;
  }
  if (m.Has("head_dim")) {
    t.head_dim = m.PositiveInt("head_dim");
  } else if (t.d_model % t.n_heads != 0) {
    throw InputError(m.Loc("n_heads"), "'d_model' (" + std::to_string(t.d_model) + ") is not divisible by 'n_heads' (" +
                                           std::to_string(t.n_heads) + "); set 'head_dim' to use another head size");
  } else {
    t.head_dim = t.d_model / t.n_heads;
  }
  t.rotary_dim = m.PositiveInt("rotary_dim", 0);
  if (t.n_heads % t.n_kv_heads != 0) {
    throw InputError(m.Loc("n_kv_heads"), "'n_heads' (" + std::to_string(t.n_heads) +
                                              ") is not divisible by 'n_kv_heads' (" + std::to_string(t.n_kv_heads) +
                                              ")");
  }
  CheckCombinations(m, t);
  ReadLayers(m, t);
}

}  // namespace

std::string ReadFileText(const std::string& path) {
  // Opened without blocking and checked on the open descriptor (no race with a swapped file): a
  // FIFO with no writer would block the open or the read forever, and a device never ends.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw InputError({path, 0, 0}, "no such file");
    if (err == EACCES) throw InputError({path, 0, 0}, "permission denied");
    if (err == ELOOP) throw InputError({path, 0, 0}, "too many symbolic links (is there a link loop?)");
    throw InputError({path, 0, 0}, std::string("cannot open file for reading: ") + std::strerror(err));
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (stat_ok && S_ISDIR(st.st_mode)) throw InputError({path, 0, 0}, "is a directory, not a config file");
    throw InputError({path, 0, 0}, "is not a regular file (a FIFO, a device or a socket); configs are read from files");
  }
  // Read with a bound, so that a mistaken multi-gigabyte file ends in an error, not an exhausted
  // machine; configs are a few kilobytes.
  constexpr size_t kMaxBytes = size_t{16} << 20;
  std::string text;
  // Sized once from fstat: a safetensors index of 90,000 tensors is read through here too (8 MB).
  text.reserve(static_cast<size_t>(std::min<off_t>(st.st_size, kMaxBytes)) + 1);
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      if (n < 0) throw InputError({path, 0, 0}, "read error");
      return text;
    }
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > kMaxBytes) {
      ::close(fd);
      throw InputError({path, 0, 0}, "is larger than 16 MiB, the most a config file may be");
    }
  }
}

namespace {

// A config.json, or a map with the keys transformers writes: a Hugging Face config, not tally's own.
bool LooksLikeHfConfig(const YAML::Node& root, const std::string& file) {
  if (std::filesystem::path(file).filename() == "config.json") return true;
  return root["architectures"] || root["transformers_version"];
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
  if (!family && LooksLikeHfConfig(const_root, file)) {
    if (HfReadsArchitecture(const_root)) return ReadHfConfig(root, file);
    throw InputError(LocOf(root, file),
                     "this Hugging Face config has no 'model_type', which names its architecture; 'tally models' "
                     "lists the model types tally reads (hf_model_types)");
  }
  if (!family) {
    throw InputError(LocOf(root, file), "missing required key 'family' in 'model' (" + JoinNames<Family>(" or ") + ")");
  }
  ModelSpec spec;
  spec.source = file;
  const std::optional<Family> kind = family.IsScalar() ? FindName<Family>(family.Scalar()) : std::nullopt;
  if (!kind) {
    std::string hint = family.IsScalar() ? DidYouMean(family.Scalar(), NameList<Family>()) : "";
    throw InputError(LocOf(family, file),
                     "'family' must be " + JoinNames<Family>(" or ") + ", got " + Describe(family) + hint);
  }
  const bool transformer = *kind == Family::kTransformer;
  ConfigMap m(root, file, "model", transformer ? kTransformerKeys : kSequentialKeys);
  spec.family = *kind;
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
  if (const EmbeddedPreset* p = FindPresetOrAlias(arg)) return LoadModelText(p->path, p->text);
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return LoadModelPath(arg);
  if (!LooksLikePath(arg)) {
    std::string note;
    if (const EmbeddedPreset* p = FindTunedPreset(arg, note)) {
      ModelSpec spec = LoadModelText(p->path, p->text);
      spec.notes.push_back(note);
      return spec;
    }
  }
  // "dir/loop" would otherwise pass for a Hub ID and be looked for in the cache.
  if (ec.value() == ELOOP) throw InputError({arg, 0, 0}, kSymlinkLoop);
  if (LooksLikeHfId(arg)) return LoadHfCached(arg);
  if (LooksLikePath(arg)) return LoadModelFile(arg);
  throw InputError("unknown model '" + arg + "'" + DidYouMean(arg, PresetNames()) +
                   "; run 'tally models' for the presets, or give a path to a config file");
}

}  // namespace tally
