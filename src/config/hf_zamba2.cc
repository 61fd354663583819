// Zamba2's config.json as Zamba2Config reads it (transformers configuration_zamba2.py): the keys it
// derives (attention_hidden_size, attention_head_dim, mamba_headdim, hybrid_layer_ids) are
// recomputed here and, when the file states them, checked against what it says.
#include "config/hf_common.h"
#include "config/hf_families.h"
#include "config/yaml_reader.h"
#include "util/checked_math.h"

namespace tally {
namespace {

const std::vector<std::string> kZamba2Keys = {"model_type",
                                              "_name_or_path",
                                              "vocab_size",
                                              "hidden_size",
                                              "intermediate_size",
                                              "num_hidden_layers",
                                              "num_attention_heads",
                                              "num_key_value_heads",
                                              "hidden_act",
                                              "max_position_embeddings",
                                              "tie_word_embeddings",
                                              "torch_dtype",
                                              "dtype",
                                              "layers_block_type",
                                              "hybrid_layer_ids",
                                              "mamba_d_state",
                                              "mamba_d_conv",
                                              "mamba_expand",
                                              "mamba_ngroups",
                                              "n_mamba_heads",
                                              "mamba_headdim",
                                              "add_bias_linear",
                                              "num_mem_blocks",
                                              "use_shared_attention_adapter",
                                              "use_shared_mlp_adapter",
                                              "adapter_rank",
                                              "use_mem_rope",
                                              "use_long_context",
                                              "attention_head_dim",
                                              "attention_hidden_size"};

// Zamba2Config's layers_block_type when the file has none (54 blocks, those of Zamba2-2.7B):
// one Mamba block, seven times five Mamba blocks and a hybrid, then four, one hybrid, three, one
// hybrid, two.
std::vector<bool> DefaultHybrids() {
  std::vector<bool> h(1, false);
  for (int i = 0; i < 7; ++i) {
    h.insert(h.end(), 5, false);
    h.push_back(true);
  }
  h.insert(h.end(), 4, false);
  h.push_back(true);
  h.insert(h.end(), 3, false);
  h.push_back(true);
  h.insert(h.end(), 2, false);
  return h;
}

class Zamba2Reader {
 public:
  Zamba2Reader(const YAML::Node& root, const std::string& file)
      : m_(root, file, "config.json", kZamba2Keys, UnknownKeys::kIgnore) {}

  ModelSpec Read() {
    ModelSpec spec = HfModelSpec(m_, Family::kTransformer, "zamba2");
    TransformerSpec& t = spec.transformer;
    // Zamba2MLP: act(gate) · up, the activation hidden_act (gelu by default).
    const std::string act = m_.String("hidden_act", "gelu");
    if (act == "gelu") {
      t.mlp = MlpKind::kGeglu;
    } else if (act == "silu") {
      t.mlp = MlpKind::kSwiglu;
    } else {
      throw InputError(m_.Loc("hidden_act"), "unsupported hidden_act '" + act + "'; tally reads gelu and silu");
    }
    // add_bias_linear puts biases on in_proj and out_proj of every mixer and on the shared MLP's
    // gate_up_proj and down_proj; the published models have none and tally does not model them.
    if (m_.Bool("add_bias_linear", false)) {
      throw InputError(m_.Loc("add_bias_linear"), "'add_bias_linear: true' is not modelled for zamba2");
    }
    t.vocab_size = m_.PositiveInt("vocab_size", 32000);
    t.d_model = m_.PositiveInt("hidden_size", 2560);
    const uint64_t h = t.d_model;
    t.d_ff = m_.PositiveInt("intermediate_size", CheckedMul(4, h, "intermediate_size"));
    t.n_layers = m_.PositiveInt("num_hidden_layers", 54);
    if (t.n_layers > kMaxLayerSpecs) {
      throw InputError(m_.Loc("num_hidden_layers"), "more than " + std::to_string(kMaxLayerSpecs) + " layers");
    }
    Attention(t);
    const bool long_context = m_.Bool("use_long_context", false);
    t.context_length = long_context ? 16384 : m_.PositiveInt("max_position_embeddings", 4096);
    t.position = PositionKind::kNone;  // no positions outside the shared attention (ZambaSpec::rope)
    t.norm = NormKind::kRmsNorm;
    t.qkv_bias = t.out_bias = t.mlp_bias = false;
    t.tied_embeddings = m_.Bool("tie_word_embeddings", true);
    Mamba(t.ssm, h);
    ZambaSpec& z = t.zamba;
    z.shared_blocks = m_.PositiveInt("num_mem_blocks", 1);
    z.adapter_rank = m_.PositiveInt("adapter_rank", 128);
    z.attention_adapters = m_.Bool("use_shared_attention_adapter", false);
    z.rope = m_.Bool("use_mem_rope", false);
    if (z.attention_adapters && t.n_kv_heads != t.n_heads) {
      // The k and v adapters output attention_hidden_size, which k_proj and v_proj only match with
      // as many key/value heads as heads.
      throw InputError(m_.Loc("use_shared_attention_adapter"),
                       "the attention adapters need as many key/value heads as heads (" + std::to_string(t.n_kv_heads) +
                           " of " + std::to_string(t.n_heads) + ")");
    }
    if (m_.Has("use_shared_mlp_adapter") && !m_.Bool("use_shared_mlp_adapter", true)) {
      spec.notes.push_back(
          "use_shared_mlp_adapter is false, but transformers' Zamba2MLP builds the per-block gate_up adapters "
          "whatever it says: they are counted");
    }
    Blocks(t);
    return spec;
  }

