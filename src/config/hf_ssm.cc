// The Mamba families' config.json (transformers configuration_mamba.py, configuration_mamba2.py,
// configuration_falcon_mamba.py): an embedding, blocks of an RMSNorm and a state-space mixer
// (graph/build_ssm.cc), a final RMSNorm (norm_f) and the head, tied to the embedding unless
// tie_word_embeddings is false; and the hybrid Jamba (JambaReader below).
#include "config/hf_common.h"
#include "config/hf_families.h"
#include "config/yaml_reader.h"
#include "util/checked_math.h"

namespace tally {
namespace {

const std::vector<std::string> kUsedKeys = {"model_type",          "_name_or_path",    "vocab_size", "hidden_size",
                                            "num_hidden_layers",   "n_layer",          "state_size", "expand",
                                            "conv_kernel",         "time_step_rank",   "use_bias",   "use_conv_bias",
                                            "hidden_act",          "num_heads",        "head_dim",   "n_groups",
                                            "tie_word_embeddings", "torch_dtype",      "dtype",      "rms_norm",
                                            "norm_before_gate",    "intermediate_size"};

// Mamba's config.json has no context length, and a Mamba runs any length: the sequence length
// tally assumes when --seq is not given (Gu & Dao 2023 train their language models at 2048).
constexpr uint64_t kDefaultSsmSeq = 2048;

class SsmReader {
 public:
  SsmReader(const YAML::Node& root, const std::string& file)
      : m_(root, file, "config.json", kUsedKeys, UnknownKeys::kIgnore) {}

  ModelSpec Read(const std::string& type) {
    ModelSpec spec = HfModelSpec(m_, Family::kTransformer, type);
    TransformerSpec& t = spec.transformer;
    const std::string act = m_.String("hidden_act", "silu");
    if (act != "silu") throw InputError(m_.Loc("hidden_act"), "unsupported hidden_act '" + act + "'; tally reads silu");
    if (!m_.Bool("rms_norm", true)) throw InputError(m_.Loc("rms_norm"), "'rms_norm: false' is not supported");
    const bool mamba2 = type == "mamba2";
    const bool falcon = type == "falcon_mamba";
    t.vocab_size = m_.PositiveInt("vocab_size", mamba2 ? 32768 : 50280);
    t.d_model = m_.PositiveInt("hidden_size", mamba2 ? 4096 : 768);
    t.n_layers = m_.Has("num_hidden_layers") || !m_.Has("n_layer")
                     ? m_.PositiveInt("num_hidden_layers", mamba2 ? 64 : 32)
                     : m_.PositiveInt("n_layer");
    t.context_length = kDefaultSsmSeq;  // --seq's default only (config/resolve.cc says so)
    t.position = PositionKind::kNone;
    t.norm = NormKind::kRmsNorm;
    t.tied_embeddings = m_.Bool("tie_word_embeddings", !mamba2);
    SsmSpec& s = t.ssm;
    s.kind = mamba2 ? MixerKind::kMamba2 : MixerKind::kMamba;
    s.d_state = m_.PositiveInt("state_size", mamba2 ? 128 : 16);
    s.conv_kernel = m_.PositiveInt("conv_kernel", 4);
    s.proj_bias = m_.Bool("use_bias", false);
    s.conv_bias = m_.Bool("use_conv_bias", true);
    // FalconMambaConfig keeps a config's own intermediate_size (falcon-mamba-7b: 8192 beside an
    // expand of 16); MambaConfig recomputes it from expand.
    s.d_inner = falcon && m_.Has("intermediate_size") ? m_.PositiveInt("intermediate_size") : InnerWidth(t.d_model);
    // modular_falcon_mamba.py, FalconMambaMixer: RMSNorms without weights over B, C and Δ after
    // x_proj (rms_forward; b_c_rms and dt_rms are non-persistent buffers of ones).
    s.unit_inner_norms = falcon;
    if (mamba2) {
      Mamba2Heads(s);
    } else {
      s.dt_rank = DtRank(t.d_model);
    }
    return spec;
  }

