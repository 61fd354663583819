// The machinery every Hugging Face transformer family reader shares (config/hf_reader.h).
#include "config/hf_reader.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "config/hf_common.h"
#include "util/checked_math.h"

namespace tally {

namespace {

// Every config key any family reader uses; the rest of a config.json is ignored. The list keeps a
// config of many keys linear to read (ConfigMap looks each key up in it).
const std::vector<std::string> kUsedKeys = {
    "model_type", "_name_or_path", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings", "tie_word_embeddings",
    "torch_dtype", "attention_bias", "mlp_bias", "sliding_window", "use_sliding_window", "num_local_experts",
    "num_experts_per_tok", "partial_rotary_factor", "qk_layernorm", "n_positions", "n_ctx", "n_embd", "n_layer",
    "n_head", "n_inner", "resid_pdrop", "multi_query", "new_decoder_architecture", "parallel_attn", "bias",
    "num_kv_heads", "alibi", "ffn_hidden_size", "ffn_dim", "word_embed_proj_dim", "do_layer_norm_before", "enable_bias",
    "layer_norm_elementwise_affine", "dropout", "rotary_pct", "use_parallel_residual", "n_embed", "seq_length",
    // issue 14's families
    "layer_types", "sliding_window_pattern", "max_window_layers", "num_experts", "moe_intermediate_size",
    "decoder_sparse_step", "mlp_only_layers", "intermediate_size_mlp", "moe_layers", "interleave_moe_layer_step",
    "attention_chunk_size", "no_rope_layers", "no_rope_layer_interval", "n_routed_experts", "n_shared_experts",
    "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "num_nextn_predict_layers", "topk_method", "lm_head_bias", "use_qk_norm", "use_bias", "n_head_kv",
    "multi_query_group_num", "attn_config", "rotary_dim", "rope_parameters", "text_config", "dtype",
    // encoders (issue 16)
    "architectures", "type_vocab_size", "hidden_act", "hidden_dropout_prob", "id2label", "num_labels", "dim",
    "hidden_dim", "n_layers", "n_heads", "activation", "sinusoidal_pos_embds", "position_embedding_type", "image_size",
    "patch_size", "num_channels", "qkv_bias",
    // encoder–decoders (issue 16)
    "d_model", "d_kv", "d_ff", "num_layers", "num_decoder_layers", "num_heads", "relative_attention_num_buckets",
    "feed_forward_proj", "dropout_rate", "encoder_layers", "decoder_layers", "encoder_attention_heads",
    "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "activation_function", "attention_dropout",
    "activation_dropout", "normalize_before", "add_final_layer_norm", "scale_embedding", "num_mel_bins",
    "max_source_positions", "max_target_positions",
    // vision towers (issue 16)
    "vision_config", "mm_tokens_per_image", "vision_feature_layer", "vision_feature_select_strategy",
    "projector_hidden_act", "multimodal_projector_bias",
    // issue 30's dense decoders
    "attention_out_bias",
    // MoE families (issue 30)
    "shared_expert_intermediate_size", "max_seq_len", "ffn_config", "moe_num_experts", "moe_k",
    "moe_num_shared_experts", "moe_layer_start_index", "moe_layer_end_index", "moe_layer_interval", "moe_topk",
    "num_shared_expert", "num_shared_experts", "use_qkv_bias", "qk_norm_type", "shared_intermediate_size",
    "attn_type_list",
    // hybrid and recurrent families (issue 30)
    "full_attention_interval", "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim",
    "linear_num_key_heads", "linear_num_value_heads", "mtp_num_hidden_layers", "lru_width", "attention_window_size",
    "conv1d_width", "block_types", "_block_types", "hidden_activation", "mamba_d_state", "mamba_d_conv",
    "mamba_conv_bias", "mamba_proj_bias", "mamba_n_groups", "mamba_expand", "mamba_n_heads", "mamba_d_head",
    "hybrid_override_pattern", "layers_block_type", "ssm_state_size", "mamba_num_heads", "mamba_head_dim", "n_groups",
    "conv_kernel", "use_conv_bias", "mlp_hidden_act", "moe_shared_expert_intermediate_size", "moe_latent_size",
    "tie_embedding", "block_ff_dim", "block_auto_adjust_ff_dim", "block_ffn_dim_multiplier", "block_multiple_of",
    "conv_L_cache", "conv_bias", "full_attn_idxs", "mamba_d_ssm", "projectors_bias", "mamba_rms_norm",
    "linear_attn_config", "num_experts_per_token", "mla_use_nope", "mla_use_output_gate", "model_max_length",
    "routed_expert_hidden_size", "block_size",
    // encoders (issue 30): modernbert, deberta-v2
    "global_attn_every_n_layers", "local_attention", "norm_bias", "classifier_bias", "classifier_activation",
    "decoder_bias", "relative_attention", "max_relative_positions", "position_buckets", "pos_att_type", "share_att_key",
    "norm_rel_ebd", "position_biased_input", "conv_kernel_size", "conv_groups", "embedding_size", "attention_head_size",
    "pooler_hidden_size",
    // multimodal (issue 30)
    "cross_attention_layers"};

// `key`'s positive value; else `fallback`, or a missing key when it is 0.
uint64_t PositiveOr(const ConfigMap& m, const std::string& key, uint64_t fallback) {
  return fallback > 0 ? m.PositiveInt(key, fallback) : m.PositiveInt(key);
}

// The model types whose modeling file holds q, k and v as one nn.Linear (the rest hold three):
// modeling_gpt2.py c_attn, modeling_gpt_bigcode.py c_attn, modeling_gpt_neox.py query_key_value,
// modeling_bloom.py query_key_value, modeling_falcon.py query_key_value, modeling_dbrx.py Wqkv,
// InternLM2's wqkv, modeling_phi3.py qkv_proj, Ling's (bailing_moe_v2) query_key_value,
// modeling_modernbert.py Wqkv, phi-2's original remote code (phi-msft) Wqkv.
bool HfStoresFusedQkv(const std::string& model_type) {
  static const std::set<std::string> kFused = {"gpt2",       "gpt_bigcode",     "gpt_neox", "bloom",     "falcon",
                                               "RefinedWeb", "RefinedWebModel", "dbrx",     "internlm2", "phi3",
                                               "modernbert", "bailing_moe_v2",  "phi-msft"};
  return kFused.count(model_type) > 0;
}

// The model types whose MLP holds gate and up as one nn.Linear, gate_up_proj: modeling_phi3.py
// Phi3MLP, and modular_glm.py / modular_glm4.py, whose GlmMLP and Glm4MLP are Phi3MLP.
bool HfStoresFusedGateUp(const std::string& model_type) {
  return model_type == "phi3" || model_type == "glm" || model_type == "glm4";
}

}  // namespace

ConfigMap HfReader::Map(const YAML::Node& node, const std::string& file, const std::string& context) {
  return ConfigMap(node, file, context, kUsedKeys, UnknownKeys::kIgnore);
}

HfReader::HfReader(const YAML::Node& root_node, const std::string& file)
    : root(root_node), m(Map(root_node, file, "config.json")) {}

ModelSpec HfReader::Read(const std::string& model_type, HfFamilyRead family) {
  spec.family = Family::kTransformer;
  spec.source = m.file();
  spec.name = Name();
  spec.description = "Hugging Face config.json, model_type " + model_type;
  t.dtype = Dtype();
  t.qkv_fused = HfStoresFusedQkv(model_type);
  t.gate_up_fused = HfStoresFusedGateUp(model_type);
  family(*this, model_type);
  Finish();
  spec.transformer = t;
  return spec;
}

std::string HfReader::Name() const {
  std::string path = m.String("_name_or_path", "");
  if (!path.empty()) return path;
  std::filesystem::path file(m.file());
  // The folder that holds a config.json names it; "./config.json" lies in the working directory.
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(file, ec).lexically_normal().parent_path();
  if (file.stem() == "config" && !dir.filename().empty()) return dir.filename().string();
  return file.stem().string();
}

std::optional<DType> HfReader::Dtype() const { return HfTorchDtype(m); }

uint64_t HfReader::Context(const char* key, uint64_t fallback) {
  if (m.Has(key)) return m.PositiveInt(key);
  if (fallback != kHfDefaultContext) return fallback;  // the family's own default
  spec.notes.push_back("'" + std::string(key) + "' is not in " + m.file() + "; assuming a context of " +
                       std::to_string(kHfDefaultContext) + " tokens");
  return kHfDefaultContext;
}

void HfReader::SetBiases(bool qkv, bool out, bool mlp) {
  t.qkv_bias = qkv;
  t.out_bias = out;
  t.mlp_bias = mlp;
}

uint64_t HfReader::Size(std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (m.Has(k)) return m.PositiveInt(k);
  }
  return m.PositiveInt(*keys.begin());
}

