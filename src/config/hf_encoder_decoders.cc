// The encoder-decoder families of a Hugging Face config.json: t5, mt5 and umt5 (modeling_t5.py,
// modeling_umt5.py), bart (modeling_bart.py) and whisper (modeling_whisper.py).
#include <string>

#include "config/hf_families.h"
#include "config/hf_reader.h"

namespace tally {
namespace {

// The shared sizes of BART and Whisper: d_model, and one head count and width for both stacks.
void EncoderDecoderSizes(HfReader& r) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.d_model = m.PositiveInt("d_model");
  auto same = [&](const char* encoder, const char* decoder) {
    const uint64_t e = m.PositiveInt(encoder);
    if (m.PositiveInt(decoder) != e) {
      throw InputError(m.Loc(decoder), "'" + std::string(decoder) + "' differs from '" + encoder +
                                           "'; tally models stacks of one width and head count");
    }
    return e;
  };
  t.n_heads = same("encoder_attention_heads", "decoder_attention_heads");
  t.d_ff = same("encoder_ffn_dim", "decoder_ffn_dim");
  const uint64_t encoder = m.PositiveInt("encoder_layers");
  const uint64_t decoder = m.PositiveInt("decoder_layers");
  for (const char* key : {"encoder_layers", "decoder_layers"}) {
    if (m.PositiveInt(key) > 100'000) throw InputError(m.Loc(key), "more than 100000 layers");
  }
  t.encoder_layers = encoder;
  t.n_layers = encoder + decoder;
  t.layer_specs.assign(encoder, LayerSpec{});
  for (uint64_t i = 0; i < decoder; ++i) {
    t.layer_specs.push_back({.cross_attention = true, .encoder_output = i == 0});
  }
}

// Dropout on the residual branches and embeddings (dropout), on the attention probabilities
// (attention_dropout) and after the feed-forward activation (activation_dropout): tally has one
// switch for the first two.
void Dropouts(HfReader& r, double fallback) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.dropout = m.Probability("dropout", fallback);
  if ((m.Probability("attention_dropout", 0.0) > 0) != (t.dropout > 0)) {
    throw InputError(m.Has("attention_dropout") ? m.Loc("attention_dropout") : m.MapLoc(),
                     "attention_dropout and dropout must both be zero or both positive (tally has one dropout "
                     "switch for both)");
  }
  t.mlp_dropout = m.Probability("activation_dropout", 0.0) > 0;
}

}  // namespace

