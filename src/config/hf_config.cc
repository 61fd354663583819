// Each family's layout follows its modeling file in huggingface/transformers
// (src/transformers/models/<family>/modeling_<family>.py), cited per reader below.
#include "config/hf_config.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "config/hf_common.h"
#include "config/hf_ssm.h"
#include "config/hf_vision.h"
#include "config/names.h"
#include "config/yaml_reader.h"
#include "util/checked_math.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// Every config key any family reader uses; the rest of a config.json is ignored.
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
    "projector_hidden_act", "multimodal_projector_bias"};

// HF config defaults when a key is absent: the Python config classes' defaults.
constexpr uint64_t kDefaultContext = 2048;

// Model types that wrap a language model in `text_config` (multimodal checkpoints): the type of
// the language model inside when the text_config does not say.
const std::vector<std::pair<std::string, std::string>> kWrappers = {
    {"gemma3", "gemma3_text"}, {"llama4", "llama4_text"}, {"llava", "llama"}};

class HfReader {
 public:
  HfReader(const YAML::Node& root, const std::string& file)
      : root_(root), m_(root, file, "config.json", kUsedKeys, UnknownKeys::kIgnore) {}

  ModelSpec Read(const std::string& model_type) {
    spec_.family = Family::kTransformer;
    spec_.source = m_.file();
    spec_.name = Name();
    spec_.description = "Hugging Face config.json, model_type " + model_type;
    t_.dtype = Dtype();
    std::string type = model_type;
    for (const auto& [wrapper, inner] : kWrappers) {
      if (type != wrapper) continue;
      // The language model is counted from text_config; the top level keeps the head tying.
      const YAML::Node text = m_.Get("text_config");
      outer_tied_ =
          m_.Has("tie_word_embeddings") ? std::optional<bool>(m_.Bool("tie_word_embeddings", false)) : std::nullopt;
      if (!t_.dtype) t_.dtype = Dtype();
      // Gemma 3's SigLIP and Llama 4's vision model with their projectors (config/hf_vision.h).
      const bool vision = m_.Has("vision_config");
      if (vision) {
        t_.vision = wrapper == "gemma3"  ? ReadGemma3Vision(root_, m_.file())
                    : wrapper == "llava" ? ReadLlavaVision(root_, m_.file())
                                         : ReadLlama4Vision(root_, m_.file());
      }
      llama_defaults_ = wrapper == "llava";
      root_ = text;
      m_ = ConfigMap(text, m_.file(), "text_config", kUsedKeys, UnknownKeys::kIgnore);
      type = m_.String("model_type", inner);
      if (type != "gemma3_text" && type != "llama4_text") type = inner;  // the wrapper's own language model
      if (!t_.dtype) t_.dtype = Dtype();
      if (!vision) {
        spec_.notes.push_back("the vision parameters of this " + model_type +
                              " checkpoint are not included: tally counts its language model (text_config)");
      }
    }
    if (type == "bert" || type == "roberta" || type == "xlm-roberta")
      Bert(type);
    else if (type == "distilbert")
      DistilBert();
    else if (type == "t5" || type == "mt5" || type == "umt5")
      T5(type);
    else if (type == "bart")
      Bart();
    else if (type == "whisper")
      Whisper();
    else if (type == "gpt2" || type == "gpt_bigcode")
      Gpt2(type);
    else if (type == "phi")
      Phi();
    else if (type == "phi-msft")
      PhiMsft();
    else if (type == "falcon" || type == "RefinedWebModel" || type == "RefinedWeb")
      Falcon(type);
    else if (type == "opt")
      Opt();
    else if (type == "gpt_neox")
      GptNeox();
    else if (type == "bloom")
      Bloom();
    else if (type == "gptj")
      Gptj();
    else if (type == "starcoder2")
      Starcoder2();
    else if (type == "cohere" || type == "cohere2")
      Cohere(type);
    else if (type == "deepseek_v2" || type == "deepseek_v3")
      DeepSeek(type);
    else
      LlamaLike(type);
    Finish();
    spec_.transformer = t_;
    return spec_;
  }

 private:
  std::string Name() const {
    std::string path = m_.String("_name_or_path", "");
    if (!path.empty()) return path;
    std::filesystem::path file(m_.file());
    // The folder that holds a config.json names it; "./config.json" lies in the working directory.
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::absolute(file, ec).lexically_normal().parent_path();
    if (file.stem() == "config" && !dir.filename().empty()) return dir.filename().string();
    return file.stem().string();
  }

  std::optional<DType> Dtype() const { return HfTorchDtype(m_); }

  uint64_t Context(const char* key, uint64_t fallback = kDefaultContext) {
    if (m_.Has(key)) return m_.PositiveInt(key);
    if (fallback != kDefaultContext) return fallback;  // the family's own default
    spec_.notes.push_back("'" + std::string(key) + "' is not in " + m_.file() + "; assuming a context of " +
                          std::to_string(kDefaultContext) + " tokens");
    return kDefaultContext;
  }

  void SetBiases(bool qkv, bool out, bool mlp) {
    t_.qkv_bias = qkv;
    t_.out_bias = out;
    t_.mlp_bias = mlp;
  }

  // The first of `keys` the config has, else "".
  std::string FirstOf(std::initializer_list<const char*> keys) const {
    for (const char* k : keys) {
      if (m_.Has(k)) return k;
    }
    return "";
  }

  uint64_t Size(std::initializer_list<const char*> keys) {
    const std::string key = FirstOf(keys);
    return m_.PositiveInt(key.empty() ? *keys.begin() : key);
  }

  // The key/value heads under any of their spellings; `heads` when none is given (multi-head).
  uint64_t KvHeads(uint64_t heads) {
    kv_key_ = FirstOf({"num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num"});
    if (!kv_key_.empty()) return m_.PositiveInt(kv_key_);
    if (m_.Has("attn_config")) {  // MPT, DBRX
      ConfigMap attn(m_.Get("attn_config"), m_.file(), "attn_config", {"kv_n_heads"}, UnknownKeys::kIgnore);
      if (attn.Has("kv_n_heads")) return attn.PositiveInt("kv_n_heads");
    }
    if (m_.Has("multi_query")) {
      kv_key_ = "multi_query";
      return m_.Bool("multi_query", false) ? 1 : heads;
    }
    return heads;
  }

  // partial_rotary_factor at the top level or, in transformers v5, inside rope_parameters; 0 means
  // no rotated dimensions.
  void ReadRotaryFraction(double fallback) {
    rotary_fraction_ = fallback;
    const ConfigMap* from = &m_;
    std::optional<ConfigMap> rope;
    if (!m_.Has("partial_rotary_factor") && m_.Has("rope_parameters") && m_.Get("rope_parameters").IsMap()) {
      rope.emplace(m_.Get("rope_parameters"), m_.file(), "rope_parameters",
                   std::vector<std::string>{"partial_rotary_factor"}, UnknownKeys::kIgnore);
      from = &*rope;
    }
    if (!from->Has("partial_rotary_factor")) return;
    const YAML::Node& v = from->Get("partial_rotary_factor");
    if (v.IsScalar() && (v.Scalar() == "0" || v.Scalar() == "0.0")) {
      rotary_fraction_ = 0;
      no_rotary_ = true;
      return;
    }
    rotary_fraction_ = from->Fraction("partial_rotary_factor", fallback);
  }