uint64_t HfReader::KvHeads(uint64_t heads) {
  kv_key.clear();
  for (const char* k : {"num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"}) {
    if (m.Has(k)) {
      kv_key = k;
      return m.PositiveInt(kv_key);
    }
  }
  if (m.Has("attn_config")) {  // MPT, DBRX
    ConfigMap attn(m.Get("attn_config"), m.file(), "attn_config", {"kv_n_heads"}, UnknownKeys::kIgnore);
    if (attn.Has("kv_n_heads")) return attn.PositiveInt("kv_n_heads");
  }
  if (m.Has("multi_query")) {
    kv_key = "multi_query";
    return m.Bool("multi_query", false) ? 1 : heads;
  }
  return heads;
}

void HfReader::ReadRotaryFraction(double fallback) {
  rotary_fraction = fallback;
  const ConfigMap* from = &m;
  std::optional<ConfigMap> rope;
  if (!m.Has("partial_rotary_factor") && m.Has("rope_parameters") && m.Get("rope_parameters").IsMap()) {
    rope.emplace(m.Get("rope_parameters"), m.file(), "rope_parameters",
                 std::vector<std::string>{"partial_rotary_factor"}, UnknownKeys::kIgnore);
    from = &*rope;
  }
  if (!from->Has("partial_rotary_factor")) return;
  const YAML::Node& v = from->Get("partial_rotary_factor");
  if (v.IsScalar() && (v.Scalar() == "0" || v.Scalar() == "0.0")) {
    rotary_fraction = 0;
    no_rotary_ = true;
    return;
  }
  rotary_fraction = from->Fraction("partial_rotary_factor", fallback);
}