// modeling_t5.py (T5ForConditionalGeneration; modeling_mt5.py is the same code) and
// modeling_umt5.py: a shared embedding, an encoder stack of num_layers blocks and a decoder stack
// of num_decoder_layers (default num_layers), each pre-norm with T5's RMS-style LayerNorm (a
// weight, no bias, no mean), projections without biases to n_heads·d_kv (which need not be
// d_model), no position embedding but a relative-position bias table of [num_buckets, heads] in
// the first block of each stack (UMT5: in every block; never in cross-attention), each stack
// ending in a norm and a dropout. The feed-forward is feed_forward_proj: "relu" (wi, wo) or
// "gated-gelu" (wi_0, wi_1, wo), with a dropout before wo. A tied head (t5-small) reads the
// decoder's output scaled by d_model^-0.5; mT5 and T5 v1.1 untie it.
void ReadT5(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  const std::string arch = r.Architecture();
  const std::string model = type == "t5" ? "T5" : type == "mt5" ? "MT5" : "UMT5";
  if (!arch.empty() && arch != model + "ForConditionalGeneration" && arch != "T5WithLMHeadModel") {
    throw InputError(m.Loc("architectures"),
                     "unsupported architecture '" + arch + "'; tally reads " + model + "ForConditionalGeneration");
  }
  t.vocab_size = m.PositiveInt("vocab_size");
  t.d_model = m.PositiveInt("d_model");
  t.head_dim = m.PositiveInt("d_kv");
  t.n_heads = m.PositiveInt("num_heads");
  t.d_ff = m.PositiveInt("d_ff");
  const uint64_t encoder = m.PositiveInt("num_layers");
  const uint64_t decoder = m.PositiveInt("num_decoder_layers", encoder);
  for (const char* key : {"num_layers", "num_decoder_layers"}) {
    if (m.Has(key) && m.PositiveInt(key) > 100'000) throw InputError(m.Loc(key), "more than 100000 layers");
  }
  t.relative_buckets = m.PositiveInt("relative_attention_num_buckets", 32);
  // n_positions is only the tokenizer's length; it sets the default --seq (T5Config: 512).
  t.context_length = r.Context("n_positions", 512);
  const std::string ff = m.String("feed_forward_proj", "relu");
  if (ff == "relu") {
    t.mlp = MlpKind::kRelu;
  } else if (ff == "gelu") {
    t.mlp = MlpKind::kGelu;
  } else if (ff == "gated-gelu") {
    t.mlp = MlpKind::kGeglu;
  } else if (ff == "gated-silu") {
    t.mlp = MlpKind::kSwiglu;
  } else {
    throw InputError(m.Loc("feed_forward_proj"),
                     "unsupported feed_forward_proj '" + ff + "'; tally reads relu, gelu, gated-gelu and gated-silu");
  }
  t.norm = NormKind::kRmsNorm;
  t.position = PositionKind::kNone;
  t.qkv_bias = t.out_bias = t.mlp_bias = false;
  t.dropout = m.Probability("dropout_rate", 0.1);
  t.mlp_dropout = t.stack_dropout = true;
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  t.head_scale = t.tied_embeddings;
  t.encoder_layers = encoder;
  t.n_layers = encoder + decoder;
  const bool every = type == "umt5";
  for (uint64_t i = 0; i < encoder; ++i) t.layer_specs.push_back({.relative_bias = every || i == 0});
  for (uint64_t i = 0; i < decoder; ++i) {
    t.layer_specs.push_back({.cross_attention = true, .relative_bias = every || i == 0, .encoder_output = i == 0});
  }
}

// modeling_whisper.py (WhisperForConditionalGeneration): BART's key names, pre-norm layers
// (LayerNorm before each branch, with biases) and a final LayerNorm per stack; the encoder reads
// num_mel_bins mel features through two Conv1d (kernel 3, the second of stride 2) and adds
// sinusoidal positions stored as a frozen embedding of max_source_positions rows; the decoder has
// learned positions of max_target_positions rows; k_proj has no bias; proj_out is tied to the
// decoder's token table. WhisperModel ends in the decoder's states.
void ReadWhisper(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  const std::string arch = r.Architecture();
  if (!arch.empty() && arch != "WhisperModel" && arch != "WhisperForConditionalGeneration") {
    throw InputError(m.Loc("architectures"), "unsupported architecture '" + arch +
                                                 "'; tally reads WhisperModel and WhisperForConditionalGeneration");
  }
  EncoderDecoderSizes(r);
  t.mel_bins = m.PositiveInt("num_mel_bins", 80);
  t.context_length = m.PositiveInt("max_source_positions", 1500);
  t.target_context = m.PositiveInt("max_target_positions", 448);
  t.position = PositionKind::kLearned;
  t.mlp = r.EncoderActivation("activation_function");
  t.k_bias = false;
  t.norm_placement = NormPlacement::kPre;
  if (m.Bool("scale_embedding", false)) {
    throw InputError(m.Loc("scale_embedding"), "'scale_embedding: true' is not supported yet for whisper");
  }
  Dropouts(r, 0.0);
  t.no_head = arch == "WhisperModel";
  t.tied_embeddings = true;  // proj_out shares the decoder's embed_tokens
}

// modeling_bart.py: a shared embedding; encoder and decoder stacks (encoder_layers,
// decoder_layers), each with its own learned positions of max_position_embeddings + 2 rows (the
// offset of 2) and its own embedding LayerNorm (layernorm_embedding); post-norm layers
// (LayerNorm after each residual add), biases everywhere, no final norm; the decoder's layers
// with cross-attention. BartForConditionalGeneration ends in lm_head, tied to the shared
// embedding, plus final_logits_bias (a buffer: no parameter); BartModel in the decoder's states.
void ReadBart(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  const std::string arch = r.Architecture();
  if (!arch.empty() && arch != "BartModel" && arch != "BartForConditionalGeneration") {
    throw InputError(m.Loc("architectures"),
                     "unsupported architecture '" + arch + "'; tally reads BartModel and BartForConditionalGeneration");
  }
  EncoderDecoderSizes(r);
  if (m.Bool("normalize_before", false) || m.Bool("add_final_layer_norm", false)) {
    const char* key = m.Bool("normalize_before", false) ? "normalize_before" : "add_final_layer_norm";
    throw InputError(m.Loc(key), "'" + std::string(key) + ": true' (mBART's pre-norm layout) is not supported yet");
  }
  t.context_length = r.Context("max_position_embeddings", 1024);
  t.position = PositionKind::kLearned;
  t.position_offset = 2;  // BartLearnedPositionalEmbedding: num_embeddings + 2
  t.mlp = r.EncoderActivation("activation_function");
  t.embedding_norm = true;
  t.final_norm = false;
  t.norm_placement = NormPlacement::kAfterAdd;
  t.embed_scale = m.Bool("scale_embedding", false);
  Dropouts(r, 0.1);
  t.no_head = arch.empty() || arch == "BartModel";
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  t.logits_bias = !t.no_head;
}

}  // namespace tally