  // The sizes most families name alike (Llama, Phi, GPT-NeoX), and their rotary positions.
  void ReadCommonSizes(uint64_t vocab_fallback = 0, uint64_t context_fallback = kDefaultContext) {
    t_.vocab_size = vocab_fallback > 0 ? m_.PositiveInt("vocab_size", vocab_fallback) : m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("hidden_size");
    t_.d_ff = m_.PositiveInt("intermediate_size");
    t_.n_layers = m_.PositiveInt("num_hidden_layers");
    t_.n_heads = m_.PositiveInt("num_attention_heads");
    t_.n_kv_heads = KvHeads(t_.n_heads);
    t_.context_length = Context("max_position_embeddings", context_fallback);
    t_.position = PositionKind::kRope;
  }

  // configuration_llama.py's defaults, on which LLaVA's text_config relies (llava-1.5's names only what
  // differs from them).
  void ReadLlamaDefaults() {
    t_.vocab_size = m_.PositiveInt("vocab_size", 32000);
    t_.d_model = m_.PositiveInt("hidden_size", 4096);
    t_.d_ff = m_.PositiveInt("intermediate_size", 11008);
    t_.n_layers = m_.PositiveInt("num_hidden_layers", 32);
    t_.n_heads = m_.PositiveInt("num_attention_heads", 32);
    t_.n_kv_heads = KvHeads(t_.n_heads);
    t_.context_length = m_.PositiveInt("max_position_embeddings", 2048);
    t_.position = PositionKind::kRope;
  }

  // A list of whole numbers (mlp_only_layers, moe_layers, no_rope_layers), each < `below`.
  std::vector<uint64_t> IntList(const std::string& key, uint64_t below) const {
    std::vector<uint64_t> out;
    if (!m_.Has(key)) return out;
    const YAML::Node& list = m_.Get(key);
    if (!list.IsSequence()) throw InputError(m_.Loc(key), "'" + key + "' must be a list, got " + Describe(list));
    for (const YAML::Node& v : list) {
      uint64_t n = v.IsScalar() && v.Scalar() == "0" ? 0 : ReadPositiveInt(v, m_.file(), "an entry of '" + key + "'");
      if (n >= below) {
        throw InputError(LocOf(v, m_.file()),
                         "'" + key + "' has " + std::to_string(n) + ", past the " + std::to_string(below) + " layers");
      }
      out.push_back(n);
    }
    return out;
  }

  // Each layer's attention: `layer_types` when the config has it, else `rule(i)`.
  // Per-layer patterns are spelled out layer by layer: a bound keeps a corrupt depth from
  // exhausting memory.
  void PerLayer() const {
    if (t_.n_layers > kMaxLayerSpecs) {
      throw InputError(m_.Loc("num_hidden_layers"), "layers that differ are read for at most " +
                                                        std::to_string(kMaxLayerSpecs) + " layers, got " +
                                                        std::to_string(t_.n_layers));
    }
  }

  // Every layer alike (unless layer_types says otherwise): full, sliding(window) or latent.
  void UniformAttention(AttentionKind kind, uint64_t window) {
    if (m_.Has("layer_types")) {
      Attention(window, 0, [kind](uint64_t) { return kind; });
      return;
    }
    uniform_ = kind;
    window_ = window;
  }

