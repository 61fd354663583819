// The GPT-style decoder families of a Hugging Face config.json, each with its own key names and
// layout: gpt2, gpt_bigcode, phi, phi-msft, gptj, starcoder2, falcon, opt, gpt_neox and bloom.
#include <string>

#include "config/hf_families.h"
#include "config/hf_reader.h"

namespace tally {

// modeling_gpt2.py: learned positions, LayerNorm, GELU, biases (Conv1D), tied head.
// modeling_gpt_bigcode.py: the same with one K/V head under multi_query, always tied.
void ReadGpt2(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.context_length = m.Has("n_positions") ? m.PositiveInt("n_positions") : m.PositiveInt("n_ctx");
  t.d_model = m.PositiveInt("n_embd");
  t.n_layers = m.PositiveInt("n_layer");
  t.n_heads = m.PositiveInt("n_head");
  t.d_ff = m.PositiveInt("n_inner", 4 * t.d_model);
  t.tied_embeddings = type == "gpt_bigcode" || m.Bool("tie_word_embeddings", true);
  if (type == "gpt_bigcode") {
    r.kv_key = "multi_query";
    t.n_kv_heads = m.Bool("multi_query", true) ? 1 : t.n_heads;
  }
  t.dropout = m.Probability("resid_pdrop", 0.1);
}

// modeling_phi.py (phi-2): one LayerNorm feeds attention and MLP in parallel, partial rotary,
// biases everywhere, an untied head with a bias.
void ReadPhi(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  r.ReadRotaryFraction(0.5);
  t.parallel_block = true;
  t.norms_per_block = 1;
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  t.lm_head_bias = true;
  t.dropout = m.Probability("resid_pdrop", 0);
  if (m.Bool("qk_layernorm", false)) {
    throw InputError(m.Loc("qk_layernorm"), "'qk_layernorm: true' is not supported yet");
  }
}

// phi-2's original remote code (modeling_phi.py, model_type phi-msft): the same layout as phi
// with GPT-style key names; the head is a LayerNorm and a linear with a bias.
void ReadPhiMsft(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.d_model = m.PositiveInt("n_embd");
  t.n_layers = m.PositiveInt("n_layer");
  t.n_heads = m.PositiveInt("n_head");
  t.n_kv_heads = r.KvHeads(t.n_heads);
  t.d_ff = m.PositiveInt("n_inner", 4 * t.d_model);
  t.context_length = r.Context("n_positions");
  t.position = PositionKind::kRope;
  t.rotary_dim = m.PositiveInt("rotary_dim", 32);
  t.parallel_block = true;
  t.norms_per_block = 1;
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  t.lm_head_bias = true;
  t.dropout = m.Probability("resid_pdrop", 0);
}

// modeling_gptj.py: parallel attention and MLP after one LayerNorm, q/k/v/out without biases,
// rotary on the first rotary_dim dimensions of each head, an untied head with a bias.
void ReadGptj(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.d_model = m.PositiveInt("n_embd");
  t.n_layers = m.PositiveInt("n_layer");
  t.n_heads = m.PositiveInt("n_head");
  t.d_ff = m.PositiveInt("n_inner", 4 * t.d_model);
  t.context_length = r.Context("n_positions");
  t.position = PositionKind::kRope;
  t.rotary_dim = m.PositiveInt("rotary_dim", 0);
  t.parallel_block = true;
  t.norms_per_block = 1;
  r.SetBiases(false, false, true);
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
  t.lm_head_bias = true;
  t.dropout = m.Probability("resid_pdrop", 0);
}

// modeling_starcoder2.py: LayerNorm, GELU MLP (c_fc, c_proj), a bias on every linear (use_bias),
// one sliding window on every layer, tied by default.
void ReadStarcoder2(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  const bool bias = m.Bool("use_bias", true);
  r.SetBiases(bias, bias, bias);
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  const uint64_t window = m.PositiveInt("sliding_window", 0);
  r.UniformAttention(window > 0 ? AttentionKind::kSliding : AttentionKind::kFull, window);
}

// modeling_falcon.py: fused query_key_value, multi-query or grouped (new_decoder_architecture)
// attention, parallel attention and MLP, tied head. The legacy RefinedWeb (40B) and
// RefinedWebModel (7B) types name the keys n_layer, n_head, n_head_kv; RefinedWeb is the new
// decoder architecture (its own RWConfig; transformers' falcon conversion).
void ReadFalcon(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.d_model = r.Size({"hidden_size", "n_embed"});
  t.n_layers = r.Size({"num_hidden_layers", "n_layer"});
  t.n_heads = r.Size({"num_attention_heads", "n_head"});
  t.d_ff = m.PositiveInt("ffn_hidden_size", 4 * t.d_model);
  t.context_length = r.Context("max_position_embeddings");
  const bool new_arch = m.Bool("new_decoder_architecture", type == "RefinedWeb");
  if (new_arch) {
    t.n_kv_heads = r.KvHeads(t.n_heads);
  } else {
    r.kv_key = "multi_query";
    t.n_kv_heads = m.Bool("multi_query", true) ? 1 : t.n_heads;
  }
  t.parallel_block = new_arch || m.Bool("parallel_attn", true);
  t.norms_per_block = new_arch || !t.parallel_block ? 2 : 1;
  const bool bias = m.Bool("bias", false);
  r.SetBiases(bias, bias, bias);
  t.position = m.Bool("alibi", false) ? PositionKind::kAlibi : PositionKind::kRope;
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
}

// modeling_opt.py: learned positions with 2 extra rows, ReLU, biases, project_in/out when the
// embedding is narrower, no final norm for the post-norm variant (do_layer_norm_before: false).
void ReadOpt(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadSizes({.intermediate = kHfOwnKey});  // the MLP's width is ffn_dim
  t.d_ff = m.PositiveInt("ffn_dim");
  t.context_length = r.Context("max_position_embeddings");
  t.position_offset = 2;
  t.mlp = MlpKind::kRelu;
  uint64_t embed = m.PositiveInt("word_embed_proj_dim", t.d_model);
  t.embed_dim = embed == t.d_model ? 0 : embed;
  t.final_norm = m.Bool("do_layer_norm_before", true);
  if (!t.final_norm)
    r.spec.notes.push_back(
        "OPT with do_layer_norm_before: false is post-norm; its counts "
        "are those of the pre-norm layout, which has the same shapes");
  const bool bias = m.Bool("enable_bias", true);
  r.SetBiases(bias, bias, bias);
  if (!m.Bool("layer_norm_elementwise_affine", true)) {
    throw InputError(m.Loc("layer_norm_elementwise_affine"), "LayerNorms without weights are not supported yet");
  }
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  t.dropout = m.Probability("dropout", 0.1);
}

// modeling_gpt_neox.py (Pythia): fused qkv with biases, partial rotary, parallel residual with
// two LayerNorms, untied embed_out.
void ReadGptNeox(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes();
  r.rotary_fraction = m.Fraction("rotary_pct", 0.25);
  t.parallel_block = m.Bool("use_parallel_residual", true);
  const bool bias = m.Bool("attention_bias", true);
  r.SetBiases(bias, bias, true);
  t.tied_embeddings = m.Bool("tie_word_embeddings", false);
}

// modeling_bloom.py: ALiBi, a LayerNorm on the word embeddings, biases, GELU 4h, tied head.
void ReadBloom(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.d_model = m.Has("hidden_size") ? m.PositiveInt("hidden_size") : m.PositiveInt("n_embed");
  t.n_layers = m.PositiveInt("n_layer");
  t.n_heads = m.PositiveInt("n_head");
  t.d_ff = 4 * t.d_model;
  t.context_length = r.Context("seq_length");
  t.position = PositionKind::kAlibi;
  t.embedding_norm = true;
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
}

}  // namespace tally