void HfReader::ReadSizes(const HfSizeDefaults& d) {
  auto read = [this](uint64_t& out, const char* key, uint64_t fallback) {
    if (fallback != kHfOwnKey) out = PositiveOr(m, key, fallback);
  };
  read(t.vocab_size, "vocab_size", d.vocab);
  read(t.d_model, "hidden_size", d.hidden);
  read(t.d_ff, "intermediate_size", d.intermediate);
  read(t.n_layers, "num_hidden_layers", d.layers);
  read(t.n_heads, "num_attention_heads", d.heads);
}

void HfReader::ReadCommonSizes(const HfSizeDefaults& d) {
  ReadSizes(d);
  t.n_kv_heads = KvHeads(d.kv_heads > 0 ? d.kv_heads : t.n_heads);
  t.context_length =
      d.context > 0 ? m.PositiveInt("max_position_embeddings", d.context) : Context("max_position_embeddings");
  t.position = PositionKind::kRope;
}

uint64_t HfReader::UniformInt(const std::string& key, uint64_t fallback) const {
  if (!m.Has(key) || !m.Get(key).IsSequence()) return PositiveOr(m, key, fallback);
  uint64_t value = 0;
  for (const YAML::Node& v : m.Get(key)) {
    const uint64_t n = ReadPositiveInt(v, m.file(), "an entry of '" + key + "'");
    if (value != 0 && n != value) {
      throw InputError(LocOf(v, m.file()), "'" + key + "' differs between layers (" + std::to_string(value) + ", " +
                                               std::to_string(n) + "); tally reads one value for every layer");
    }
    value = n;
  }
  if (value == 0) throw InputError(m.Loc(key), "'" + key + "' is an empty list");
  return value;
}

std::vector<uint64_t> HfReader::IntList(const std::string& key, uint64_t below) const {
  std::vector<uint64_t> out;
  if (!m.Has(key)) return out;
  const YAML::Node& list = m.Get(key);
  if (!list.IsSequence()) throw InputError(m.Loc(key), "'" + key + "' must be a list, got " + Describe(list));
  for (const YAML::Node& v : list) {
    uint64_t n = v.IsScalar() && v.Scalar() == "0" ? 0 : ReadPositiveInt(v, m.file(), "an entry of '" + key + "'");
    if (n >= below) {
      throw InputError(LocOf(v, m.file()),
                       "'" + key + "' has " + std::to_string(n) + ", past the " + std::to_string(below) + " layers");
    }
    out.push_back(n);
  }
  return out;
}

