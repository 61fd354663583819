// Issue 16's encoders (BERT, RoBERTa, XLM-RoBERTa, DistilBERT) from their real config.json files
// (tests/data/hf/, provenance in SOURCES.md) against published parameter counts; the heads each
// `architectures` entry names are checked by swapping the entry in the same file.
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/kv_cache.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;
using testing::SummaryOf;

std::string Hf(const std::string& file) { return std::string(TALLY_TEST_DATA) + "/hf/" + file; }

// The fixture with its `architectures` entry replaced by `arch`.
ModelSpec WithArchitecture(const std::string& file, const std::string& from, const std::string& arch) {
  std::string text = ReadFileText(Hf(file));
  const size_t at = text.find('"' + from + '"');
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size() + 2, '"' + arch + '"');
  return LoadModelText(file, text);
}

uint64_t Total(const ModelSpec& spec, Settings s = {}) {
  if (spec.family == Family::kTransformer) s.seq = 8;
  return CountParams(ResolvedGraph(spec, s)).total;
}

TEST_CASE("encoders: the bare models against their published counts") {
  // bert-base-uncased as BertModel with its pooler: keras-hub bert_base_en_uncased and the
  // transformers printouts (index ids 2228351197, 42022416833): 109,482,240.
  CHECK(Total(WithArchitecture("bert-base-uncased.json", "BertForMaskedLM", "BertModel")) == 109'482'240);
  // roberta-base as RobertaModel (pooler included): TFRobertaModel summary (index id 17378708522)
  // and model-size tables (2228351197, 61364536227): 124,645,632.
  CHECK(Total(WithArchitecture("roberta-base.json", "RobertaForMaskedLM", "RobertaModel")) == 124'645'632);
  // xlm-roberta-base as XLMRobertaModel: RoBERTa's layout with V = 250,002, model-size table
  // (index id 16398057144): 278,043,648.
  CHECK(Total(WithArchitecture("xlm-roberta-base.json", "XLMRobertaForMaskedLM", "XLMRobertaModel")) == 278'043'648);
  // distilbert-base-uncased as DistilBertModel (no pooler): keras-hub distil_bert_base_en_uncased
  // "params": 66362880 (index id 3076219962); TFDistilBertModel summary (23541494392).
  CHECK(Total(WithArchitecture("distilbert-base-uncased.json", "DistilBertForMaskedLM", "DistilBertModel")) ==
        66'362'880);
}

TEST_CASE("encoders: the masked-LM heads the configs name") {
  // BertForMaskedLM drops the pooler (add_pooling_layer=False, 768·768 + 768 = 590,592) and adds
  // the transform (768·768 + 768), its LayerNorm (2·768) and the decoder's bias (30,522), the
  // decoder weight tied: 109,482,240 - 590,592 + 590,592 + 1,536 + 30,522 = 109,514,298, as
  // printed for AutoModelForMaskedLM('bert-base-uncased') (index ids 25387056261, 71289731837).
  CHECK(Total(LoadModelFile(Hf("bert-base-uncased.json"))) == 109'514'298);
  // RobertaForMaskedLM, the same way with V = 50,265: 124,645,632 + 1,536 + 50,265 = 124,697,433
  // (derived by hand).
  CHECK(Total(LoadModelFile(Hf("roberta-base.json"))) == 124'697'433);
  // XLMRobertaForMaskedLM: 278,043,648 + 1,536 + 250,002 = 278,295,186 (derived by hand).
  CHECK(Total(LoadModelFile(Hf("xlm-roberta-base.json"))) == 278'295'186);
  // DistilBertForMaskedLM: no pooler to drop, + 590,592 + 1,536 + 30,522 = 66,985,530, as printed
  // for DistilBERT in index id 71289731837.
  CHECK(Total(LoadModelFile(Hf("distilbert-base-uncased.json"))) == 66'985'530);
}

