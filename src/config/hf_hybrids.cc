// Hybrid decoders of a Hugging Face config.json whose blocks mix attention with a recurrent mixer
// (TransformerSpec::ssm, graph/build_ssm.cc), one reader per family (config/hf_families.h).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "config/hf_families.h"
#include "config/hf_reader.h"
#include "util/checked_math.h"
#include "util/parse.h"

namespace tally {
namespace {

// RecurrentGemma has no context length in its config and runs any length: the sequence length
// tally assumes when --seq is not given, the length its models were trained at (Botev et al. 2024,
// "RecurrentGemma", §3: sequences of 8192 tokens).
constexpr uint64_t kRecurrentGemmaSeq = 8192;

// One layer's mixer from a short list of block names repeated over the layers (RecurrentGemma's
// block_types: layers_block_type = (block_types · 100)[:num_hidden_layers]).
MixerKind RecurrentGemmaBlock(const ConfigMap& m, const std::string& key, const YAML::Node& list, size_t i) {
  const YAML::Node& v = list[i % list.size()];
  const std::string name = v.IsScalar() ? v.Scalar() : "";
  if (name == "recurrent") return MixerKind::kRgLru;
  if (name == "attention") return MixerKind::kAttention;
  throw InputError(LocOf(v, m.file()),
                   "unsupported block type " + Describe(v) + " in '" + key + "'; tally reads recurrent and attention");
}

}  // namespace

// configuration_recurrent_gemma.py, modeling_recurrent_gemma.py (Griffin: De et al. 2024): each
// block is temporal_pre_norm, its temporal block (the recurrent block of graph/build_ssm.cc, or
// local attention over attention_window_size tokens: MQA of num_key_value_heads, head_dim =
// hidden_size / num_attention_heads, q/k/v without biases unless attention_bias, o_proj with one,
// RoPE on partial_rotary_factor (0.5) of each head), channel_pre_norm, then a GeGLU MLP of
// intermediate_size / 2 whose three linears have biases. The RMSNorms scale by (1 + w), h weights
// each; the embedding is scaled by √h and tied to the head (logits soft-capped at logits_soft_cap).
void ReadRecurrentGemma(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // RecurrentGemmaConfig's defaults, read here: intermediate_size's is 3·hidden_size, checked before
  // the layers are read.
  t.vocab_size = m.PositiveInt("vocab_size", 256000);
  t.d_model = m.PositiveInt("hidden_size", 2560);
  const uint64_t ff = m.PositiveInt("intermediate_size", 3 * t.d_model);
  t.d_ff = ff / 2;  // RecurrentGemmaMlp: intermediate_size // 2
  if (t.d_ff == 0) throw InputError(m.Loc("intermediate_size"), "'intermediate_size' leaves no MLP width");
  t.n_layers = m.PositiveInt("num_hidden_layers", 26);
  t.n_heads = m.PositiveInt("num_attention_heads", 10);
  t.n_kv_heads = r.KvHeads(t.n_heads);
  // transformers computes head_dim = hidden_size // num_attention_heads whatever head_dim says.
  if (t.d_model % t.n_heads != 0) {
    throw InputError(m.Loc("num_attention_heads"), "hidden_size " + std::to_string(t.d_model) +
                                                       " is not divisible by the " + std::to_string(t.n_heads) +
                                                       " attention heads");
  }
  t.head_dim = t.d_model / t.n_heads;
  t.context_length = kRecurrentGemmaSeq;  // --seq's default only
  t.position = PositionKind::kRope;
  r.ReadRotaryFraction(0.5);
  t.norm = NormKind::kRmsNorm;
  const std::string act = m.String("hidden_activation", "gelu_pytorch_tanh");
  if (act.rfind("gelu", 0) != 0) {
    throw InputError(m.Loc("hidden_activation"), "unsupported hidden_activation '" + act + "'; tally reads gelu");
  }
  t.mlp = MlpKind::kGeglu;
  r.SetBiases(m.Bool("attention_bias", false), true, true);
  t.embed_scale = true;
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  SsmSpec& s = t.ssm;
  s.kind = MixerKind::kRgLru;
  s.d_inner = m.PositiveInt("lru_width", t.d_model);
  s.n_heads = t.n_heads;
  if (s.d_inner % s.n_heads != 0) {
    throw InputError(m.Has("lru_width") ? m.Loc("lru_width") : m.MapLoc(),
                     "lru_width " + std::to_string(s.d_inner) + " is not divisible by the " +
                         std::to_string(s.n_heads) + " blocks of the RG-LRU's gates (num_attention_heads)");
  }
  s.conv_kernel = m.PositiveInt("conv1d_width", 4);
  s.conv_bias = true;
  // block_types (the hub's files spell it _block_types), default (recurrent, recurrent, attention).
  r.PerLayer();
  const char* key = m.Has("block_types") ? "block_types" : m.Has("_block_types") ? "_block_types" : nullptr;
  r.mixers.assign(t.n_layers, MixerKind::kAttention);
  for (uint64_t i = 0; i < t.n_layers; ++i) {
    if (key == nullptr) {
      r.mixers[i] = i % 3 == 2 ? MixerKind::kAttention : MixerKind::kRgLru;
      continue;
    }
    const YAML::Node& list = m.Get(key);
    if (!list.IsSequence() || list.size() == 0) {
      throw InputError(m.Loc(key), "'" + std::string(key) + "' must be a list of block types, got " + Describe(list));
    }
    r.mixers[i] = RecurrentGemmaBlock(m, key, list, i);
  }
  r.UniformAttention(AttentionKind::kSliding, m.PositiveInt("attention_window_size", 2048));
}

// configuration_qwen3_next.py, modular_qwen3_next.py: layer i is gated attention (Qwen3NextAttention:
// q_proj of 2·a·d, the second half an output gate, RMSNorms over head_dim on q and k, RoPE on
// partial_rotary_factor (0.25) of each head, no biases unless attention_bias) when layer_types says
// full_attention, by default when (i + 1) % full_attention_interval == 0; else Gated DeltaNet
// (graph/build_ssm.cc). Its feed-forward is Qwen2-MoE's (routed experts of moe_intermediate_size, a
// router without a bias, a shared expert of shared_expert_intermediate_size scaled by
// sigmoid(shared_expert_gate)) unless the layer is in mlp_only_layers or (i + 1) %
// decoder_sparse_step != 0, then a SwiGLU MLP of intermediate_size. RMSNorms scale by (1 + w), h
// weights each; the head is untied. The checkpoints also store one multi-token-prediction layer
// (mtp.*: fc 2h → h, pre_fc_norm_embedding and pre_fc_norm_hidden, one gated-attention block with
// the experts, a final norm) that Qwen3NextForCausalLM skips on load (_keys_to_ignore_on_load_unexpected):
// params.mtp, counted as DeepSeek-V3's. The configs do not name it; mtp_num_hidden_layers or
// num_nextn_predict_layers, else 1 (vLLM's qwen3_next_mtp.py reads num_nextn_predict_layers, 1 by default).
void ReadQwen3Next(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // Qwen3NextConfig's defaults.
  r.ReadSizes({.vocab = 151936, .hidden = 2048, .intermediate = 5632, .layers = 48, .heads = 16});
  t.n_kv_heads = r.KvHeads(2);
  t.head_dim = m.PositiveInt("head_dim", 256);
  t.context_length = m.PositiveInt("max_position_embeddings", 32768);
  t.position = PositionKind::kRope;
  r.ReadRotaryFraction(0.25);
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kSwiglu;
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  t.qk_norm = QkNorm::kPerHead;
  t.attention_output_gate = true;
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  SsmSpec& s = t.ssm;
  s.kind = MixerKind::kGatedDeltaNet;
  s.n_heads = m.PositiveInt("linear_num_value_heads", 32);
  s.n_groups = m.PositiveInt("linear_num_key_heads", 16);
  s.d_state = m.PositiveInt("linear_key_head_dim", 128);
  s.d_inner = CheckedMul(s.n_heads, m.PositiveInt("linear_value_head_dim", 128), "the value width");
  s.conv_kernel = m.PositiveInt("linear_conv_kernel_dim", 4);
  s.conv_bias = false;
  if (s.n_heads % s.n_groups != 0) {
    throw InputError(m.Has("linear_num_value_heads") ? m.Loc("linear_num_value_heads") : m.MapLoc(),
                     "the " + std::to_string(s.n_heads) + " value heads are not divisible by the " +
                         std::to_string(s.n_groups) + " key heads");
  }
  r.PerLayer();
  r.mixer_types = {{"linear_attention", MixerKind::kGatedDeltaNet}};
  if (!m.Has("layer_types")) {
    const uint64_t interval = m.PositiveInt("full_attention_interval", 4);
    r.mixers.assign(t.n_layers, MixerKind::kAttention);
    for (uint64_t i = 0; i < t.n_layers; ++i) {
      if ((i + 1) % interval != 0) r.mixers[i] = MixerKind::kGatedDeltaNet;
    }
  }
  r.UniformAttention(AttentionKind::kFull, 0);
  const uint64_t experts = m.NonNegativeInt("num_experts", 512);
  if (experts > 0) {
    t.n_experts = experts;
    t.top_k = m.PositiveInt("num_experts_per_tok", 10);
    if (t.top_k > experts) {
      throw InputError(m.Loc("num_experts_per_tok"), "'num_experts_per_tok' is more than 'num_experts'");
    }
    t.moe_d_ff = m.PositiveInt("moe_intermediate_size", 512);
    t.shared_expert_d_ff = m.NonNegativeInt("shared_expert_intermediate_size", 512);
    t.shared_expert_gate = t.shared_expert_d_ff > 0;
    const uint64_t step = m.PositiveInt("decoder_sparse_step", 1);
    const std::vector<uint64_t> dense = r.IntList("mlp_only_layers", t.n_layers);
    r.moe.assign(t.n_layers, false);
    for (uint64_t i = 0; i < t.n_layers; ++i) {
      r.moe[i] = std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % step == 0;
    }
  }
  const char* mtp = m.Has("mtp_num_hidden_layers") ? "mtp_num_hidden_layers" : "num_nextn_predict_layers";
  t.mtp_layers = m.NonNegativeInt(mtp, 1);
}

namespace {

// Mamba-2's mixer as transformers builds it in its hybrids (BambaMixer, NemotronHMamba2Mixer,
// Mamba2Mixer): num_heads heads of head_dim make d_inner, n_groups groups share B and C of
// d_state, a depthwise conv1d of conv_kernel with an optional bias, in_proj and out_proj with an
// optional bias.
void Mamba2Mixer(HfReader& r, uint64_t heads, uint64_t head_dim, const char* heads_key) {
  const ConfigMap& m = r.m;
  SsmSpec& s = r.t.ssm;
  s.kind = MixerKind::kMamba2;
  s.n_heads = heads;
  s.d_inner = CheckedMul(heads, head_dim, "the Mamba-2 width");
  if (s.n_heads % s.n_groups != 0) {
    throw InputError(m.Has(heads_key) ? m.Loc(heads_key) : m.MapLoc(), "the " + std::to_string(s.n_heads) +
                                                                           " Mamba-2 heads are not divisible by the " +
                                                                           std::to_string(s.n_groups) + " groups");
  }
}

}  // namespace

// configuration_granitemoehybrid.py, modular_granitemoehybrid.py (Granite 4.0-H): each block is
// input_layernorm, a Mamba-2 mixer (BambaMixer) or attention (layer_types "mamba" / "attention";
// all Mamba without layer_types), post_attention_layernorm, then the experts (num_local_experts of
// intermediate_size, SwiGLU as input_linear h → 2·I and output_linear, a router without a bias)
// beside a shared SwiGLU MLP of shared_intermediate_size, or that shared MLP alone when there are
// no experts. Attention: q, k, v, o with biases under attention_bias, head_dim h / heads, RoPE only
// when position_embedding_type is "rope" (Granite 4.0-H: "nope"). The Mamba-2 mixer: mamba_n_heads
// heads of mamba_d_head ("auto": mamba_expand · h / heads), mamba_n_groups, mamba_d_state,
// mamba_d_conv, mamba_conv_bias, mamba_proj_bias. The multipliers (embedding, residual, attention,
// logits) are scalars.
void ReadGraniteMoeHybrid(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // GraniteMoeHybridConfig's defaults; intermediate_size is the experts' width, read only when there
  // are experts (below), and RoPE only under position_embedding_type.
  r.ReadSizes({.vocab = 32000, .hidden = 4096, .intermediate = kHfOwnKey, .layers = 32, .heads = 32});
  t.n_kv_heads = r.KvHeads(t.n_heads);
  t.context_length = m.PositiveInt("max_position_embeddings", 2048);
  const std::string position = m.String("position_embedding_type", "nope");
  t.position = position == "rope" ? PositionKind::kRope : PositionKind::kNone;
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kSwiglu;
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, false);
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  const uint64_t experts = m.NonNegativeInt("num_local_experts", 8);
  const uint64_t shared = m.PositiveInt("shared_intermediate_size", 1024);
  if (experts > 0) {
    t.n_experts = experts;
    t.top_k = m.PositiveInt("num_experts_per_tok", 2);
    if (t.top_k > experts) {
      throw InputError(m.Loc("num_experts_per_tok"), "'num_experts_per_tok' is more than 'num_local_experts'");
    }
    t.moe_d_ff = m.PositiveInt("intermediate_size", 11008);
    t.d_ff = t.moe_d_ff;
    t.shared_expert_d_ff = shared;
  } else {
    t.d_ff = shared;  // GraniteMoeHybridDecoderLayer: the shared MLP alone
  }
  SsmSpec& s = t.ssm;
  s.d_state = m.PositiveInt("mamba_d_state", 256);
  s.conv_kernel = m.PositiveInt("mamba_d_conv", 4);
  s.conv_bias = m.Bool("mamba_conv_bias", true);
  s.proj_bias = m.Bool("mamba_proj_bias", false);
  s.n_groups = m.PositiveInt("mamba_n_groups", 1);
  const uint64_t inner = CheckedMul(m.PositiveInt("mamba_expand", 2), t.d_model, "the Mamba-2 width");
  const uint64_t heads = m.PositiveInt("mamba_n_heads", 128);
  const bool automatic =
      !m.Has("mamba_d_head") || (m.Get("mamba_d_head").IsScalar() && m.Get("mamba_d_head").Scalar() == "auto");
  const uint64_t head_dim = automatic ? inner / heads : m.PositiveInt("mamba_d_head");
  if (CheckedMul(head_dim, heads, "the Mamba-2 width") != inner) {
    throw InputError(m.Has("mamba_n_heads") ? m.Loc("mamba_n_heads") : m.MapLoc(),
                     "mamba_n_heads · mamba_d_head (" + std::to_string(heads) + " · " + std::to_string(head_dim) +
                         ") is not mamba_expand · hidden_size (" + std::to_string(inner) + ")");
  }
  Mamba2Mixer(r, heads, head_dim, "mamba_n_heads");
  r.PerLayer();
  r.mixer_types = {{"mamba", MixerKind::kMamba2}, {"attention", MixerKind::kAttention}};
  if (!m.Has("layer_types")) r.mixers.assign(t.n_layers, MixerKind::kMamba2);
  r.UniformAttention(AttentionKind::kFull, 0);
}