 private:
  // configuration_mamba*.py: intermediate_size = int(expand · hidden_size); a config's own
  // intermediate_size is not read.
  uint64_t InnerWidth(uint64_t h) const {
    if (!m_.Has("expand")) return CheckedMul(2, h, "the inner width");
    const YAML::Node& e = m_.Get("expand");
    double expand = 0;
    if (!e.IsScalar() || !YAML::convert<double>::decode(e, expand) || !(expand > 0) || expand > 1e6) {
      throw InputError(m_.Loc("expand"), "'expand' must be a positive number, not " + Describe(e));
    }
    const double inner = expand * static_cast<double>(h);
    if (inner < 1) throw InputError(m_.Loc("expand"), "'expand' leaves no inner channels");
    return static_cast<uint64_t>(inner);  // int() truncates
  }

  // time_step_rank: "auto" is ceil(hidden_size / 16).
  uint64_t DtRank(uint64_t h) const {
    if (!m_.Has("time_step_rank") ||
        (m_.Get("time_step_rank").IsScalar() && m_.Get("time_step_rank").Scalar() == "auto")) {
      return (h + 15) / 16;
    }
    return m_.PositiveInt("time_step_rank");
  }

  // Mamba2Mixer: num_heads heads of head_dim channels make up d_inner; n_groups groups share B and C.
  void Mamba2Heads(SsmSpec& s) const {
    s.n_heads = m_.PositiveInt("num_heads", 128);
    const uint64_t head_dim = m_.PositiveInt("head_dim", 64);
    s.n_groups = m_.PositiveInt("n_groups", 8);
    if (CheckedMul(s.n_heads, head_dim, "the heads' width") != s.d_inner) {
      throw InputError(m_.Has("num_heads") ? m_.Loc("num_heads") : m_.MapLoc(),
                       "num_heads · head_dim (" + std::to_string(s.n_heads) + " · " + std::to_string(head_dim) +
                           ") is not expand · hidden_size (" + std::to_string(s.d_inner) + ")");
    }
    if (s.n_heads % s.n_groups != 0) {
      throw InputError(m_.Has("n_groups") ? m_.Loc("n_groups") : m_.MapLoc(),
                       "the " + std::to_string(s.n_heads) + " heads are not divisible by the " +
                           std::to_string(s.n_groups) + " groups");
    }
  }

  ConfigMap m_;
};

const std::vector<std::string> kJambaKeys = {"model_type",
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
                                             "sliding_window",
                                             "num_experts",
                                             "num_experts_per_tok",
                                             "expert_layer_period",
                                             "expert_layer_offset",
                                             "attn_layer_period",
                                             "attn_layer_offset",
                                             "mamba_d_state",
                                             "mamba_d_conv",
                                             "mamba_expand",
                                             "mamba_dt_rank",
                                             "mamba_conv_bias",
                                             "mamba_proj_bias"};

// Jamba (configuration_jamba.py, modeling_jamba.py; Lieber et al. 2024): block i has attention when
// i % attn_layer_period == attn_layer_offset, else a JambaMambaMixer (Mamba's, with RMSNorms on Δ, B
// and C); its feed-forward is JambaSparseMoeBlock when i % expert_layer_period == expert_layer_offset
// and num_experts > 1, else the dense SwiGLU MLP. Every block: input_layernorm before the mixer,
// pre_ff_layernorm before the feed-forward (RMSNorms). Attention is GQA without biases or
// positional encoding; the router has no bias; the head is untied by default. The defaults are
// JambaConfig's (those of ai21labs/Jamba-v0.1).
class JambaReader {
 public:
  JambaReader(const YAML::Node& root, const std::string& file)
      : m_(root, file, "config.json", kJambaKeys, UnknownKeys::kIgnore) {}