void HfReader::PerLayer() const {
  if (t.n_layers > kMaxLayerSpecs) {
    throw InputError(m.Loc("num_hidden_layers"), "layers that differ are read for at most " +
                                                     std::to_string(kMaxLayerSpecs) + " layers, got " +
                                                     std::to_string(t.n_layers));
  }
}

void HfReader::UniformAttention(AttentionKind kind, uint64_t window) {
  if (m.Has("layer_types")) {
    Attention(window, 0, [kind](uint64_t) { return kind; });
    return;
  }
  uniform_ = kind;
  window_ = window;
}

// layer_types, one entry per layer; a mixer type (mixer_types) sets the layer's mixer instead.
std::vector<AttentionKind> HfReader::LayerTypes() {
  const YAML::Node& list = m.Get("layer_types");
  if (!list.IsSequence() || list.size() != t.n_layers) {
    throw InputError(m.Loc("layer_types"),
                     "'layer_types' must list the " + std::to_string(t.n_layers) + " layers, got " + Describe(list));
  }
  std::vector<AttentionKind> kinds(t.n_layers, AttentionKind::kFull);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string v = list[i].IsScalar() ? list[i].Scalar() : "";
    const auto mixer =
        std::find_if(mixer_types.begin(), mixer_types.end(), [&](const auto& type) { return type.first == v; });
    if (mixer != mixer_types.end()) {
      mixers.resize(t.n_layers, MixerKind::kAttention);
      mixers[i] = mixer->second;
      continue;
    }
    if (v == "full_attention")
      kinds[i] = AttentionKind::kFull;
    else if (v == "sliding_attention")
      kinds[i] = AttentionKind::kSliding;
    else if (v == "chunked_attention")
      kinds[i] = AttentionKind::kChunked;
    else
      throw InputError(LocOf(list[i], m.file()), "unsupported layer type " + Describe(list[i]) +
                                                     "; tally reads full_attention, sliding_attention" +
                                                     MixerTypeNames());
  }
  return kinds;
}