namespace {

// One Nemotron-H block type: hybrid_override_pattern's letter or layers_block_type's name (the
// names before and after transformers v5: NemotronHConfig._pattern_to_list, remap_legacy_layer_types).
struct NemotronBlock {
  MixerKind mixer = MixerKind::kNone;
  bool mlp = false;
  bool moe = false;
};

std::optional<NemotronBlock> NemotronBlockOf(const std::string& name) {
  if (name == "M" || name == "mamba" || name == "linear_attention") return NemotronBlock{MixerKind::kMamba2};
  if (name == "*" || name == "attention" || name == "full_attention") return NemotronBlock{MixerKind::kAttention};
  if (name == "-" || name == "mlp") return NemotronBlock{MixerKind::kNone, true};
  if (name == "E" || name == "moe") return NemotronBlock{MixerKind::kNone, true, true};
  return std::nullopt;
}

// The blocks from layers_block_type (a list), else hybrid_override_pattern (a string of letters).
std::vector<NemotronBlock> NemotronBlocks(const ConfigMap& m) {
  std::vector<NemotronBlock> blocks;
  auto add = [&](const std::string& name, const SourceLoc& loc) {
    const std::optional<NemotronBlock> b = NemotronBlockOf(name);
    if (!b) {
      throw InputError(
          loc, "unsupported block type '" + name + "'; tally reads M (mamba), * (attention), - (mlp) and E (moe)");
    }
    blocks.push_back(*b);
  };
  if (m.Has("layers_block_type")) {
    const YAML::Node& list = m.Get("layers_block_type");
    if (!list.IsSequence() || list.size() == 0 || list.size() > kMaxLayerSpecs) {
      throw InputError(m.Loc("layers_block_type"),
                       "'layers_block_type' must be a list of block types, got " + Describe(list));
    }
    for (const YAML::Node& v : list) add(v.IsScalar() ? v.Scalar() : "", LocOf(v, m.file()));
    return blocks;
  }
  const std::string pattern = m.String("hybrid_override_pattern", "");
  if (pattern.empty() || pattern.size() > kMaxLayerSpecs) {
    throw InputError(m.Has("hybrid_override_pattern") ? m.Loc("hybrid_override_pattern") : m.MapLoc(),
                     "a Nemotron-H config needs its blocks: 'hybrid_override_pattern' or 'layers_block_type'");
  }
  for (char c : pattern) add(std::string(1, c), m.Loc("hybrid_override_pattern"));
  return blocks;
}

}  // namespace