 private:
  // Zamba2Attention: input attention_hidden_size = 2·hidden_size, heads of attention_head_dim =
  // 2·hidden_size // num_attention_heads, no biases.
  void Attention(TransformerSpec& t) const {
    const uint64_t width = CheckedMul(2, t.d_model, "attention_hidden_size");
    t.n_heads = m_.PositiveInt("num_attention_heads", 32);
    t.n_kv_heads = m_.PositiveInt("num_key_value_heads", t.n_heads);
    if (width % t.n_heads != 0) {
      throw InputError(m_.Has("num_attention_heads") ? m_.Loc("num_attention_heads") : m_.MapLoc(),
                       "2 · hidden_size (" + std::to_string(width) + ") is not divisible by the " +
                           std::to_string(t.n_heads) + " attention heads");
    }
    if (t.n_heads % t.n_kv_heads != 0) {
      throw InputError(m_.Has("num_key_value_heads") ? m_.Loc("num_key_value_heads") : m_.MapLoc(),
                       "the " + std::to_string(t.n_heads) + " attention heads are not divisible by the " +
                           std::to_string(t.n_kv_heads) + " key/value heads");
    }
    t.head_dim = width / t.n_heads;
    Derived("attention_hidden_size", width);
    Derived("attention_head_dim", t.head_dim);
  }

  // Zamba2MambaMixer: Mamba-2's mixer; its conv1d always has a bias (use_conv_bias is not read).
  void Mamba(SsmSpec& s, uint64_t h) const {
    s.kind = MixerKind::kMamba2;
    s.d_state = m_.PositiveInt("mamba_d_state", 64);
    s.conv_kernel = m_.PositiveInt("mamba_d_conv", 4);
    s.d_inner = CheckedMul(m_.PositiveInt("mamba_expand", 2), h, "the inner width");
    s.n_heads = m_.PositiveInt("n_mamba_heads", 8);
    s.n_groups = m_.PositiveInt("mamba_ngroups", 1);
    s.proj_bias = false;
    s.conv_bias = true;
    if (s.d_inner % s.n_heads != 0) {
      throw InputError(m_.Has("n_mamba_heads") ? m_.Loc("n_mamba_heads") : m_.MapLoc(),
                       "mamba_expand · hidden_size (" + std::to_string(s.d_inner) + ") is not divisible by the " +
                           std::to_string(s.n_heads) + " Mamba heads");
    }
    if (s.n_heads % s.n_groups != 0) {
      throw InputError(m_.Has("mamba_ngroups") ? m_.Loc("mamba_ngroups") : m_.MapLoc(),
                       "the " + std::to_string(s.n_heads) + " Mamba heads are not divisible by the " +
                           std::to_string(s.n_groups) + " groups");
    }
    Derived("mamba_headdim", s.d_inner / s.n_heads);
  }

  // A key Zamba2Config computes itself: what the file says must agree.
  void Derived(const std::string& key, uint64_t value) const {
    if (m_.Has(key) && m_.PositiveInt(key) != value) {
      throw InputError(m_.Loc(key), key + " " + std::to_string(m_.PositiveInt(key)) + " is not the " +
                                        std::to_string(value) + " Zamba2Config derives");
    }
  }

  // One Mamba-2 block per layer; the hybrid ones numbered in order (their shared block is
  // k % num_mem_blocks, as transformers cycles through them).
  void Blocks(TransformerSpec& t) const {
    std::vector<bool> hybrid;
    if (m_.Has("layers_block_type") && !m_.Get("layers_block_type").IsNull()) {
      const YAML::Node& list = m_.Get("layers_block_type");
      if (!list.IsSequence() || list.size() != t.n_layers) {
        throw InputError(m_.Loc("layers_block_type"),
                         "layers_block_type must be a list of the " + std::to_string(t.n_layers) + " layers' types");
      }
      for (const YAML::Node& type : list) {
        const std::string name = type.IsScalar() ? type.Scalar() : "";
        if (name != "mamba" && name != "hybrid") {
          throw InputError(LocOf(type, m_.file()), "layers_block_type entries are 'mamba' or 'hybrid', not " +
                                                       Describe(type) +
                                                       " (Zyphra's earlier 'm'/'g' config format is not read)");
        }
        hybrid.push_back(name == "hybrid");
      }
    } else {
      hybrid = DefaultHybrids();
      if (t.n_layers > hybrid.size()) {
        throw InputError(m_.Loc("num_hidden_layers"),
                         "without layers_block_type, Zamba2Config's default pattern has 54 layers, not " +
                             std::to_string(t.n_layers));
      }
      hybrid.resize(t.n_layers);
    }
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < t.n_layers; ++i) {
      LayerSpec l;
      l.mixer = MixerKind::kMamba2;
      l.mlp = false;
      if (hybrid[i]) {
        ids.push_back(i);
        l.hybrid = ids.size();
      }
      t.layer_specs.push_back(l);
    }
    if (m_.Has("hybrid_layer_ids") && !m_.Get("hybrid_layer_ids").IsNull()) {
      const YAML::Node& list = m_.Get("hybrid_layer_ids");
      bool same = list.IsSequence() && list.size() == ids.size();
      for (size_t i = 0; same && i < ids.size(); ++i) {
        same = ids[i] == 0 ? list[i].IsScalar() && list[i].Scalar() == "0"
                           : ReadPositiveInt(list[i], m_.file(), "a hybrid layer id") == ids[i];
      }
      if (!same) {
        throw InputError(m_.Loc("hybrid_layer_ids"),
                         "hybrid_layer_ids does not list the 'hybrid' entries of layers_block_type");
      }
    }
  }

  ConfigMap m_;
};

}  // namespace

ModelSpec ReadHfZamba2(const YAML::Node& root, const std::string& file, const std::string& /*type*/) {
  return Zamba2Reader(root, file).Read();
}

}  // namespace tally
