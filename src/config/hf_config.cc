// Each family's layout follows its modeling file in huggingface/transformers
// (src/transformers/models/<family>/modeling_<family>.py), cited per reader below.
#include "config/hf_config.h"

#include <filesystem>

#include "config/names.h"
#include "config/yaml_reader.h"
#include "util/spellcheck.h"

namespace tally {
namespace {

// Every config key any family reader uses; the rest of a config.json is ignored.
const std::vector<std::string> kUsedKeys = {
    "model_type", "_name_or_path", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
    "tie_word_embeddings", "torch_dtype", "attention_bias", "mlp_bias", "sliding_window", "use_sliding_window",
    "num_local_experts", "num_experts_per_tok", "partial_rotary_factor", "qk_layernorm", "n_positions", "n_ctx",
    "n_embd", "n_layer", "n_head", "n_inner", "resid_pdrop", "multi_query", "new_decoder_architecture",
    "parallel_attn", "bias", "num_kv_heads", "alibi", "ffn_hidden_size", "ffn_dim", "word_embed_proj_dim",
    "do_layer_norm_before", "enable_bias", "layer_norm_elementwise_affine", "dropout", "rotary_pct",
    "use_parallel_residual", "n_embed", "seq_length"};

// HF config defaults when a key is absent: the Python config classes' defaults.
constexpr uint64_t kDefaultContext = 2048;

class HfReader {
 public:
  HfReader(const YAML::Node& root, const std::string& file)
      : m_(root, file, "config.json", kUsedKeys, UnknownKeys::kIgnore) {}

  ModelSpec Read(const std::string& model_type) {
    spec_.family = Family::kTransformer;
    spec_.source = m_.file();
    spec_.name = Name();
    spec_.description = "Hugging Face config.json, model_type " + model_type;
    t_.dtype = Dtype();
    if (model_type == "gpt2") Gpt2();
    else if (model_type == "phi") Phi();
    else if (model_type == "falcon") Falcon();
    else if (model_type == "opt") Opt();
    else if (model_type == "gpt_neox") GptNeox();
    else if (model_type == "bloom") Bloom();
    else LlamaLike(model_type);
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

  // torch_dtype ("bfloat16"); other values (fp8 checkpoints name theirs in quantization_config)
  // leave it unstated.
  std::optional<DType> Dtype() const {
    const std::optional<DType> d = FindName<DType>(m_.String("torch_dtype", ""));
    if (d == DType::kFp32 || d == DType::kFp16 || d == DType::kBf16) return d;
    return std::nullopt;
  }

  uint64_t Context(const char* key) {
    if (m_.Has(key)) return m_.PositiveInt(key);
    spec_.notes.push_back("'" + std::string(key) + "' is not in " + m_.file() + "; assuming a context of " +
                          std::to_string(kDefaultContext) + " tokens");
    return kDefaultContext;
  }

  void SetBiases(bool qkv, bool out, bool mlp) {
    t_.qkv_bias = qkv;
    t_.out_bias = out;
    t_.mlp_bias = mlp;
  }

  // The sizes most families name alike (Llama, Phi, GPT-NeoX), and their rotary positions.
  void ReadCommonSizes() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("hidden_size");
    t_.d_ff = m_.PositiveInt("intermediate_size");
    t_.n_layers = m_.PositiveInt("num_hidden_layers");
    t_.n_heads = m_.PositiveInt("num_attention_heads");
    t_.n_kv_heads = m_.PositiveInt("num_key_value_heads", t_.n_heads);
    t_.context_length = Context("max_position_embeddings");
    t_.position = PositionKind::kRope;
  }

  // modeling_llama.py and its descendants: RMSNorm, RoPE, gated MLP, GQA, untied by default.
  void LlamaLike(const std::string& type) {
    ReadCommonSizes();
    t_.head_dim = m_.PositiveInt("head_dim", 0);
    t_.norm = NormKind::kRmsNorm;
    // modeling_gemma.py: GeGLU, head tied to the embedding; the RMSNorm's (1 + w) is still h weights.
    t_.mlp = type == "gemma" ? MlpKind::kGeglu : MlpKind::kSwiglu;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", type == "gemma");
    const bool attention_bias = m_.Bool("attention_bias", false);
    // modeling_qwen2.py: q, k and v projections carry biases, o does not; there is no key for it.
    if (type == "qwen2") SetBiases(true, false, false);
    else SetBiases(attention_bias, attention_bias, m_.Bool("mlp_bias", false));
    const bool window = type != "qwen2" || m_.Bool("use_sliding_window", false);
    if (window) t_.sliding_window = m_.PositiveInt("sliding_window", 0);
    // modeling_mixtral.py: a router (no bias) and num_local_experts SwiGLU experts, top-k per token.
    if (type == "mixtral") {
      t_.n_experts = m_.PositiveInt("num_local_experts");
      t_.top_k = m_.PositiveInt("num_experts_per_tok");
      if (t_.top_k > t_.n_experts) {
        throw InputError(m_.Loc("num_experts_per_tok"), "'num_experts_per_tok' is more than 'num_local_experts'");
      }
    }
  }