// configuration_nemotron_h.py, modular_nemotron_h.py (Nemotron-H, Nemotron Nano 2): every block is
// x + mixer(RMSNorm(x)) with one mixer, as hybrid_override_pattern (or layers_block_type) lists the
// blocks: M a Mamba-2 mixer (NemotronHMamba2Mixer: mamba_num_heads of mamba_head_dim, n_groups,
// ssm_state_size, conv_kernel, conv1d's bias under use_conv_bias, in_proj's and out_proj's under
// use_bias), * attention (JambaAttention: head_dim, no positional encoding, biases under
// attention_bias), - an MLP (up_proj, down_proj of intermediate_size, biases under mlp_bias), E the
// experts (DeepSeek-V3's router and e_score_correction_bias, n_routed_experts MLPs of
// moe_intermediate_size, a shared MLP of moe_shared_expert_intermediate_size). The MLPs are not
// gated; their relu2 (squared ReLU) is counted as a ReLU. Final norm_f, untied head. The layer
// count is the pattern's length, as transformers takes it.
void ReadNemotronH(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  const std::vector<NemotronBlock> blocks = NemotronBlocks(m);
  t.n_layers = blocks.size();
  // NemotronHConfig's defaults; the layer count is the pattern's (above), not num_hidden_layers.
  r.ReadSizes({.vocab = 131072, .hidden = 4096, .intermediate = 21504, .layers = kHfOwnKey, .heads = 32});
  t.n_kv_heads = r.KvHeads(8);
  t.head_dim = m.PositiveInt("head_dim", 128);
  t.context_length = m.PositiveInt("max_position_embeddings", 4096);
  t.position = PositionKind::kNone;
  t.norm = NormKind::kRmsNorm;
  const std::string act = m.String("mlp_hidden_act", "relu2");
  if (act != "relu2" && act != "relu") {
    throw InputError(m.Loc("mlp_hidden_act"), "unsupported mlp_hidden_act '" + act + "'; tally reads relu2");
  }
  t.mlp = MlpKind::kRelu;
  const bool attention_bias = m.Bool("attention_bias", false);
  r.SetBiases(attention_bias, attention_bias, m.Bool("mlp_bias", false));
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  SsmSpec& s = t.ssm;
  s.d_state = m.PositiveInt("ssm_state_size", 128);
  s.n_groups = m.PositiveInt(m.Has("mamba_n_groups") ? "mamba_n_groups" : "n_groups", 8);
  s.conv_kernel = m.PositiveInt(m.Has("mamba_d_conv") ? "mamba_d_conv" : "conv_kernel", 4);
  s.conv_bias = m.Bool(m.Has("mamba_conv_bias") ? "mamba_conv_bias" : "use_conv_bias", true);
  s.proj_bias = m.Bool("use_bias", false);
  Mamba2Mixer(r, m.PositiveInt("mamba_num_heads", 128), m.PositiveInt("mamba_head_dim", 64), "mamba_num_heads");
  const bool experts = std::any_of(blocks.begin(), blocks.end(), [](const NemotronBlock& b) { return b.moe; });
  if (experts) {
    if (m.Has("moe_latent_size")) {
      throw InputError(m.Loc("moe_latent_size"), "the experts' latent projections (moe_latent_size) are not modelled");
    }
    t.n_experts = m.PositiveInt("n_routed_experts", 8);
    t.top_k = m.PositiveInt("num_experts_per_tok", 2);
    if (t.top_k > t.n_experts) {
      throw InputError(m.Loc("num_experts_per_tok"), "'num_experts_per_tok' is more than 'n_routed_experts'");
    }
    t.moe_d_ff = m.PositiveInt("moe_intermediate_size", 7688);
    t.shared_expert_d_ff = m.PositiveInt("moe_shared_expert_intermediate_size", 7688);
    t.router_score_bias = true;
  }
  if (m.NonNegativeInt("num_nextn_predict_layers", 0) > 0) {
    r.spec.notes.push_back("the checkpoint's multi-token-prediction layers (num_nextn_predict_layers) are not counted");
  }
  r.mixers.clear();
  for (const NemotronBlock& b : blocks) {
    r.mixers.push_back(b.mixer);
    r.mlps.push_back(b.mlp);
    r.moe.push_back(b.moe);
  }
  r.UniformAttention(AttentionKind::kFull, 0);
}