TEST_CASE("encoders: sequence classification") {
  // distilbert-base-uncased-finetuned-sst-2-english: DistilBertModel + pre_classifier (590,592) +
  // classifier (768·2 + 2 = 1,538), two labels from id2label; the Keras summary of the same model
  // lists 66,362,880, 590,592 and 1,538 (index id 43934580619): 66,955,010.
  CHECK(Total(LoadModelFile(Hf("distilbert-sst-2.json"))) == 66'955'010);
  // BertForSequenceClassification keeps the pooler: 109,482,240 + 768·2 + 2 = 109,483,778.
  CHECK(Total(WithArchitecture("bert-base-uncased.json", "BertForMaskedLM", "BertForSequenceClassification")) ==
        109'483'778);
  // RobertaForSequenceClassification: no pooler, its head's dense (590,592) and out_proj (1,538).
  CHECK(Total(WithArchitecture("roberta-base.json", "RobertaForMaskedLM", "RobertaForSequenceClassification")) ==
        124'645'632 - 590'592 + 590'592 + 1'538);
}

TEST_CASE("encoders: an architecture tally does not read is an error at the list") {
  CHECK_THROWS_WITH_AS(WithArchitecture("bert-base-uncased.json", "BertForMaskedLM", "BertForPreTraining"),
                       "bert-base-uncased.json:2:20: error: unsupported architecture 'BertForPreTraining'; tally "
                       "reads BertModel, BertForMaskedLM and BertForSequenceClassification",
                       InputError);
}

TEST_CASE("encoders: RoBERTa's position rows, and what an encoder costs") {
  const ModelSpec roberta = LoadModelFile(Hf("roberta-base.json"));
  // max_position_embeddings 514: two rows for the padding offset, 512 usable positions.
  CHECK(roberta.transformer.context_length == 512);
  CHECK(roberta.transformer.position_offset == 2);
  Settings s;
  s.seq = 513;
  CHECK_THROWS_AS(ResolvedGraph(roberta, s), InputError);

  const ModelSpec bert = LoadModelFile(Hf("bert-base-uncased.json"));
  s.seq = 128;
  // Forward FLOPs at 128 tokens: per layer 2·128·(768·2304 + 768·768 + 2·768·3072) = 1,811,939,328
  // for the linears and 2 · 2·128·128·64·12 = 50,331,648 for QK^T and AV, times 12; the MLM
  // transform 2·128·768·768 = 150,994,944 and decoder 2·128·768·30522 = 6,000,869,376.
  const uint64_t forward = 12ULL * (1'811'939'328 + 50'331'648) + 150'994'944 + 6'000'869'376;
  CHECK(forward == 28'499'116'032);
  CHECK(SummaryOf(bert, s)->flops.forward == forward);
  // Bidirectional: --causal halves nothing.
  s.causal = true;
  CHECK(SummaryOf(bert, s)->flops.forward == forward);
  // No KV cache.
  CHECK(KvBytesPerToken(testing::MemoryOf(bert, s), DType::kBf16) == 0);
}

TEST_CASE("encoders: the CLI") {
  // One block's activations at 512 tokens (flash attention, dropout 0.1, bf16): Korthikanti et al.
  // 2022's 34·s·b·h = 13,369,344 (the post-norm block saves the same tensors) plus the fp32
  // log-sum-exp, 4·a·s = 24,576, plus the two LayerNorms' fp32 mean and rstd, 16·s·b = 8,192.
  const auto r = testing::RunTally({"memory", Hf("bert-base-uncased.json"), "--seq", "512", "--format", "json"});
  CHECK(r.code == 0);
  CHECK(r.out.find("\"kv_cache\": 0") != std::string::npos);
  const auto act =
      testing::RunTally({"memory", Hf("bert-base-uncased.json"), "--seq", "512", "--get", "activations.per_layer"});
  CHECK(act.out == "13402112\n");
  const auto kv = testing::RunTally({"memory", Hf("bert-base-uncased.json"), "--get", "kv_cache.per_token"});
  CHECK(kv.out == "0\n");
  const auto infer =
      testing::RunTally({"time", Hf("bert-base-uncased.json"), "--hardware", "h100-sxm", "--mode", "infer"});
  CHECK(infer.code == 2);
  CHECK(infer.err.find("is an encoder and generates no tokens") != std::string::npos);
  // Every head through every command's consistency checks (RunTally): children sum, JSON, CSV.
  for (const char* file : {"distilbert-sst-2.json", "roberta-base.json", "vit-base-patch16-224.json"}) {
    CAPTURE(file);
    CHECK(testing::RunTally({"estimate", Hf(file), "--batch", "2"}).code == 0);
  }
  CHECK(testing::RunTally({"estimate", Hf("bert-base-uncased.json"), "--seq", "128", "--tp", "2"}).code == 0);
  // Freezing the head component: the MLM transform (590,592) stops training.
  // 109,514,298 - 590,592 = 108,923,706.
  const auto frozen = testing::RunTally({"estimate", Hf("bert-base-uncased.json"), "--seq", "128", "--trainable",
                                         "head=false", "--get", "params.trainable"});
  CHECK(frozen.out == "108923706\n");
}

TEST_CASE("encoders: ViT from config.json builds the vit-b-16 preset's graph") {
  // google/vit-base-patch16-224 (ViTForImageClassification, 1000 classes) is torchvision's vit_b_16:
  // 86,567,656 parameters, torchvision's ViT_B_16_Weights meta "num_params" (index id 12153866346).
  const ModelSpec hf = LoadModelFile(Hf("vit-base-patch16-224.json"));
  const ModelSpec preset = ResolveModel("vit-b-16");
  Settings s;
  s.batch = 2;
  const LayerGraph a = ResolvedGraph(hf, s);
  const LayerGraph b = ResolvedGraph(preset, s);
  CHECK(CountParams(a).total == 86'567'656);
  REQUIRE(a.layers.size() == b.layers.size());
  for (size_t i = 0; i < a.layers.size(); ++i) {
    CAPTURE(a.layers[i].path);
    CHECK(a.layers[i].path == b.layers[i].path);
    CHECK(a.layers[i].shape == b.layers[i].shape);
    CHECK(a.layers[i].params == b.layers[i].params);
    CHECK(a.layers[i].non_matmul_flops == b.layers[i].non_matmul_flops);
    CHECK(a.layers[i].gemms.size() == b.layers[i].gemms.size());
    CHECK(a.layers[i].saved.size() == b.layers[i].saved.size());
  }
  CHECK(SummaryOf(hf, s)->flops.forward == SummaryOf(preset, s)->flops.forward);
  // ViTModel keeps its pooler instead of the classifier: - (768·1000 + 1000) + (768·768 + 768)
  // = 86,389,248 (derived by hand).
  CHECK(Total(WithArchitecture("vit-base-patch16-224.json", "ViTForImageClassification", "ViTModel")) ==
        86'567'656 - 769'000 + 590'592);
}

}  // namespace
}  // namespace tally