  ModelSpec Read() {
    ModelSpec spec = HfModelSpec(m_, Family::kTransformer, "jamba");
    TransformerSpec& t = spec.transformer;
    const std::string act = m_.String("hidden_act", "silu");
    if (act != "silu") throw InputError(m_.Loc("hidden_act"), "unsupported hidden_act '" + act + "'; tally reads silu");
    if (m_.Has("sliding_window") && !m_.Get("sliding_window").IsNull()) {
      throw InputError(m_.Loc("sliding_window"), "a sliding window on Jamba's attention layers is not modelled");
    }
    t.vocab_size = m_.PositiveInt("vocab_size", 65536);
    t.d_model = m_.PositiveInt("hidden_size", 4096);
    t.d_ff = m_.PositiveInt("intermediate_size", 14336);
    t.n_layers = m_.PositiveInt("num_hidden_layers", 32);
    if (t.n_layers > kMaxLayerSpecs) {
      throw InputError(m_.Loc("num_hidden_layers"), "more than " + std::to_string(kMaxLayerSpecs) + " layers");
    }
    t.n_heads = m_.PositiveInt("num_attention_heads", 32);
    t.n_kv_heads = m_.PositiveInt("num_key_value_heads", 8);
    if (t.d_model % t.n_heads != 0) {
      throw InputError(m_.Has("num_attention_heads") ? m_.Loc("num_attention_heads") : m_.MapLoc(),
                       "hidden_size " + std::to_string(t.d_model) + " is not divisible by the " +
                           std::to_string(t.n_heads) + " attention heads");
    }
    if (t.n_heads % t.n_kv_heads != 0) {
      throw InputError(m_.Has("num_key_value_heads") ? m_.Loc("num_key_value_heads") : m_.MapLoc(),
                       "the " + std::to_string(t.n_heads) + " attention heads are not divisible by the " +
                           std::to_string(t.n_kv_heads) + " key/value heads");
    }
    t.head_dim = t.d_model / t.n_heads;
    t.context_length = m_.PositiveInt("max_position_embeddings", 262144);
    t.position = PositionKind::kNone;
    t.norm = NormKind::kRmsNorm;
    t.mlp = MlpKind::kSwiglu;
    t.qkv_bias = t.out_bias = t.mlp_bias = false;
    t.tied_embeddings = m_.Bool("tie_word_embeddings", false);
    const uint64_t experts = m_.PositiveInt("num_experts", 16);
    if (experts > 1) {
      t.n_experts = experts;
      t.top_k = m_.PositiveInt("num_experts_per_tok", 2);
      if (t.top_k > experts) {
        throw InputError(m_.Loc("num_experts_per_tok"), "num_experts_per_tok " + std::to_string(t.top_k) +
                                                            " exceeds the " + std::to_string(experts) + " experts");
      }
    }
    SsmSpec& s = t.ssm;
    s.kind = MixerKind::kMamba;
    s.inner_norms = true;
    s.d_state = m_.PositiveInt("mamba_d_state", 16);
    s.conv_kernel = m_.PositiveInt("mamba_d_conv", 4);
    s.d_inner = CheckedMul(m_.PositiveInt("mamba_expand", 2), t.d_model, "the inner width");
    const YAML::Node* rank = m_.Has("mamba_dt_rank") ? &m_.Get("mamba_dt_rank") : nullptr;
    s.dt_rank = rank == nullptr || (rank->IsScalar() && rank->Scalar() == "auto") ? (t.d_model + 15) / 16
                                                                                  : m_.PositiveInt("mamba_dt_rank");
    s.conv_bias = m_.Bool("mamba_conv_bias", true);
    s.proj_bias = m_.Bool("mamba_proj_bias", false);
    const auto [attn_period, attn_offset] = Pattern("attn_layer_period", 8, "attn_layer_offset", 4);
    const auto [moe_period, moe_offset] = Pattern("expert_layer_period", 2, "expert_layer_offset", 1);
    for (uint64_t i = 0; i < t.n_layers; ++i) {
      LayerSpec l;
      l.mixer = i % attn_period == attn_offset ? MixerKind::kAttention : MixerKind::kMamba;
      l.moe = t.n_experts > 0 && i % moe_period == moe_offset;
      t.layer_specs.push_back(l);
    }
    return spec;
  }

 private:
  // A period and an offset below it (JambaConfig._check_supported_offset).
  std::pair<uint64_t, uint64_t> Pattern(const std::string& period_key, uint64_t period_default,
                                        const std::string& offset_key, uint64_t offset_default) const {
    const uint64_t period = m_.PositiveInt(period_key, period_default);
    const uint64_t offset = m_.NonNegativeInt(offset_key, offset_default);
    if (offset >= period) {
      throw InputError(m_.Has(offset_key) ? m_.Loc(offset_key) : m_.MapLoc(),
                       offset_key + " " + std::to_string(offset) + " must be smaller than " + period_key + " " +
                           std::to_string(period));
    }
    return {period, offset};
  }

  ConfigMap m_;
};

}  // namespace

ModelSpec ReadHfMamba(const YAML::Node& root, const std::string& file, const std::string& type) {
  return SsmReader(root, file).Read(type);
}

ModelSpec ReadHfJamba(const YAML::Node& root, const std::string& file, const std::string& /*type*/) {
  return JambaReader(root, file).Read();
}

}  // namespace tally