std::string HfReader::MixerTypeNames() const {
  std::vector<std::string> names = {"chunked_attention"};
  for (const auto& type : mixer_types) names.push_back(type.first);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

void HfReader::SetLayerKinds(const std::vector<AttentionKind>& kinds, uint64_t window, uint64_t chunk) {
  kinds_ = kinds;
  window_ = window;
  chunk_ = chunk;
  for (AttentionKind k : kinds_) {
    if (k == AttentionKind::kSliding && window == 0) {
      throw InputError(m.MapLoc(), "sliding-attention layers need a 'sliding_window'");
    }
    if (k == AttentionKind::kChunked && chunk == 0) {
      throw InputError(m.MapLoc(), "chunked-attention layers need an 'attention_chunk_size'");
    }
  }
}

void HfReader::Pattern(uint64_t window, uint64_t pattern) {
  Attention(window, 0,
            [&](uint64_t i) { return (i + 1) % pattern != 0 ? AttentionKind::kSliding : AttentionKind::kFull; });
}

void HfReader::ReadMoe(const char* experts_key) {
  t.n_experts = m.PositiveInt(experts_key);
  t.top_k = m.PositiveInt("num_experts_per_tok");
  if (t.top_k > t.n_experts) {
    throw InputError(m.Loc("num_experts_per_tok"),
                     "'num_experts_per_tok' is more than '" + std::string(experts_key) + "'");
  }
}

void HfReader::ReadDeepSeekMoe(bool layer_freq) {
  ReadMoe("n_routed_experts");
  t.moe_d_ff = m.PositiveInt("moe_intermediate_size");
  t.shared_expert_d_ff = CheckedMul(m.NonNegativeInt("n_shared_experts", 0), t.moe_d_ff, "the shared experts");
  const uint64_t first = m.NonNegativeInt("first_k_dense_replace", 0);
  const uint64_t freq = layer_freq ? m.PositiveInt("moe_layer_freq", 1) : 1;
  if (first > 0 || freq > 1) {
    PerLayer();
    moe.assign(t.n_layers, false);
    for (uint64_t i = first; i < t.n_layers; ++i) moe[i] = i % freq == 0;
  }
}

std::string HfReader::Architecture() const {
  if (!m.Has("architectures")) return "";
  const YAML::Node& list = m.Get("architectures");
  if (!list.IsSequence()) {
    throw InputError(m.Loc("architectures"), "'architectures' must be a list, got " + Describe(list));
  }
  if (list.size() == 0) return "";
  if (!list[0].IsScalar()) {
    throw InputError(LocOf(list[0], m.file()), "an entry of 'architectures' must be a name, got " + Describe(list[0]));
  }
  return list[0].Scalar();
}

MlpKind HfReader::EncoderActivation(const char* key) {
  const std::string act = m.String(key, "gelu");
  if (act == "relu") return MlpKind::kRelu;
  if (act.rfind("gelu", 0) == 0) return MlpKind::kGelu;
  throw InputError(m.Loc(key), "unsupported activation '" + act + "'; tally reads gelu and relu here");
}

void HfReader::SiluGatedMlp() {
  const std::string act = m.String("hidden_act", "silu");
  if (act != "silu") throw InputError(m.Loc("hidden_act"), "unsupported hidden_act '" + act + "'; tally reads silu");
  t.mlp = MlpKind::kSwiglu;
}

// Derived sizes and the checks a tally config gets too.
void HfReader::Finish() {
  // transformers' gelu_new, whichever key names the activation (TransformerSpec::gelu_in_ops).
  for (const char* key : {"activation_function", "hidden_act"}) {
    if (m.Has(key) && m.String(key, "") == "gelu_new") t.gelu_in_ops = true;
  }
  if (t.n_kv_heads == 0) t.n_kv_heads = t.n_heads;  // families without grouped attention
  if (t.head_dim == 0) {
    if (t.d_model % t.n_heads != 0) {
      const char* heads = m.Has("n_head") ? "n_head" : m.Has("n_heads") ? "n_heads" : "num_attention_heads";
      throw InputError(m.Loc(heads), "the hidden size (" + std::to_string(t.d_model) +
                                         ") is not divisible by the number of heads (" + std::to_string(t.n_heads) +
                                         ")");
    }
    t.head_dim = t.d_model / t.n_heads;
  }
  if (t.n_heads % t.n_kv_heads != 0) {
    throw InputError(!kv_key.empty() && m.Has(kv_key) ? m.Loc(kv_key) : m.MapLoc(),
                     "the " + std::to_string(t.n_heads) + " attention heads are not divisible by the " +
                         std::to_string(t.n_kv_heads) + " key/value heads");
  }
  // transformers: rotary_ndims = int(head_dim * partial_rotary_factor); none rotated is no RoPE.
  if (rotary_fraction > 0) t.rotary_dim = static_cast<uint64_t>(static_cast<double>(t.head_dim) * rotary_fraction);
  if (no_rotary_ || (t.position == PositionKind::kRope && rotary_fraction > 0 && t.rotary_dim == 0)) {
    t.position = PositionKind::kNone;
    t.rotary_dim = 0;
  }
  Layers();
}

// TransformerSpec::layer_specs from each layer's attention and MoE, left empty when the blocks
// are what the uniform fields already say.
void HfReader::Layers() {
  if (kinds_.empty() && moe.empty() && mixers.empty() && mlps.empty()) {  // every block alike: LayerRuns' uniform
    t.sliding_window = uniform_ == AttentionKind::kSliding ? window_ : 0;
    return;
  }
  PerLayer();
  if (kinds_.empty()) kinds_.assign(t.n_layers, uniform_);
  if (moe.empty()) moe.assign(t.n_layers, t.n_experts > 0);
  std::vector<LayerSpec> specs;
  for (uint64_t i = 0; i < t.n_layers; ++i) {
    LayerSpec l;
    l.attention = kinds_[i];
    l.span = kinds_[i] == AttentionKind::kSliding ? window_ : kinds_[i] == AttentionKind::kChunked ? chunk_ : 0;
    l.moe = moe[i];
    if (!mixers.empty()) l.mixer = mixers[i];
    if (!mlps.empty()) l.mlp = mlps[i];
    specs.push_back(l);
  }
  // A window that no layer uses is no window.
  const bool any_sliding = std::find(kinds_.begin(), kinds_.end(), AttentionKind::kSliding) != kinds_.end();
  t.sliding_window = any_sliding ? window_ : 0;
  t.layer_specs = specs;
  const std::vector<std::pair<LayerSpec, uint64_t>> runs = LayerRuns(t);
  t.layer_specs.clear();
  if (LayerRuns(t) != runs) t.layer_specs = std::move(specs);
}

}  // namespace tally