namespace {

// A positive factor (LFM2's block_ffn_dim_multiplier), 1 when absent or null.
double Multiplier(const ConfigMap& m, const std::string& key) {
  if (!m.Has(key)) return 1;
  const YAML::Node& v = m.Get(key);
  const std::optional<double> x = ReadDouble(v.IsScalar() ? v.Scalar() : "");
  if (!x || !(*x > 0) || *x > 1e6)
    throw InputError(m.Loc(key), "'" + key + "' must be a positive number, got " + Describe(v));
  return *x;
}

}  // namespace

// configuration_lfm2.py, modeling_lfm2.py (LFM2): each block is operator_norm, a gated short
// convolution (graph/build_ssm.cc; conv_L_cache taps, biases under conv_bias) or attention (q, k, v,
// out_proj without biases, RMSNorms over head_dim on q and k, RoPE), ffn_norm, a SwiGLU MLP (w1, w3,
// w2) of block_ff_dim (else intermediate_size), which block_auto_adjust_ff_dim makes int(2·ff / 3),
// times block_ffn_dim_multiplier, rounded up to block_multiple_of. Layers are "conv" or
// "full_attention" by layer_types, else attention at full_attn_idxs (all of them by default). A
// final RMSNorm (embedding_norm); the head is tied unless tie_word_embeddings (tie_embedding) is false.
void ReadLfm2(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // Lfm2Config's defaults; the MLP's width is block_ff_dim's before intermediate_size's (below).
  r.ReadCommonSizes({.vocab = 65536,
                     .hidden = 2560,
                     .intermediate = kHfOwnKey,
                     .layers = 32,
                     .heads = 32,
                     .kv_heads = 8,
                     .context = 128000});
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kSwiglu;
  r.SetBiases(false, false, false);
  t.qk_norm = QkNorm::kPerHead;
  t.tied_embeddings = m.Bool(m.Has("tie_embedding") ? "tie_embedding" : "tie_word_embeddings", true);
  const char* ff_key = m.Has("block_ff_dim") ? "block_ff_dim" : "intermediate_size";
  uint64_t ff = m.PositiveInt(ff_key, 12288);
  if (m.Bool("block_auto_adjust_ff_dim", true)) {
    ff = 2 * ff / 3;
    const double multiplier = Multiplier(m, "block_ffn_dim_multiplier");
    ff = static_cast<uint64_t>(multiplier * static_cast<double>(ff));  // int() truncates
    const uint64_t multiple = m.PositiveInt("block_multiple_of", 256);
    ff = CheckedMul(multiple, (ff + multiple - 1) / multiple, "the MLP width");
  }
  if (ff == 0) throw InputError(m.Loc(ff_key), "'" + std::string(ff_key) + "' leaves no MLP width");
  t.d_ff = ff;
  SsmSpec& s = t.ssm;
  s.kind = MixerKind::kShortConv;
  s.conv_kernel = m.PositiveInt("conv_L_cache", 3);
  s.conv_bias = m.Bool("conv_bias", false);
  r.PerLayer();
  r.mixer_types = {{"conv", MixerKind::kShortConv}};
  if (!m.Has("layer_types")) {
    r.mixers.assign(t.n_layers, MixerKind::kShortConv);
    if (m.Has("full_attn_idxs")) {
      for (uint64_t i : r.IntList("full_attn_idxs", t.n_layers)) r.mixers[i] = MixerKind::kAttention;
    } else {
      r.mixers.assign(t.n_layers, MixerKind::kAttention);
    }
  }
  r.UniformAttention(AttentionKind::kFull, 0);
}