  // modeling_gpt2.py: learned positions, LayerNorm, GELU, biases (Conv1D), tied head.
  void Gpt2() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.context_length = m_.Has("n_positions") ? m_.PositiveInt("n_positions") : m_.PositiveInt("n_ctx");
    t_.d_model = m_.PositiveInt("n_embd");
    t_.n_layers = m_.PositiveInt("n_layer");
    t_.n_heads = m_.PositiveInt("n_head");
    t_.d_ff = m_.PositiveInt("n_inner", 4 * t_.d_model);
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", true);
    t_.dropout = m_.Probability("resid_pdrop", 0.1);
  }

  // modeling_phi.py (phi-2): one LayerNorm feeds attention and MLP in parallel, partial rotary,
  // biases everywhere, an untied head with a bias.
  void Phi() {
    ReadCommonSizes();
    rotary_fraction_ = m_.Fraction("partial_rotary_factor", 0.5);
    t_.parallel_block = true;
    t_.norms_per_block = 1;
    t_.tied_embeddings = m_.Bool("tie_word_embeddings", false);
    t_.lm_head_bias = true;
    t_.dropout = m_.Probability("resid_pdrop", 0);
    if (m_.Bool("qk_layernorm", false)) {
      throw InputError(m_.Loc("qk_layernorm"), "'qk_layernorm: true' is not supported yet");
    }
  }

  // modeling_falcon.py: fused query_key_value, multi-query or grouped (new_decoder_architecture)
  // attention, parallel attention and MLP, tied head.
  void Falcon() {
    t_.vocab_size = m_.PositiveInt("vocab_size");
    t_.d_model = m_.PositiveInt("hidden_size");
    t_.n_layers = m_.PositiveInt("num_hidden_layers");
    t_.n_heads = m_.PositiveInt("num_attention_heads");
    t_.d_ff = m_.PositiveInt("ffn_hidden_size", 4 * t_.d_model);
    t_.context_length = Context("max_position_embeddings");
    const bool new_arch = m_.Bool("new_decoder_architecture", false);
    if (new_arch) {
      t_.n_kv_heads = m_.PositiveInt("num_kv_heads", t_.n_heads);
    } else {
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
    if (!t_.final_norm) spec_.notes.push_back("OPT with do_layer_norm_before: false is post-norm; its counts "
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
        const char* heads = m_.Has("n_head") ? "n_head" : "num_attention_heads";  // GPT-2 and BLOOM: n_head
        throw InputError(m_.Loc(heads), "the hidden size (" + std::to_string(t_.d_model) +
                                                            ") is not divisible by the number of heads (" +
                                                            std::to_string(t_.n_heads) + ")");
      }
      t_.head_dim = t_.d_model / t_.n_heads;
    }
    if (t_.n_heads % t_.n_kv_heads != 0) {
      const char* key = m_.Has("num_key_value_heads") ? "num_key_value_heads" : "num_kv_heads";
      throw InputError(m_.Has(key) ? m_.Loc(key) : m_.MapLoc(), "the " + std::to_string(t_.n_heads) + " attention heads are not divisible "
                                    "by the " + std::to_string(t_.n_kv_heads) + " key/value heads");
    }
    // transformers: rotary_ndims = int(head_dim * partial_rotary_factor).
    if (rotary_fraction_ > 0) {
      t_.rotary_dim = static_cast<uint64_t>(static_cast<double>(t_.head_dim) * rotary_fraction_);
      // No dimension rotates: no RoPE at all (a rotary_dim of 0 would mean all of them).
      if (t_.rotary_dim == 0) t_.position = PositionKind::kNone;
    }
  }

  ConfigMap m_;
  ModelSpec spec_;
  TransformerSpec t_;
  double rotary_fraction_ = 0;
};

}  // namespace

const std::vector<std::string>& HfFamilies() {
  static const std::vector<std::string> kFamilies = {"bloom", "falcon", "gemma",   "gpt2", "gpt_neox", "llama",
                                                     "mistral", "mixtral", "opt", "phi",  "phi3",     "qwen2"};
  return kFamilies;
}

ModelSpec ReadHfConfig(const YAML::Node& root, const std::string& file) {
  const YAML::Node& const_root = root;
  YAML::Node type = const_root["model_type"];
  std::string name = type.IsScalar() ? type.Scalar() : "";
  const std::vector<std::string>& families = HfFamilies();
  if (std::find(families.begin(), families.end(), name) == families.end()) {
    std::string list;
    for (const std::string& f : families) list += (list.empty() ? "" : ", ") + f;
    std::string shown = type.IsScalar() ? "'" + type.Scalar() + "'" : Describe(type);
    throw InputError(LocOf(type, file), "unsupported model_type " + shown + DidYouMean(name, families) +
                                            "; tally reads " + list);
  }
  return HfReader(root, file).Read(name);
}

}  // namespace tally