  template <class Rule>
  void Attention(uint64_t window, uint64_t chunk, Rule rule) {
    PerLayer();
    kinds_.assign(t_.n_layers, AttentionKind::kFull);
    if (m_.Has("layer_types")) {
      const YAML::Node& list = m_.Get("layer_types");
      if (!list.IsSequence() || list.size() != t_.n_layers) {
        throw InputError(m_.Loc("layer_types"), "'layer_types' must list the " + std::to_string(t_.n_layers) +
                                                    " layers, got " + Describe(list));
      }
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string v = list[i].IsScalar() ? list[i].Scalar() : "";
        if (v == "full_attention")
          kinds_[i] = AttentionKind::kFull;
        else if (v == "sliding_attention")
          kinds_[i] = AttentionKind::kSliding;
        else if (v == "chunked_attention")
          kinds_[i] = AttentionKind::kChunked;
        else
          throw InputError(LocOf(list[i], m_.file()), "unsupported layer type " + Describe(list[i]) +
                                                          "; tally reads full_attention, sliding_attention "
                                                          "and chunked_attention");
      }
    } else {
      for (uint64_t i = 0; i < t_.n_layers; ++i) kinds_[i] = rule(i);
    }
    window_ = window;
    chunk_ = chunk;
    for (AttentionKind k : kinds_) {
      if (k == AttentionKind::kSliding && window == 0) {
        throw InputError(m_.MapLoc(), "sliding-attention layers need a 'sliding_window'");
      }
      if (k == AttentionKind::kChunked && chunk == 0) {
        throw InputError(m_.MapLoc(), "chunked-attention layers need an 'attention_chunk_size'");
      }
    }
  }

  // Sliding on every layer but each `pattern`-th (Gemma 2 with 2, Gemma 3 with 6, Cohere2 with 4).
  void Pattern(uint64_t window, uint64_t pattern) {
    Attention(window, 0,
              [&](uint64_t i) { return (i + 1) % pattern != 0 ? AttentionKind::kSliding : AttentionKind::kFull; });
  }

  void ReadMoe(const char* experts_key) {
    t_.n_experts = m_.PositiveInt(experts_key);
    t_.top_k = m_.PositiveInt("num_experts_per_tok");
    if (t_.top_k > t_.n_experts) {
      throw InputError(m_.Loc("num_experts_per_tok"),
                       "'num_experts_per_tok' is more than '" + std::string(experts_key) + "'");
    }
  }

  // modeling_llama.py and its descendants: RMSNorm, RoPE, gated MLP, GQA, untied by default.
  void LlamaLike(const std::string& type) {
    // Gemma3TextConfig's defaults: a vocabulary of 262,208 and 131,072 positions.
    if (type == "gemma3_text")
      ReadCommonSizes(262'208, 131'072);
    else if (llama_defaults_)
      ReadLlamaDefaults();
    else
      ReadCommonSizes();
    t_.head_dim = m_.PositiveInt("head_dim", 0);
    t_.norm = NormKind::kRmsNorm;
    const bool gemma = type == "gemma" || type == "gemma2" || type == "gemma3_text";
    // modeling_gemma.py: GeGLU, head tied to the embedding; the RMSNorm's (1 + w) is still h weights.
    t_.mlp = gemma ? MlpKind::kGeglu : MlpKind::kSwiglu;
    t_.tied_embeddings = outer_tied_.value_or(m_.Bool("tie_word_embeddings", gemma));
    if (m_.Has("tie_word_embeddings")) t_.tied_embeddings = m_.Bool("tie_word_embeddings", gemma);
    const bool attention_bias = m_.Bool("attention_bias", false);
    // modeling_qwen2.py: q, k and v projections carry biases, o does not; there is no key for it.
    if (type == "qwen2")
      SetBiases(true, false, false);
    else
      SetBiases(attention_bias, attention_bias, m_.Bool("mlp_bias", false));
    ReadRotaryFraction(0);
    const uint64_t window = m_.PositiveInt("sliding_window", 0);
    if (type == "qwen2" || type == "qwen3" || type == "qwen3_moe") {
      // configuration_qwen3.py: with use_sliding_window, the layers from max_window_layers on slide.
      const bool slide = m_.Bool("use_sliding_window", false);
      const uint64_t first = m_.NonNegativeInt("max_window_layers", t_.n_layers);
      if (slide && window > 0 && first < t_.n_layers) {
        Attention(window, 0, [&](uint64_t i) { return i >= first ? AttentionKind::kSliding : AttentionKind::kFull; });
      } else {
        UniformAttention(AttentionKind::kFull, 0);
      }
      // modeling_qwen3.py: RMSNorms over head_dim on q and k.
      if (type != "qwen2") t_.qk_norm = QkNorm::kPerHead;
      if (type == "qwen3_moe") {
        // configuration_qwen3_moe.py: layer i is MoE unless listed in mlp_only_layers, when
        // (i + 1) % decoder_sparse_step == 0.
        ReadMoe(m_.Has("num_experts") ? "num_experts" : "num_local_experts");
        t_.moe_d_ff = m_.PositiveInt("moe_intermediate_size");
        const uint64_t step = m_.PositiveInt("decoder_sparse_step", 1);
        const std::vector<uint64_t> dense = IntList("mlp_only_layers", t_.n_layers);
        if (step > 1 || !dense.empty()) {
          PerLayer();
          moe_.assign(t_.n_layers, false);
          for (uint64_t i = 0; i < t_.n_layers; ++i) {
            moe_[i] = std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % step == 0;
          }
        }
      }
    } else if (type == "gemma2" || type == "gemma3_text") {
      // modeling_gemma2.py / modeling_gemma3.py: four RMSNorms per block; configuration_*: sliding
      // unless (i + 1) % pattern == 0 (2 for Gemma 2, sliding_window_pattern for Gemma 3).
      t_.norm_placement = NormPlacement::kSandwich;
      if (type == "gemma3_text") {
        t_.qk_norm = QkNorm::kPerHead;
      }
      Pattern(window == 0 ? 4096 : window, type == "gemma2" ? 2 : m_.PositiveInt("sliding_window_pattern", 6));
    } else if (type == "llama4_text") {
      // configuration_llama4.py: no_rope_layers[i] = 1 (RoPE, chunked attention) unless every
      // no_rope_layer_interval-th layer (NoPE, full attention); an empty list means that default.
      const uint64_t chunk = m_.PositiveInt("attention_chunk_size", 0);
      const std::vector<uint64_t> rope = IntList("no_rope_layers", 2);
      if (!rope.empty() && rope.size() != t_.n_layers) {
        throw InputError(m_.Loc("no_rope_layers"),
                         "'no_rope_layers' must list the " + std::to_string(t_.n_layers) + " layers");
      }
      const uint64_t interval = m_.PositiveInt("no_rope_layer_interval", 4);
      Attention(0, chunk, [&](uint64_t i) {
        const bool roped = rope.empty() ? (i + 1) % interval != 0 : rope[i] == 1;
        return roped && chunk > 0 ? AttentionKind::kChunked : AttentionKind::kFull;
      });
      // Experts and the shared expert are intermediate_size wide, dense layers intermediate_size_mlp;
      // moe_layers lists the MoE layers, else every interleave_moe_layer_step-th from step - 1.
      ReadMoe("num_local_experts");
      t_.moe_d_ff = t_.d_ff;
      t_.shared_expert_d_ff = t_.d_ff;
      t_.d_ff = m_.PositiveInt("intermediate_size_mlp", t_.d_ff);
      moe_.assign(t_.n_layers, false);  // Attention() above bounded the depth
      if (m_.Has("moe_layers")) {
        for (uint64_t i : IntList("moe_layers", t_.n_layers)) moe_[i] = true;
      } else {
        const uint64_t step = m_.PositiveInt("interleave_moe_layer_step", 1);
        for (uint64_t i = step - 1; i < t_.n_layers; i += step) moe_[i] = true;
      }
    } else if (type == "gpt_oss") {
      // modeling_gpt_oss.py: q, k, v and o biases, a sink logit per head, a router with a bias,
      // experts with biases; layer_types alternate sliding and full from layer 0.
      Attention(window, 0, [](uint64_t i) { return i % 2 == 0 ? AttentionKind::kSliding : AttentionKind::kFull; });
      SetBiases(attention_bias, attention_bias, true);
      t_.attention_sinks = true;
      t_.router_bias = true;
      ReadMoe("num_local_experts");
    } else if (type == "olmo" || type == "olmo2") {
      // modeling_olmo.py: LayerNorm without weight or bias. modeling_olmo2.py: RMSNorm after each
      // branch, and q/k norms over the whole projections.
      UniformAttention(AttentionKind::kFull, 0);
      if (type == "olmo") {
        t_.norm = NormKind::kLayerNorm;
        t_.norm_params = NormParams::kNone;
      } else {
        t_.norm_placement = NormPlacement::kPost;
        t_.qk_norm = QkNorm::kProjection;
      }
    } else {
      // Mistral, Mixtral, Phi-3 and PhiMoE give one window to every layer.
      UniformAttention(window > 0 ? AttentionKind::kSliding : AttentionKind::kFull, window);
      // modeling_mixtral.py: a router (no bias) and num_local_experts SwiGLU experts, top-k per token.
      if (type == "mixtral" || type == "phimoe") ReadMoe("num_local_experts");
      if (type == "phimoe") {
        // modeling_phimoe.py: LayerNorms with weight and bias, q/k/v/o biases, a head bias.
        t_.norm = NormKind::kLayerNorm;
        SetBiases(attention_bias, attention_bias, false);
        t_.lm_head_bias = m_.Bool("lm_head_bias", false);
      }
    }
  }

  // modeling_deepseek_v3.py (and v2): multi-head latent attention; the first first_k_dense_replace
  // layers dense, then MoE on every moe_layer_freq-th, with n_shared_experts shared experts.
  void DeepSeek(const std::string& type) {
    ReadCommonSizes();
    t_.norm = NormKind::kRmsNorm;
    t_.mlp = MlpKind::kSwiglu;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", false);
    const bool bias = m_.Bool("attention_bias", false);
    SetBiases(bias, false, false);
    MlaSpec& mla = t_.mla;
    // An explicit null is no query LoRA (DeepSeek-V2-Lite); an absent key, the config default 1536.
    const YAML::Node& root = root_;
    mla.q_lora_rank = m_.Has("q_lora_rank") ? m_.PositiveInt("q_lora_rank") : root["q_lora_rank"] ? 0 : 1536;
    mla.kv_lora_rank = m_.PositiveInt("kv_lora_rank", 512);
    mla.qk_nope_head_dim = m_.PositiveInt("qk_nope_head_dim", 128);
    mla.qk_rope_head_dim = m_.PositiveInt("qk_rope_head_dim", 64);
    mla.v_head_dim = m_.PositiveInt("v_head_dim", 128);
    t_.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
    t_.n_kv_heads = t_.n_heads;  // the latent expands to every head
    kv_key_.clear();
    UniformAttention(AttentionKind::kLatent, 0);
    t_.n_experts = m_.PositiveInt("n_routed_experts", 0);
    if (t_.n_experts > 0) {
      ReadMoe("n_routed_experts");
      t_.moe_d_ff = m_.PositiveInt("moe_intermediate_size");
      t_.shared_expert_d_ff = CheckedMul(m_.NonNegativeInt("n_shared_experts", 0), t_.moe_d_ff, "the shared experts");
      const uint64_t first = m_.NonNegativeInt("first_k_dense_replace", 0);
      const uint64_t freq = m_.PositiveInt("moe_layer_freq", 1);
      if (first > 0 || freq > 1) {
        PerLayer();
        moe_.assign(t_.n_layers, false);
        for (uint64_t i = first; i < t_.n_layers; ++i) moe_[i] = i % freq == 0;
      }
      // DeepSeek-V3's noaux_tc routing adds e_score_correction_bias to the expert scores.
      t_.router_score_bias = type == "deepseek_v3" && m_.String("topk_method", "noaux_tc") == "noaux_tc";
    }
    t_.mtp_layers = m_.NonNegativeInt("num_nextn_predict_layers", 0);
  }

  // The first entry of `architectures`, or "" when the config has none.
  std::string Architecture() const {
    if (!m_.Has("architectures")) return "";
    const YAML::Node& list = m_.Get("architectures");
    if (!list.IsSequence()) {
      throw InputError(m_.Loc("architectures"), "'architectures' must be a list, got " + Describe(list));
    }
    if (list.size() == 0) return "";
    if (!list[0].IsScalar()) {
      throw InputError(LocOf(list[0], m_.file()),
                       "an entry of 'architectures' must be a name, got " + Describe(list[0]));
    }
    return list[0].Scalar();
  }

  // The encoder's head from `architectures` (`base` is the bare model's class, e.g. BertModel):
  // the bare model when absent. BertModel keeps its pooler; BertForMaskedLM and the RoBERTa
  // classifier build the model without it (add_pooling_layer=False); DistilBERT has none.
  void EncoderHeadOf(const std::string& base, bool pooler) {
    const std::string arch = Architecture();
    auto ends = [&](const std::string& suffix) {
      return arch.size() >= suffix.size() && arch.compare(arch.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    t_.pooler = false;
    if (arch.empty() || arch == base) {
      t_.head = EncoderHead::kNone;
      t_.pooler = pooler;
    } else if (ends("ForMaskedLM")) {
      t_.head = EncoderHead::kMaskedLm;
      t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
      t_.lm_head_bias = true;
    } else if (ends("ForSequenceClassification")) {
      t_.head = EncoderHead::kClassifier;
      t_.pooler = pooler && base == "BertModel";
      // PretrainedConfig: num_labels is the size of id2label, 2 by default.
      if (m_.Has("id2label") && m_.Get("id2label").IsMap() && m_.Get("id2label").size() > 0) {
        t_.num_labels = m_.Get("id2label").size();
      } else {
        t_.num_labels = m_.PositiveInt("num_labels", 2);
      }
    } else {
      const std::string family = base.substr(0, base.size() - std::string("Model").size());
      throw InputError(m_.Loc("architectures"), "unsupported architecture '" + arch + "'; tally reads " + base + ", " +
                                                    family + "ForMaskedLM and " + family + "ForSequenceClassification");
    }
  }

  // The feed-forward activation of an encoder: GELU (any of transformers' GELU names) or ReLU.
  MlpKind EncoderActivation(const char* key) {
    const std::string act = m_.String(key, "gelu");
    if (act == "relu") return MlpKind::kRelu;
    if (act.rfind("gelu", 0) == 0) return MlpKind::kGelu;
    throw InputError(m_.Loc(key), "unsupported activation '" + act + "'; tally reads gelu and relu here");
  }

  // modeling_bert.py and modeling_roberta.py (XLM-RoBERTa is RoBERTa's code): word, learned
  // position and token-type embeddings summed and normalized, post-norm layers (LayerNorm after
  // each residual add) with biases everywhere, a GELU MLP, bidirectional attention. RoBERTa
  // numbers its positions from padding_idx + 1 = 2, so its max_position_embeddings (514) holds two
  // rows no token uses: the usable context is 2 fewer.
  void Bert(const std::string& type) {
    ReadCommonSizes(0, 512);
    t_.encoder = true;
    t_.position = PositionKind::kLearned;
    if (m_.String("position_embedding_type", "absolute") != "absolute") {
      throw InputError(m_.Loc("position_embedding_type"), "position_embedding_type '" +
                                                              m_.String("position_embedding_type", "") +
                                                              "' is not supported yet; tally reads absolute");
    }
    if (type != "bert") {
      if (t_.context_length <= 2) {
        throw InputError(m_.Loc("max_position_embeddings"), "RoBERTa needs more than 2 positions (2 are padding)");
      }
      t_.context_length -= 2;
      t_.position_offset = 2;
    }
    t_.token_types = m_.PositiveInt("type_vocab_size", 2);
    t_.mlp = EncoderActivation("hidden_act");
    t_.embedding_norm = true;
    t_.final_norm = false;
    t_.norm_placement = NormPlacement::kAfterAdd;
    t_.dropout = m_.Probability("hidden_dropout_prob", 0.1);
    t_.tied_embeddings = false;
    EncoderHeadOf(type == "bert" ? "BertModel" : type == "roberta" ? "RobertaModel" : "XLMRobertaModel", true);
  }

  // modeling_distilbert.py: BERT's layout under other key names, without token types or a pooler;
  // sinusoidal_pos_embds fills the position table with fixed values, still an nn.Embedding.
  void DistilBert() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("dim");
    t_.n_layers = m_.PositiveInt("n_layers");
    t_.n_heads = m_.PositiveInt("n_heads");
    t_.d_ff = m_.PositiveInt("hidden_dim");
    t_.context_length = Context("max_position_embeddings", 512);
    t_.encoder = true;
    t_.mlp = EncoderActivation("activation");
    t_.embedding_norm = true;
    t_.final_norm = false;
    t_.norm_placement = NormPlacement::kAfterAdd;
    t_.dropout = m_.Probability("dropout", 0.1);
    t_.tied_embeddings = false;
    EncoderHeadOf("DistilBertModel", false);
  }

  // modeling_t5.py (T5ForConditionalGeneration; modeling_mt5.py is the same code) and
  // modeling_umt5.py: a shared embedding, an encoder stack of num_layers blocks and a decoder stack
  // of num_decoder_layers (default num_layers), each pre-norm with T5's RMS-style LayerNorm (a
  // weight, no bias, no mean), projections without biases to n_heads·d_kv (which need not be
  // d_model), no position embedding but a relative-position bias table of [num_buckets, heads] in
  // the first block of each stack (UMT5: in every block; never in cross-attention), each stack
  // ending in a norm and a dropout. The feed-forward is feed_forward_proj: "relu" (wi, wo) or
  // "gated-gelu" (wi_0, wi_1, wo), with a dropout before wo. A tied head (t5-small) reads the
  // decoder's output scaled by d_model^-0.5; mT5 and T5 v1.1 untie it.
  void T5(const std::string& type) {
    const std::string arch = Architecture();
    const std::string model = type == "t5" ? "T5" : type == "mt5" ? "MT5" : "UMT5";
    if (!arch.empty() && arch != model + "ForConditionalGeneration" && arch != "T5WithLMHeadModel") {
      throw InputError(m_.Loc("architectures"),
                       "unsupported architecture '" + arch + "'; tally reads " + model + "ForConditionalGeneration");
    }
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("d_model");
    t_.head_dim = m_.PositiveInt("d_kv");
    t_.n_heads = m_.PositiveInt("num_heads");
    t_.d_ff = m_.PositiveInt("d_ff");
    const uint64_t encoder = m_.PositiveInt("num_layers");
    const uint64_t decoder = m_.PositiveInt("num_decoder_layers", encoder);
    for (const char* key : {"num_layers", "num_decoder_layers"}) {
      if (m_.Has(key) && m_.PositiveInt(key) > 100'000) throw InputError(m_.Loc(key), "more than 100000 layers");
    }
    t_.relative_buckets = m_.PositiveInt("relative_attention_num_buckets", 32);
    // n_positions is only the tokenizer's length; it sets the default --seq (T5Config: 512).
    t_.context_length = Context("n_positions", 512);
    const std::string ff = m_.String("feed_forward_proj", "relu");
    if (ff == "relu") {
      t_.mlp = MlpKind::kRelu;
    } else if (ff == "gelu") {
      t_.mlp = MlpKind::kGelu;
    } else if (ff == "gated-gelu") {
      t_.mlp = MlpKind::kGeglu;
    } else if (ff == "gated-silu") {
      t_.mlp = MlpKind::kSwiglu;
    } else {
      throw InputError(m_.Loc("feed_forward_proj"),
                       "unsupported feed_forward_proj '" + ff + "'; tally reads relu, gelu, gated-gelu and gated-silu");
    }
    t_.norm = NormKind::kRmsNorm;
    t_.position = PositionKind::kNone;
    t_.qkv_bias = t_.out_bias = t_.mlp_bias = false;
    t_.dropout = m_.Probability("dropout_rate", 0.1);
    t_.mlp_dropout = t_.stack_dropout = true;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
    t_.head_scale = t_.tied_embeddings;
    t_.encoder_layers = encoder;
    t_.n_layers = encoder + decoder;
    const bool every = type == "umt5";
    for (uint64_t i = 0; i < encoder; ++i) t_.layer_specs.push_back({.relative_bias = every || i == 0});
    for (uint64_t i = 0; i < decoder; ++i) {
      t_.layer_specs.push_back({.cross_attention = true, .relative_bias = every || i == 0, .encoder_output = i == 0});
    }
  }

  // modeling_whisper.py (WhisperForConditionalGeneration): BART's key names, pre-norm layers
  // (LayerNorm before each branch, with biases) and a final LayerNorm per stack; the encoder reads
  // num_mel_bins mel features through two Conv1d (kernel 3, the second of stride 2) and adds
  // sinusoidal positions stored as a frozen embedding of max_source_positions rows; the decoder has
  // learned positions of max_target_positions rows; k_proj has no bias; proj_out is tied to the
  // decoder's token table. WhisperModel ends in the decoder's states.
  void Whisper() {
    const std::string arch = Architecture();
    if (!arch.empty() && arch != "WhisperModel" && arch != "WhisperForConditionalGeneration") {
      throw InputError(m_.Loc("architectures"), "unsupported architecture '" + arch +
                                                    "'; tally reads WhisperModel and WhisperForConditionalGeneration");
    }
    EncoderDecoderSizes();
    t_.mel_bins = m_.PositiveInt("num_mel_bins", 80);
    t_.context_length = m_.PositiveInt("max_source_positions", 1500);
    t_.target_context = m_.PositiveInt("max_target_positions", 448);
    t_.position = PositionKind::kLearned;
    t_.mlp = EncoderActivation("activation_function");
    t_.k_bias = false;
    t_.norm_placement = NormPlacement::kPre;
    if (m_.Bool("scale_embedding", false)) {
      throw InputError(m_.Loc("scale_embedding"), "'scale_embedding: true' is not supported yet for whisper");
    }
    Dropouts(0.0);
    t_.no_head = arch == "WhisperModel";
    t_.tied_embeddings = true;  // proj_out shares the decoder's embed_tokens
  }

  // The shared sizes of BART and Whisper: d_model, and one head count and width for both stacks.
  void EncoderDecoderSizes() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("d_model");
    auto same = [&](const char* encoder, const char* decoder) {
      const uint64_t e = m_.PositiveInt(encoder);
      if (m_.PositiveInt(decoder) != e) {
        throw InputError(m_.Loc(decoder), "'" + std::string(decoder) + "' differs from '" + encoder +
                                              "'; tally models stacks of one width and head count");
      }
      return e;
    };
    t_.n_heads = same("encoder_attention_heads", "decoder_attention_heads");
    t_.d_ff = same("encoder_ffn_dim", "decoder_ffn_dim");
    const uint64_t encoder = m_.PositiveInt("encoder_layers");
    const uint64_t decoder = m_.PositiveInt("decoder_layers");
    for (const char* key : {"encoder_layers", "decoder_layers"}) {
      if (m_.PositiveInt(key) > 100'000) throw InputError(m_.Loc(key), "more than 100000 layers");
    }
    t_.encoder_layers = encoder;
    t_.n_layers = encoder + decoder;
    t_.layer_specs.assign(encoder, LayerSpec{});
    for (uint64_t i = 0; i < decoder; ++i) {
      t_.layer_specs.push_back({.cross_attention = true, .encoder_output = i == 0});
    }
  }

  // Dropout on the residual branches and embeddings (dropout), on the attention probabilities
  // (attention_dropout) and after the feed-forward activation (activation_dropout): tally has one
  // switch for the first two.
  void Dropouts(double fallback) {
    t_.dropout = m_.Probability("dropout", fallback);
    if ((m_.Probability("attention_dropout", 0.0) > 0) != (t_.dropout > 0)) {
      throw InputError(m_.Has("attention_dropout") ? m_.Loc("attention_dropout") : m_.MapLoc(),
                       "attention_dropout and dropout must both be zero or both positive (tally has one dropout "
                       "switch for both)");
    }
    t_.mlp_dropout = m_.Probability("activation_dropout", 0.0) > 0;
  }

  // modeling_bart.py: a shared embedding; encoder and decoder stacks (encoder_layers,
  // decoder_layers), each with its own learned positions of max_position_embeddings + 2 rows (the
  // offset of 2) and its own embedding LayerNorm (layernorm_embedding); post-norm layers
  // (LayerNorm after each residual add), biases everywhere, no final norm; the decoder's layers
  // with cross-attention. BartForConditionalGeneration ends in lm_head, tied to the shared
  // embedding, plus final_logits_bias (a buffer: no parameter); BartModel in the decoder's states.
  void Bart() {
    const std::string arch = Architecture();
    if (!arch.empty() && arch != "BartModel" && arch != "BartForConditionalGeneration") {
      throw InputError(m_.Loc("architectures"), "unsupported architecture '" + arch +
                                                    "'; tally reads BartModel and BartForConditionalGeneration");
    }
    EncoderDecoderSizes();
    if (m_.Bool("normalize_before", false) || m_.Bool("add_final_layer_norm", false)) {
      const char* key = m_.Bool("normalize_before", false) ? "normalize_before" : "add_final_layer_norm";
      throw InputError(m_.Loc(key), "'" + std::string(key) + ": true' (mBART's pre-norm layout) is not supported yet");
    }
    t_.context_length = Context("max_position_embeddings", 1024);
    t_.position = PositionKind::kLearned;
    t_.position_offset = 2;  // BartLearnedPositionalEmbedding: num_embeddings + 2
    t_.mlp = EncoderActivation("activation_function");
    t_.embedding_norm = true;
    t_.final_norm = false;
    t_.norm_placement = NormPlacement::kAfterAdd;
    t_.embed_scale = m_.Bool("scale_embedding", false);
    Dropouts(0.1);
    t_.no_head = arch.empty() || arch == "BartModel";
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
    t_.logits_bias = !t_.no_head;
  }

  // modeling_gpt2.py: learned positions, LayerNorm, GELU, biases (Conv1D), tied head.
  // modeling_gpt_bigcode.py: the same with one K/V head under multi_query, always tied.
  void Gpt2(const std::string& type) {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.context_length = m_.Has("n_positions") ? m_.PositiveInt("n_positions") : m_.PositiveInt("n_ctx");
    t_.d_model = m_.PositiveInt("n_embd");
    t_.n_layers = m_.PositiveInt("n_layer");
    t_.n_heads = m_.PositiveInt("n_head");
    t_.d_ff = m_.PositiveInt("n_inner", 4 * t_.d_model);
    t_.tied_embeddings = type == "gpt_bigcode" || m_.Bool("tie_word_embeddings", true);
    if (type == "gpt_bigcode") {
      kv_key_ = "multi_query";
      t_.n_kv_heads = m_.Bool("multi_query", true) ? 1 : t_.n_heads;
    }
    t_.dropout = m_.Probability("resid_pdrop", 0.1);
  }

  // modeling_phi.py (phi-2): one LayerNorm feeds attention and MLP in parallel, partial rotary,
  // biases everywhere, an untied head with a bias.
  void Phi() {
    ReadCommonSizes();
    ReadRotaryFraction(0.5);
    t_.parallel_block = true;
    t_.norms_per_block = 1;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", false);
    t_.lm_head_bias = true;
    t_.dropout = m_.Probability("resid_pdrop", 0);
    if (m_.Bool("qk_layernorm", false)) {
      throw InputError(m_.Loc("qk_layernorm"), "'qk_layernorm: true' is not supported yet");
    }
  }

  // phi-2's original remote code (modeling_phi.py, model_type phi-msft): the same layout as phi
  // with GPT-style key names; the head is a LayerNorm and a linear with a bias.
  void PhiMsft() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("n_embd");
    t_.n_layers = m_.PositiveInt("n_layer");
    t_.n_heads = m_.PositiveInt("n_head");
    t_.n_kv_heads = KvHeads(t_.n_heads);
    t_.d_ff = m_.PositiveInt("n_inner", 4 * t_.d_model);
    t_.context_length = Context("n_positions");
    t_.position = PositionKind::kRope;
    t_.rotary_dim = m_.PositiveInt("rotary_dim", 32);
    t_.parallel_block = true;
    t_.norms_per_block = 1;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", false);
    t_.lm_head_bias = true;
    t_.dropout = m_.Probability("resid_pdrop", 0);
  }

  // modeling_gptj.py: parallel attention and MLP after one LayerNorm, q/k/v/out without biases,
  // rotary on the first rotary_dim dimensions of each head, an untied head with a bias.
  void Gptj() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("n_embd");
    t_.n_layers = m_.PositiveInt("n_layer");
    t_.n_heads = m_.PositiveInt("n_head");
    t_.d_ff = m_.PositiveInt("n_inner", 4 * t_.d_model);
    t_.context_length = Context("n_positions");
    t_.position = PositionKind::kRope;
    t_.rotary_dim = m_.PositiveInt("rotary_dim", 0);
    t_.parallel_block = true;
    t_.norms_per_block = 1;
    SetBiases(false, false, true);
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", false);
    t_.lm_head_bias = true;
    t_.dropout = m_.Probability("resid_pdrop", 0);
  }

  // modeling_starcoder2.py: LayerNorm, GELU MLP (c_fc, c_proj), a bias on every linear (use_bias),
  // one sliding window on every layer, tied by default.
  void Starcoder2() {
    ReadCommonSizes();
    const bool bias = m_.Bool("use_bias", true);
    SetBiases(bias, bias, bias);
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
    const uint64_t window = m_.PositiveInt("sliding_window", 0);
    UniformAttention(window > 0 ? AttentionKind::kSliding : AttentionKind::kFull, window);
  }

  // modeling_cohere.py: attention and MLP in parallel after one LayerNorm with a weight and no
  // bias, SwiGLU, tied head; use_qk_norm adds such norms over the q and k projections.
  // modeling_cohere2.py: sliding windows but on every sliding_window_pattern-th layer.
  void Cohere(const std::string& type) {
    ReadCommonSizes();
    t_.head_dim = m_.PositiveInt("head_dim", 0);
    t_.mlp = MlpKind::kSwiglu;
    t_.norm_params = NormParams::kWeightOnly;
    t_.parallel_block = true;
    t_.norms_per_block = 1;
    const bool bias = m_.Bool("attention_bias", false);
    SetBiases(bias, bias, false);
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
    if (m_.Bool("use_qk_norm", false)) t_.qk_norm = QkNorm::kProjection;
    if (type == "cohere2") {
      Pattern(m_.PositiveInt("sliding_window", 4096), m_.PositiveInt("sliding_window_pattern", 4));
    }
  }

  // modeling_falcon.py: fused query_key_value, multi-query or grouped (new_decoder_architecture)
  // attention, parallel attention and MLP, tied head. The legacy RefinedWeb (40B) and
  // RefinedWebModel (7B) types name the keys n_layer, n_head, n_head_kv; RefinedWeb is the new
  // decoder architecture (its own RWConfig; transformers' falcon conversion).
  void Falcon(const std::string& type) {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = Size({"hidden_size", "n_embed"});
    t_.n_layers = Size({"num_hidden_layers", "n_layer"});
    t_.n_heads = Size({"num_attention_heads", "n_head"});
    t_.d_ff = m_.PositiveInt("ffn_hidden_size", 4 * t_.d_model);
    t_.context_length = Context("max_position_embeddings");
    const bool new_arch = m_.Bool("new_decoder_architecture", type == "RefinedWeb");
    if (new_arch) {
      t_.n_kv_heads = KvHeads(t_.n_heads);
    } else {
      kv_key_ = "multi_query";
      t_.n_kv_heads = m_.Bool("multi_query", true) ? 1 : t_.n_heads;
    }
    t_.parallel_block = new_arch || m_.Bool("parallel_attn", true);
    t_.norms_per_block = new_arch || !t_.parallel_block ? 2 : 1;
    const bool bias = m_.Bool("bias", false);
    SetBiases(bias, bias, bias);
    t_.position = m_.Bool("alibi", false) ? PositionKind::kAlibi : PositionKind::kRope;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
  }

  // modeling_opt.py: learned positions with 2 extra rows, ReLU, biases, project_in/out when the
  // embedding is narrower, no final norm for the post-norm variant (do_layer_norm_before: false).
  void Opt() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("hidden_size");
    t_.n_layers = m_.PositiveInt("num_hidden_layers");
    t_.n_heads = m_.PositiveInt("num_attention_heads");
    t_.d_ff = m_.PositiveInt("ffn_dim");
    t_.context_length = Context("max_position_embeddings");
    t_.position_offset = 2;
    t_.mlp = MlpKind::kRelu;
    uint64_t embed = m_.PositiveInt("word_embed_proj_dim", t_.d_model);
    t_.embed_dim = embed == t_.d_model ? 0 : embed;
    t_.final_norm = m_.Bool("do_layer_norm_before", true);
    if (!t_.final_norm)
      spec_.notes.push_back(
          "OPT with do_layer_norm_before: false is post-norm; its counts "
          "are those of the pre-norm layout, which has the same shapes");
    const bool bias = m_.Bool("enable_bias", true);
    SetBiases(bias, bias, bias);
    if (!m_.Bool("layer_norm_elementwise_affine", true)) {
      throw InputError(m_.Loc("layer_norm_elementwise_affine"), "LayerNorms without weights are not supported yet");
    }
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
    t_.dropout = m_.Probability("dropout", 0.1);
  }

  // modeling_gpt_neox.py (Pythia): fused qkv with biases, partial rotary, parallel residual with
  // two LayerNorms, untied embed_out.
  void GptNeox() {
    ReadCommonSizes();
    rotary_fraction_ = m_.Fraction("rotary_pct", 0.25);
    t_.parallel_block = m_.Bool("use_parallel_residual", true);
    const bool bias = m_.Bool("attention_bias", true);
    SetBiases(bias, bias, true);
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", false);
  }

  // modeling_bloom.py: ALiBi, a LayerNorm on the word embeddings, biases, GELU 4h, tied head.
  void Bloom() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.Has("hidden_size") ? m_.PositiveInt("hidden_size") : m_.PositiveInt("n_embed");
    t_.n_layers = m_.PositiveInt("n_layer");
    t_.n_heads = m_.PositiveInt("n_head");
    t_.d_ff = 4 * t_.d_model;
    t_.context_length = Context("seq_length");
    t_.position = PositionKind::kAlibi;
    t_.embedding_norm = true;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
  }

  // Derived sizes and the checks a tally config gets too.
  void Finish() {
    if (t_.n_kv_heads == 0) t_.n_kv_heads = t_.n_heads;  // families without grouped attention
    if (t_.head_dim == 0) {
      if (t_.d_model % t_.n_heads != 0) {
        const char* heads = m_.Has("n_head") ? "n_head" : m_.Has("n_heads") ? "n_heads" : "num_attention_heads";
        throw InputError(m_.Loc(heads), "the hidden size (" + std::to_string(t_.d_model) +
                                            ") is not divisible by the number of heads (" + std::to_string(t_.n_heads) +
                                            ")");
      }
      t_.head_dim = t_.d_model / t_.n_heads;
    }
    if (t_.n_heads % t_.n_kv_heads != 0) {
      throw InputError(!kv_key_.empty() && m_.Has(kv_key_) ? m_.Loc(kv_key_) : m_.MapLoc(),
                       "the " + std::to_string(t_.n_heads) + " attention heads are not divisible by the " +
                           std::to_string(t_.n_kv_heads) + " key/value heads");
    }
    // transformers: rotary_ndims = int(head_dim * partial_rotary_factor); none rotated is no RoPE.
    if (rotary_fraction_ > 0)
      t_.rotary_dim = static_cast<uint64_t>(static_cast<double>(t_.head_dim) * rotary_fraction_);
    if (no_rotary_ || (t_.position == PositionKind::kRope && rotary_fraction_ > 0 && t_.rotary_dim == 0)) {
      t_.position = PositionKind::kNone;
      t_.rotary_dim = 0;
    }
    Layers();
  }

  // TransformerSpec::layer_specs from each layer's attention and MoE, left empty when the blocks
  // are what the uniform fields already say.
  void Layers() {
    if (kinds_.empty() && moe_.empty()) {  // every block alike: LayerRuns' uniform block
      t_.sliding_window = uniform_ == AttentionKind::kSliding ? window_ : 0;
      return;
    }
    PerLayer();
    if (kinds_.empty()) kinds_.assign(t_.n_layers, uniform_);
    if (moe_.empty()) moe_.assign(t_.n_layers, t_.n_experts > 0);
    std::vector<LayerSpec> specs;
    for (uint64_t i = 0; i < t_.n_layers; ++i) {
      LayerSpec l;
      l.attention = kinds_[i];
      l.span = kinds_[i] == AttentionKind::kSliding ? window_ : kinds_[i] == AttentionKind::kChunked ? chunk_ : 0;
      l.moe = moe_[i];
      specs.push_back(l);
    }
    // A window that no layer uses is no window.
    const bool any_sliding = std::find(kinds_.begin(), kinds_.end(), AttentionKind::kSliding) != kinds_.end();
    t_.sliding_window = any_sliding ? window_ : 0;
    t_.layer_specs = specs;
    const std::vector<std::pair<LayerSpec, uint64_t>> runs = LayerRuns(t_);
    t_.layer_specs.clear();
    if (LayerRuns(t_) != runs) t_.layer_specs = std::move(specs);
  }

  YAML::Node root_;
  ConfigMap m_;
  ModelSpec spec_;
  TransformerSpec t_;
  double rotary_fraction_ = 0;
  bool no_rotary_ = false;
  std::optional<bool> outer_tied_;                // tie_word_embeddings of a multimodal wrapper
  bool llama_defaults_ = false;                   // LLaVA's text_config: LlamaConfig's defaults apply
  std::string kv_key_;                            // the key that gave the K/V heads, for errors
  AttentionKind uniform_ = AttentionKind::kFull;  // every layer's, when kinds_ is empty
  std::vector<AttentionKind> kinds_;
  std::vector<bool> moe_;
  uint64_t window_ = 0, chunk_ = 0;
};

}  // namespace