// configuration_falcon_h1.py, modeling_falcon_h1.py (Falcon-H1): every block is input_layernorm,
// then attention (Llama's: head_dim, biases under attention_bias, RoPE) and a Mamba-2 mixer side by
// side on the normed input, their sum added to the block's input (TransformerSpec::parallel_ssm);
// pre_ff_layernorm and a SwiGLU MLP of intermediate_size (biases under mlp_bias); final_layernorm,
// untied head. The mixer: mamba_n_heads heads of mamba_d_head ("auto": d_inner / heads), d_inner =
// mamba_d_ssm (else mamba_expand · h), mamba_n_groups, mamba_d_state, mamba_d_conv with a bias under
// mamba_conv_bias, in_proj's bias under mamba_proj_bias, out_proj's under projectors_bias, the gated
// RMSNorm only with mamba_rms_norm. The µP multipliers are scalars (mup_vector is a buffer).
void ReadFalconH1(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // FalconH1Config's defaults.
  r.ReadSizes({.vocab = 128000, .hidden = 4096, .intermediate = 14336, .layers = 32, .heads = 32});
  t.n_kv_heads = r.KvHeads(t.n_heads);
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.context_length = m.PositiveInt("max_position_embeddings", 8192);
  t.position = PositionKind::kRope;
  t.norm = NormKind::kRmsNorm;
  t.mlp = MlpKind::kSwiglu;
  const bool bias = m.Bool("attention_bias", false);
  r.SetBiases(bias, bias, m.Bool("mlp_bias", false));
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  t.parallel_ssm = true;
  SsmSpec& s = t.ssm;
  s.d_state = m.PositiveInt("mamba_d_state", 256);
  s.n_groups = m.PositiveInt("mamba_n_groups", 1);
  s.conv_kernel = m.PositiveInt("mamba_d_conv", 4);
  s.conv_bias = m.Bool("mamba_conv_bias", true);
  s.proj_bias = m.Bool("mamba_proj_bias", false);
  s.out_bias = m.Bool("projectors_bias", false);
  s.gated_norm = m.Bool("mamba_rms_norm", false);
  const uint64_t inner = m.Has("mamba_d_ssm")
                             ? m.PositiveInt("mamba_d_ssm")
                             : CheckedMul(m.PositiveInt("mamba_expand", 2), t.d_model, "the Mamba-2 width");
  const uint64_t heads = m.PositiveInt("mamba_n_heads", 128);
  const bool automatic =
      !m.Has("mamba_d_head") || (m.Get("mamba_d_head").IsScalar() && m.Get("mamba_d_head").Scalar() == "auto");
  const uint64_t head_dim = automatic ? inner / heads : m.PositiveInt("mamba_d_head");
  if (CheckedMul(head_dim, heads, "the Mamba-2 width") != inner) {
    throw InputError(m.Has("mamba_n_heads") ? m.Loc("mamba_n_heads") : m.MapLoc(),
                     "mamba_n_heads · mamba_d_head (" + std::to_string(heads) + " · " + std::to_string(head_dim) +
                         ") is not the Mamba-2 width (" + std::to_string(inner) + ")");
  }
  Mamba2Mixer(r, heads, head_dim, "mamba_n_heads");
  r.UniformAttention(AttentionKind::kFull, 0);
}

