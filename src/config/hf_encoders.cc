// The encoder families of a Hugging Face config.json: bert, roberta and xlm-roberta
// (modeling_bert.py, modeling_roberta.py) and distilbert (modeling_distilbert.py).
#include <string>

#include "config/hf_families.h"
#include "config/hf_reader.h"

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

}  // namespace

// modeling_bert.py and modeling_roberta.py (XLM-RoBERTa is RoBERTa's code): word, learned
// position and token-type embeddings summed and normalized, post-norm layers (LayerNorm after
// each residual add) with biases everywhere, a GELU MLP, bidirectional attention. RoBERTa
// numbers its positions from padding_idx + 1 = 2, so its max_position_embeddings (514) holds two
// rows no token uses: the usable context is 2 fewer.
void ReadBert(HfReader& r, const std::string& type) {
  const ConfigMap& m = r.m;
  TransformerSpec& t = r.t;
  r.ReadCommonSizes(0, 512);
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

}  // namespace tally