const std::vector<std::string>& HfFamilies() {
  static const std::vector<std::string> kFamilies = {
      "bart",     "bert",       "bloom",   "cohere", "cohere2",     "deepseek_v2", "deepseek_v3", "distilbert",
      "falcon",   "gemma",      "gemma2",  "gemma3", "gemma3_text", "gpt2",        "gpt_bigcode", "gpt_neox",
      "gpt_oss",  "gptj",       "jamba",   "llama",  "llama4",      "llama4_text", "llava",       "mamba",
      "mamba2",   "mistral",    "mixtral", "mt5",    "olmo",        "olmo2",       "opt",         "phi",
      "phi-msft", "phi3",       "phimoe",  "qwen2",  "qwen3",       "qwen3_moe",   "RefinedWeb",  "RefinedWebModel",
      "roberta",  "starcoder2", "t5",      "umt5",   "vit",         "whisper",     "xlm-roberta", "zamba2"};
  return kFamilies;
}

namespace {

// modeling_vit.py: ViTForImageClassification is ViTModel without its pooler, a final LayerNorm and a
// classifier on the class token; ViTModel keeps the pooler (a dense and tanh on the class token).
// The layers are torchvision's vit_b_16's (the vit-b-16 preset), so both build the same graph:
// a 16x16 patch convolution with a bias, a class token, learned positions, pre-norm encoder layers
// with q/k/v biases and a GELU MLP.
ModelSpec ReadVit(const YAML::Node& root, const std::string& file) {
  const ConfigMap m(root, file, "config.json", kUsedKeys, UnknownKeys::kIgnore);
  ModelSpec spec = HfModelSpec(m, Family::kSequential, "vit");
  if (!m.Bool("qkv_bias", true)) throw InputError(m.Loc("qkv_bias"), "'qkv_bias: false' is not supported yet");
  const std::string act = m.String("hidden_act", "gelu");
  if (act != "gelu") {
    throw InputError(m.Loc("hidden_act"), "unsupported hidden_act '" + act + "'; tally reads gelu");
  }
  const uint64_t h = m.PositiveInt("hidden_size"), image = m.PositiveInt("image_size", 224);
  const uint64_t patch = m.PositiveInt("patch_size", 16);
  if (image % patch != 0) {
    throw InputError(m.Loc("patch_size"), "the image size (" + std::to_string(image) + ") is not a multiple of " +
                                              "the patch size (" + std::to_string(patch) + ")");
  }
  SequentialSpec& s = spec.sequential;
  s.input = {m.PositiveInt("num_channels", 3), image, image};
  const SourceLoc loc = m.MapLoc();
  auto layer = [&](SeqOp op) {
    SeqLayerSpec l;
    l.op = op;
    l.loc = loc;
    return l;
  };
  SeqLayerSpec embed = layer(SeqOp::kPatchEmbed);
  embed.kernel_h = embed.kernel_w = patch;
  embed.out = h;
  s.layers.push_back(embed);
  SeqLayerSpec encoder = layer(SeqOp::kEncoder);
  encoder.heads = m.PositiveInt("num_attention_heads");
  encoder.mlp_dim = m.PositiveInt("intermediate_size");
  if (h % encoder.heads != 0) {
    throw InputError(m.Loc("num_attention_heads"), "the hidden size (" + std::to_string(h) +
                                                       ") is not divisible by the number of heads (" +
                                                       std::to_string(encoder.heads) + ")");
  }
  const uint64_t n_layers = m.PositiveInt("num_hidden_layers");
  if (n_layers > 100'000) throw InputError(m.Loc("num_hidden_layers"), "more than 100000 layers");
  s.layers.insert(s.layers.end(), n_layers, encoder);
  s.layers.push_back(layer(SeqOp::kLayerNorm));
  s.layers.push_back(layer(SeqOp::kClassToken));
  std::string arch;
  if (m.Has("architectures") && m.Get("architectures").IsSequence() && m.Get("architectures").size() > 0 &&
      m.Get("architectures")[0].IsScalar()) {
    arch = m.Get("architectures")[0].Scalar();
  }
  SeqLayerSpec head = layer(SeqOp::kLinear);
  if (arch == "ViTForImageClassification") {
    // PretrainedConfig: the classes are id2label's entries, else num_labels (default 2).
    const bool labels = m.Has("id2label") && m.Get("id2label").IsMap() && m.Get("id2label").size() > 0;
    head.out = labels ? m.Get("id2label").size() : m.PositiveInt("num_labels", 2);
    s.layers.push_back(head);
  } else if (arch.empty() || arch == "ViTModel") {
    head.out = h;  // ViTPooler
    s.layers.push_back(head);
    SeqLayerSpec tanh = layer(SeqOp::kActivation);
    tanh.activation = ActivationKind::kTanh;
    s.layers.push_back(tanh);
    s.loss = LossKind::kNone;
  } else {
    throw InputError(m.Loc("architectures"),
                     "unsupported architecture '" + arch + "'; tally reads ViTModel and ViTForImageClassification");
  }
  return spec;
}

// A suggestion only for what is a misspelling of a supported type (one or two edits, and fewer
// than a third of the name), never another family that happens to be spelled alike.
std::string NearSpelling(const std::string& name, const std::vector<std::string>& families) {
  // Real model types one or two edits from a supported one: a different architecture each.
  static const std::vector<std::string> kOtherFamilies = {"gpt_neo",      "qwen2_moe", "qwen2_vl", "gemma3n",
                                                          "gemma3n_text", "olmoe",     "phi4mm",   "mamba"};
  if (std::find(kOtherFamilies.begin(), kOtherFamilies.end(), name) != kOtherFamilies.end()) return "";
  const std::string match = ClosestMatch(name, families);
  if (match.empty()) return "";
  const int distance = EditDistance(name, match);
  if (distance > 2 || static_cast<size_t>(distance) * 3 > name.size()) return "";
  return " (did you mean '" + match + "'?)";
}

}  // namespace

ModelSpec ReadHfConfig(const YAML::Node& root, const std::string& file) {
  const YAML::Node& const_root = root;
  YAML::Node type = const_root["model_type"];
  std::string name = type.IsScalar() ? type.Scalar() : "";
  const std::vector<std::string>& ssm = HfSsmFamilies();
  if (std::find(ssm.begin(), ssm.end(), name) != ssm.end()) return ReadHfSsmConfig(root, file, name);
  const std::vector<std::string>& families = HfFamilies();
  if (std::find(families.begin(), families.end(), name) == families.end()) {
    std::string list;
    for (const std::string& f : families) list += (list.empty() ? "" : ", ") + f;
    std::string shown = type.IsScalar() ? "'" + type.Scalar() + "'" : Describe(type);
    throw InputError(LocOf(type, file), "unsupported model_type " + shown + NearSpelling(name, families) +
                                            "; tally reads " + list +
                                            "; for another model, write a tally YAML config (README, \"Model "
                                            "configs\")");
  }
  if (name == "vit") return ReadVit(root, file);
  return HfReader(root, file).Read(name);
}

}  // namespace tally