namespace {

// linear_attn_config's kda_layers: the Kimi Delta Attention layers, numbered from 1
// (KimiLinearConfig.is_kda_layer: (layer_idx + 1) in kda_layers).
std::vector<bool> KdaLayers(const ConfigMap& lac, uint64_t layers) {
  std::vector<bool> kda(layers, false);
  if (!lac.Has("kda_layers")) return kda;
  const YAML::Node& list = lac.Get("kda_layers");
  if (!list.IsSequence()) {
    throw InputError(lac.Loc("kda_layers"), "'kda_layers' must be a list of layer numbers, got " + Describe(list));
  }
  for (const YAML::Node& v : list) {
    const uint64_t n = ReadPositiveInt(v, lac.file(), "an entry of 'kda_layers'");
    if (n > layers) {
      throw InputError(LocOf(v, lac.file()), "'kda_layers' has " + std::to_string(n) + ", past the " +
                                                 std::to_string(layers) + " layers (they are numbered from 1)");
    }
    kda[n - 1] = true;
  }
  return kda;
}

}  // namespace

// configuration_kimi.py, modeling_kimi.py of moonshotai/Kimi-Linear-48B-A3B (Kimi Team 2025, "Kimi
// Linear", arXiv:2510.26692): each block is input_layernorm, a token mixer, post_attention_layernorm
// and a feed-forward. The mixer is Kimi Delta Attention (graph/build_ssm.cc) on the layers
// linear_attn_config's kda_layers names (numbered from 1: num_heads heads of head_dim,
// short_conv_kernel_size taps), else DeepSeek-V3's multi-head latent attention without the query
// LoRA (q_proj of a·(nope + rope), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; no
// biases) whose rope part is left unrotated under mla_use_nope (NoPE). The feed-forward is
// DeepSeek-V3's MoE (num_experts of moe_intermediate_size, num_experts_per_token per token, a router
// with its e_score_correction_bias parameter, num_shared_experts as one MLP of their summed width)
// from first_k_dense_replace on every moe_layer_freq-th layer, else a SwiGLU MLP of
// intermediate_size. The head is untied. Kimi K3's additions to the same model_type (SiTU
// activation, the MLA output gate, full-rank KDA gates, latent experts) are refused.
void ReadKimiLinear(HfReader& r, const std::string&) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // KimiLinearConfig's defaults; model_max_length before max_position_embeddings, and no K/V key (MLA's, below).
  r.ReadSizes({.vocab = 163840, .hidden = 4096, .intermediate = 11008, .layers = 32, .heads = 32});
  t.context_length =
      m.Has("model_max_length") ? m.PositiveInt("model_max_length") : r.Context("max_position_embeddings");
  t.position = m.Bool("mla_use_nope", false) ? PositionKind::kNone : PositionKind::kRope;
  t.norm = NormKind::kRmsNorm;
  r.SiluGatedMlp();
  r.SetBiases(false, false, false);
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  for (const char* key : {"mla_use_output_gate", "routed_expert_hidden_size"}) {
    if (m.Has(key) && !(m.Get(key).IsScalar() && m.Get(key).Scalar() == "false")) {
      throw InputError(m.Loc(key), "'" + std::string(key) + "' is Kimi K3's, which tally does not read");
    }
  }
  MlaSpec& mla = t.mla;
  if (m.Has("q_lora_rank")) {
    throw InputError(m.Loc("q_lora_rank"), "KimiMLAAttention has no query LoRA ('q_lora_rank' must be null)");
  }
  mla.kv_lora_rank = m.PositiveInt("kv_lora_rank");
  mla.qk_nope_head_dim = m.PositiveInt("qk_nope_head_dim");
  mla.qk_rope_head_dim = m.PositiveInt("qk_rope_head_dim");
  mla.v_head_dim = m.PositiveInt("v_head_dim");
  t.head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  t.n_kv_heads = t.n_heads;  // the latent expands to every head
  r.kv_key.clear();
  const uint64_t experts = m.NonNegativeInt("num_experts", 0);
  if (experts > 0) {
    t.n_experts = experts;
    t.top_k = m.PositiveInt("num_experts_per_token");
    if (t.top_k > experts) {
      throw InputError(m.Loc("num_experts_per_token"), "'num_experts_per_token' is more than 'num_experts'");
    }
    t.moe_d_ff = m.PositiveInt("moe_intermediate_size");
    t.shared_expert_d_ff = CheckedMul(m.NonNegativeInt("num_shared_experts", 0), t.moe_d_ff, "the shared experts");
    t.router_score_bias = true;  // KimiMoEGate.e_score_correction_bias, an nn.Parameter
    const uint64_t first = m.NonNegativeInt("first_k_dense_replace", 0);
    const uint64_t freq = m.PositiveInt("moe_layer_freq", 1);
    r.PerLayer();
    r.moe.assign(t.n_layers, false);
    for (uint64_t i = first; i < t.n_layers; ++i) r.moe[i] = i % freq == 0;
  }
  if (m.NonNegativeInt("num_nextn_predict_layers", 0) > 0) {
    r.spec.notes.push_back("the checkpoint's multi-token-prediction layers (num_nextn_predict_layers) are not counted");
  }
  if (m.Has("linear_attn_config")) {
    const ConfigMap lac(m.Get("linear_attn_config"), m.file(), "linear_attn_config",
                        {"kda_layers", "num_heads", "head_dim", "short_conv_kernel_size", "use_full_rank_gate"},
                        UnknownKeys::kIgnore);
    if (lac.Bool("use_full_rank_gate", false)) {
      throw InputError(lac.Loc("use_full_rank_gate"), "Kimi K3's full-rank KDA gates are not read");
    }
    SsmSpec& s = t.ssm;
    s.kind = MixerKind::kKimiDelta;
    s.n_heads = lac.PositiveInt("num_heads");
    s.n_groups = s.n_heads;
    s.d_state = lac.PositiveInt("head_dim");
    s.d_inner = CheckedMul(s.n_heads, s.d_state, "the KDA width");
    s.conv_kernel = lac.PositiveInt("short_conv_kernel_size");
    s.conv_bias = false;
    r.PerLayer();
    const std::vector<bool> kda = KdaLayers(lac, t.n_layers);
    r.mixers.assign(t.n_layers, MixerKind::kAttention);
    for (uint64_t i = 0; i < t.n_layers; ++i) {
      if (kda[i]) r.mixers[i] = MixerKind::kKimiDelta;
    }
  }
  r.UniformAttention(AttentionKind::kLatent, 0);
}

