// The encoder families of a Hugging Face config.json: bert, roberta and xlm-roberta
// (modeling_bert.py, modeling_roberta.py), distilbert (modeling_distilbert.py), modernbert
// (modeling_modernbert.py) and deberta-v2 (modeling_deberta_v2.py, DeBERTa v2 and v3).
#include <algorithm>
#include <sstream>
#include <string>

#include "config/hf_families.h"
#include "config/hf_reader.h"
#include "util/checked_math.h"

namespace tally {
namespace {

// The encoder's head from `architectures` (`base` is the bare model's class, e.g. BertModel):
// the bare model when absent. BertModel keeps its pooler; BertForMaskedLM and the RoBERTa
// classifier build the model without it (add_pooling_layer=False); DistilBERT has none.
void EncoderHeadOf(HfReader& r, const std::string& base, bool pooler) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  const std::string arch = r.Architecture();
  auto ends = [&](const std::string& suffix) {
    return arch.size() >= suffix.size() && arch.compare(arch.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  t.pooler = false;
  if (arch.empty() || arch == base) {
    t.head = EncoderHead::kNone;
    t.pooler = pooler;
  } else if (ends("ForMaskedLM")) {
    t.head = EncoderHead::kMaskedLm;
    t.tied_embeddings = m.Bool("tie_word_embeddings", true);
    t.lm_head_bias = true;
  } else if (ends("ForSequenceClassification")) {
    t.head = EncoderHead::kClassifier;
    t.pooler = pooler && base == "BertModel";
    // PretrainedConfig: num_labels is the size of id2label, 2 by default.
    if (m.Has("id2label") && m.Get("id2label").IsMap() && m.Get("id2label").size() > 0) {
      t.num_labels = m.Get("id2label").size();
    } else {
      t.num_labels = m.PositiveInt("num_labels", 2);
    }
  } else {
    const std::string family = base.substr(0, base.size() - std::string("Model").size());
    throw InputError(m.Loc("architectures"), "unsupported architecture '" + arch + "'; tally reads " + base + ", " +
                                                 family + "ForMaskedLM and " + family + "ForSequenceClassification");
  }
}

// The head of a ModernBERT or DeBERTa-v2 checkpoint from `architectures` (`family` + "Model",
// "ForMaskedLM" or "ForSequenceClassification"; none: the bare model, which has no pooler).
EncoderHead NewEncoderHead(HfReader& r, const std::string& family) {
  const std::string arch = r.Architecture();
  if (arch.empty() || arch == family + "Model") return EncoderHead::kNone;
  if (arch == family + "ForMaskedLM") return EncoderHead::kMaskedLm;
  if (arch == family + "ForSequenceClassification") {
    const ConfigMap& m = r.m;
    if (m.Has("id2label") && m.Get("id2label").IsMap() && m.Get("id2label").size() > 0) {
      r.t.num_labels = m.Get("id2label").size();
    } else {
      r.t.num_labels = m.PositiveInt("num_labels", 2);
    }
    return EncoderHead::kClassifier;
  }
  throw InputError(r.m.Loc("architectures"), "unsupported architecture '" + arch + "'; tally reads " + family +
                                                 "Model, " + family + "ForMaskedLM and " + family +
                                                 "ForSequenceClassification");
}

// A GELU by any of transformers' names, else an InputError at `key`.
void RequireGelu(const ConfigMap& m, const char* key) {
  if (m.String(key, "gelu").rfind("gelu", 0) != 0) {
    throw InputError(m.Loc(key), "unsupported " + std::string(key) + " '" + m.String(key, "") + "'; tally reads gelu");
  }
}

// max_relative_positions: a whole number, -1 (or any value < 1) meaning max_position_embeddings.
int64_t SignedInt(const ConfigMap& m, const std::string& key, int64_t fallback) {
  if (!m.Has(key)) return fallback;
  const YAML::Node& v = m.Get(key);
  try {
    if (v.IsScalar()) return v.as<int64_t>();
  } catch (const YAML::Exception&) {
  }
  throw InputError(m.Loc(key), "'" + key + "' must be a whole number, got " + Describe(v));
}

// pos_att_type: a list (["p2c", "c2p"]) or the hub's "p2c|c2p" string (DebertaV2Config splits it).
std::vector<std::string> PosAttTypes(const ConfigMap& m) {
  std::vector<std::string> out;
  if (!m.Has("pos_att_type")) return out;
  const YAML::Node& v = m.Get("pos_att_type");
  if (v.IsSequence()) {
    for (const YAML::Node& e : v) out.push_back(e.IsScalar() ? e.Scalar() : "");
  } else if (v.IsScalar()) {
    std::stringstream in(v.Scalar());
    for (std::string part; std::getline(in, part, '|');) out.push_back(part);
  }
  for (std::string& part : out) {
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    std::transform(part.begin(), part.end(), part.begin(), [](unsigned char c) { return std::tolower(c); });
    if (part != "c2p" && part != "p2c") {
      throw InputError(m.Loc("pos_att_type"), "unsupported pos_att_type entry '" + part + "'; tally reads c2p and p2c");
    }
  }
  return out;
}

}  // namespace

// modeling_bert.py and modeling_roberta.py (XLM-RoBERTa is RoBERTa's code): word, learned
// position and token-type embeddings summed and normalized, post-norm layers (LayerNorm after
// each residual add) with biases everywhere, a GELU MLP, bidirectional attention. RoBERTa
// numbers its positions from padding_idx + 1 = 2, so its max_position_embeddings (514) holds two
// rows no token uses: the usable context is 2 fewer.
void ReadBert(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes({.context = 512});  // BertConfig's 512 positions (RobertaConfig's and XLMRobertaConfig's too)
  t.encoder = true;
  t.position = PositionKind::kLearned;
  if (m.String("position_embedding_type", "absolute") != "absolute") {
    throw InputError(m.Loc("position_embedding_type"), "position_embedding_type '" +
                                                           m.String("position_embedding_type", "") +
                                                           "' is not supported yet; tally reads absolute");
  }
  if (type != "bert") {
    if (t.context_length <= 2) {
      throw InputError(m.Loc("max_position_embeddings"), "RoBERTa needs more than 2 positions (2 are padding)");
    }
    t.context_length -= 2;
    t.position_offset = 2;
  }
  t.token_types = m.PositiveInt("type_vocab_size", 2);
  t.mlp = r.EncoderActivation("hidden_act");
  t.embedding_norm = true;
  t.final_norm = false;
  t.norm_placement = NormPlacement::kAfterAdd;
  t.dropout = m.Probability("hidden_dropout_prob", 0.1);
  t.tied_embeddings = false;
  EncoderHeadOf(r, type == "bert" ? "BertModel" : type == "roberta" ? "RobertaModel" : "XLMRobertaModel", true);
}

// modeling_distilbert.py: BERT's layout under other key names, without token types or a pooler;
// sinusoidal_pos_embds fills the position table with fixed values, still an nn.Embedding.
void ReadDistilBert(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  t.vocab_size = m.PositiveInt("vocab_size");
  t.d_model = m.PositiveInt("dim");
  t.n_layers = m.PositiveInt("n_layers");
  t.n_heads = m.PositiveInt("n_heads");
  t.d_ff = m.PositiveInt("hidden_dim");
  t.context_length = r.Context("max_position_embeddings", 512);
  t.encoder = true;
  t.mlp = r.EncoderActivation("activation");
  t.embedding_norm = true;
  t.final_norm = false;
  t.norm_placement = NormPlacement::kAfterAdd;
  t.dropout = m.Probability("dropout", 0.1);
  t.tied_embeddings = false;
  EncoderHeadOf(r, "DistilBertModel", false);
}

// modeling_modernbert.py (configuration_modernbert.py's defaults: ModernBERT-base): token
// embeddings and their norm, pre-norm layers (layer 0 without attn_norm) of Wqkv and Wo and a GeGLU
// MLP (Wi of 2·intermediate_size, Wo), RoPE, a final norm; LayerNorms without biases unless
// norm_bias, no linear biases unless attention_bias and mlp_bias. Attention is global on every
// global_attn_every_n_layers-th layer from 0 (or as layer_types say), else local: a query sees the
// tokens within local_attention / 2 on either side, local_attention + 1 keys.
void ReadModernBert(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // ModernBertConfig's defaults; multi-head attention (no K/V key is read).
  r.ReadSizes({.vocab = 50368, .hidden = 768, .intermediate = 1152, .layers = 22, .heads = 12});
  t.context_length = m.PositiveInt("max_position_embeddings", 8192);
  t.position = PositionKind::kRope;
  RequireGelu(m, "hidden_activation");
  RequireGelu(m, "classifier_activation");
  t.mlp = MlpKind::kGeglu;
  t.norm = NormKind::kLayerNorm;
  t.norm_params = m.Bool("norm_bias", false) ? NormParams::kAffine : NormParams::kWeightOnly;
  const bool attention_bias = m.Bool("attention_bias", false);
  r.SetBiases(attention_bias, attention_bias, m.Bool("mlp_bias", false));
  t.encoder = true;
  t.embedding_norm = true;
  t.final_norm = true;
  t.dropout = 0;  // embedding_dropout, attention_dropout and mlp_dropout are 0 in the released configs
  t.tied_embeddings = m.Bool("tie_word_embeddings", true);
  const uint64_t every = m.PositiveInt("global_attn_every_n_layers", 3);
  const uint64_t window = m.PositiveInt("local_attention", 128) / 2;
  r.Attention(2 * window + 1, 0,
              [every](uint64_t i) { return i % every == 0 ? AttentionKind::kFull : AttentionKind::kSliding; });
  t.head = NewEncoderHead(r, "ModernBert");
  t.head_dense_bias = m.Bool("classifier_bias", false);
  t.lm_head_bias = t.head == EncoderHead::kMaskedLm && m.Bool("decoder_bias", true);
  t.prediction_head = t.head == EncoderHead::kClassifier;
}

// modeling_deberta_v2.py (configuration_deberta_v2.py's defaults: DeBERTa-v2-xlarge): BERT's
// post-norm layers (q, k and v projections with biases, GELU MLP, LayerNorm after each residual
// add) with disentangled attention (DisentangledSpec) when relative_attention; word embeddings
// (plus learned absolute positions when position_biased_input, and token types when
// type_vocab_size > 0) and their LayerNorm; no final norm. DebertaV2ForMaskedLM's lm_predictions
// (a dense and its bias, GELU, LayerNorm, the word embeddings as decoder with a bias of V) are
// BERT's masked-LM head in shape; DebertaV2ForSequenceClassification's ContextPooler (a dense and
// its activation over the first token) and classifier are BERT's pooler and classifier.
void ReadDebertaV2(HfReader& r, const std::string& /*type*/) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  // DebertaV2Config's defaults; multi-head attention (no K/V key is read).
  r.ReadSizes({.vocab = 128100, .hidden = 1536, .intermediate = 6144, .layers = 24, .heads = 24});
  t.head_dim = m.PositiveInt("attention_head_size", 0);
  t.context_length = m.PositiveInt("max_position_embeddings", 512);
  if (m.PositiveInt("embedding_size", t.d_model) != t.d_model) {
    throw InputError(m.Loc("embedding_size"), "an embedding_size other than hidden_size (embed_proj) is not modelled");
  }
  t.encoder = true;
  t.mlp = r.EncoderActivation("hidden_act");
  t.embedding_norm = true;
  t.final_norm = false;
  t.norm_placement = NormPlacement::kAfterAdd;
  t.dropout = m.Probability("hidden_dropout_prob", 0.1);
  t.tied_embeddings = false;
  t.position = m.Bool("position_biased_input", true) ? PositionKind::kLearned : PositionKind::kNone;
  t.token_types = m.NonNegativeInt("type_vocab_size", 0);
  DisentangledSpec& d = t.disentangled;
  if (m.Bool("relative_attention", false)) {
    const int64_t max_rel = SignedInt(m, "max_relative_positions", -1);
    const int64_t buckets = SignedInt(m, "position_buckets", -1);
    const uint64_t span = buckets > 0   ? static_cast<uint64_t>(buckets)
                          : max_rel < 1 ? t.context_length
                                        : static_cast<uint64_t>(max_rel);
    d.rel_rows = CheckedMul(2, span, "the relative-position embeddings");
    const std::string norm = m.String("norm_rel_ebd", "none");
    d.rel_norm = norm.find("layer_norm") != std::string::npos;
    d.share_att_key = m.Bool("share_att_key", false);
    for (const std::string& type : PosAttTypes(m)) (type == "c2p" ? d.c2p : d.p2c) = true;
  }
  d.conv_kernel = m.NonNegativeInt("conv_kernel_size", 0);
  if (d.conv_kernel > 0) {
    r.PerLayer();  // block 0 differs: every block is spelled out
    d.conv_groups = m.PositiveInt("conv_groups", 1);
    if (t.d_model % d.conv_groups != 0) {
      throw InputError(m.Loc("conv_groups"), "'conv_groups' must divide hidden_size");
    }
  }
  t.head = NewEncoderHead(r, "DebertaV2");
  if (t.head == EncoderHead::kMaskedLm) {
    t.tied_embeddings = true;
    t.lm_head_bias = true;
  }
  if (t.head == EncoderHead::kClassifier) {
    t.pooler = true;
    if (m.PositiveInt("pooler_hidden_size", t.d_model) != t.d_model) {
      throw InputError(m.Loc("pooler_hidden_size"), "a pooler_hidden_size other than hidden_size is not modelled");
    }
  }
}

// ModernBERT's layer 0 reads its input unnormalized; DeBERTa-v2's ConvLayer follows layer 0.
ModelSpec ReadHfEncoder(const YAML::Node& root, const std::string& file, const std::string& type) {
  ModelSpec spec = HfReader(root, file).Read(type, type == "modernbert" ? ReadModernBert : ReadDebertaV2);
  TransformerSpec& t = spec.transformer;
  const bool conv = t.disentangled.conv_kernel > 0;
  if (type != "modernbert" && !conv) return spec;
  if (t.layer_specs.empty()) {
    for (const auto& [layer, count] : LayerRuns(t)) t.layer_specs.insert(t.layer_specs.end(), count, layer);
  }
  if (type == "modernbert")
    t.layer_specs[0].attn_norm = false;
  else
    t.layer_specs[0].conv = true;
  return spec;
}

}  // namespace tally