// MiniMax-Text-01's and MiniMax-M1's hybrid (MiniMax 2025, "MiniMax-01", arXiv:2501.08313):
// transformers' configuration_minimax.py and modular_minimax.py (model_type minimax), and the
// checkpoints' own configuration_minimax_m1.py and modeling_minimax_m1.py (minimax_m1). Each block
// is input_layernorm, a token mixer, post_attention_layernorm and Mixtral's experts on every layer
// (num_local_experts SwiGLU experts w1, w3, w2 of intermediate_size, num_experts_per_tok per token,
// a router without a bias). The mixer is lightning attention (graph/build_ssm.cc: qkv_proj,
// output_gate, the norm over a·d, out_proj; a·d = num_attention_heads · head_dim, head_dim else
// h / a; blocks of block_size) on the layers layer_types names "linear_attention" (by default the
// odd ones), or whose attn_type_list entry is 0 (minimax_m1); else softmax attention (Mixtral's: q,
// k, v, o without biases, num_key_value_heads, RoPE on rotary_dim of each head when the config
// names it). The DeepNorm-style alpha and beta factors and postnorm (the residual carries the
// normalized stream) are scalars; the decay rates are buffers. Untied head.
void ReadMiniMax(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // MiniMaxConfig's defaults.
  r.ReadSizes({.vocab = 32000, .hidden = 4096, .intermediate = 14336, .layers = 32, .heads = 32});
  t.n_kv_heads = r.KvHeads(8);
  t.head_dim = m.PositiveInt("head_dim", 0);
  t.context_length = m.PositiveInt("max_position_embeddings", 4096 * 32);
  t.position = PositionKind::kRope;
  r.ReadRotaryFraction(0);
  t.rotary_dim = m.NonNegativeInt("rotary_dim", 0);
  t.norm = NormKind::kRmsNorm;
  r.SiluGatedMlp();
  r.SetBiases(false, false, false);
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  const uint64_t experts = m.PositiveInt("num_local_experts", 8);
  t.n_experts = experts;
  t.top_k = m.PositiveInt("num_experts_per_tok", 2);
  if (t.top_k > experts) {
    throw InputError(m.Loc("num_experts_per_tok"), "'num_experts_per_tok' is more than 'num_local_experts'");
  }
  t.moe_d_ff = t.d_ff;
  if (m.NonNegativeInt("shared_intermediate_size", 0) != 0) {
    throw InputError(
        m.Loc("shared_intermediate_size"),
        "MiniMax's shared expert (shared_intermediate_size) is not read; the released checkpoints have none");
  }
  if (t.head_dim == 0 && t.d_model % t.n_heads != 0) {
    throw InputError(m.Loc("num_attention_heads"), "hidden_size " + std::to_string(t.d_model) +
                                                       " is not divisible by the " + std::to_string(t.n_heads) +
                                                       " attention heads");
  }
  SsmSpec& s = t.ssm;
  s.kind = MixerKind::kLightning;
  s.n_heads = t.n_heads;
  s.n_groups = t.n_heads;
  s.d_state = t.head_dim > 0 ? t.head_dim : t.d_model / t.n_heads;
  s.d_inner = CheckedMul(s.n_heads, s.d_state, "the lightning-attention width");
  s.block = m.PositiveInt("block_size", 256);  // modeling_minimax_m1.py's BLOCK
  r.PerLayer();
  r.mixer_types = {{"linear_attention", MixerKind::kLightning}};
  if (!m.Has("layer_types")) {
    r.mixers.assign(t.n_layers, MixerKind::kAttention);
    if (m.Has("attn_type_list")) {
      const std::vector<uint64_t> kinds = r.IntList("attn_type_list", 2);
      if (kinds.size() != t.n_layers) {
        throw InputError(m.Loc("attn_type_list"), "'attn_type_list' must list the " + std::to_string(t.n_layers) +
                                                      " layers, got " + std::to_string(kinds.size()));
      }
      for (uint64_t i = 0; i < t.n_layers; ++i) {
        if (kinds[i] == 0) r.mixers[i] = MixerKind::kLightning;
      }
    } else if (type == "minimax_m1") {
      throw InputError(m.MapLoc(), "a MiniMax-M1 config needs its layers' kinds: 'attn_type_list'");
    } else {
      // MiniMaxConfig's default layer_types: full attention on the even layers.
      for (uint64_t i = 0; i < t.n_layers; ++i) {
        if ((i + 1) % 2 == 0) r.mixers[i] = MixerKind::kLightning;
      }
    }
  }
  r.UniformAttention(AttentionKind::kFull, 0);
}

}  // namespace tally
