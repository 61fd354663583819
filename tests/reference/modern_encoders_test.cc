// Issue 30's encoders, ModernBERT and DeBERTa v2/v3, from config.json files in tests/data/hf/
// (provenance in SOURCES.md) against published parameter counts, with the layouts that tell them
// from BERT: ModernBERT's alternating global and local attention and its first layer without an
// attention norm; DeBERTa's disentangled attention and its shared relative-position table.
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;
using testing::SummaryOf;

std::string Hf(const std::string& file) { return std::string(TALLY_TEST_DATA) + "/hf/" + file; }

// The fixture with the first occurrence of `from` replaced by `to`.
ModelSpec Edited(const std::string& file, const std::string& from, const std::string& to) {
  std::string text = ReadFileText(Hf(file));
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return LoadModelText(file, text);
}

ParamCounts Params(const ModelSpec& spec) {
  Settings s;
  s.seq = 8;
  return CountParams(ResolvedGraph(spec, s));
}

TEST_CASE("modernbert: ModernBERT-base and -large against their published counts") {
  // modeling_modernbert.py, ModernBertForMaskedLM of ModernBERT-base (V 50,368, h 768, f 1,152, 22
  // layers), no biases, LayerNorms of weights only:
  //   tok_embeddings 50,368·768 = 38,682,624; embeddings.norm 768;
  //   each layer: attn_norm 768 (not layer 0), Wqkv 768·2304 = 1,769,472, Wo 768² = 589,824,
  //   mlp_norm 768, Wi 768·2·1152 = 1,769,472, Wo 1152·768 = 884,736: 5,015,040;
  //   22 layers less layer 0's attn_norm: 110,330,112; final_norm 768;
  //   head.dense 768² = 589,824 (classifier_bias false), head.norm 768, decoder.bias 50,368, the
  //   decoder weight tied to tok_embeddings:
  // 38,682,624 + 768 + 110,330,112 + 768 + 589,824 + 768 + 50,368 = 149,655,232, the HF API
  // safetensors total of answerdotai/ModernBERT-base (F32), which a safetensors-header reading
  // splits as 149,014,272 in model.* and 640,960 in the head and decoder bias (index ids
  // 70463584867, 68530611933; https://huggingface.co/answerdotai/ModernBERT-base).
  const ModelSpec base = LoadModelFile(Hf("modernbert-base.json"));
  CHECK(Params(base).total == 149'655'232);
  CHECK(Params(Edited("modernbert-base.json", "ModernBertForMaskedLM", "ModernBertModel")).total == 149'014'272);
  // ModernBERT-large (h 1024, f 2624, 28 layers) as the zero-shot classifier fine-tuned from it,
  // ModernBertForSequenceClassification with 2 labels: model.* 51,576,832 + 1,024 + 28·12,257,280 -
  // 1,024 + 1,024 = 394,781,696; head.dense 1024² and head.norm 1,024; classifier 1024·2 + 2:
  // 395,833,346, the count printed for a 2-logit ModernBERT-large classifier (index id 69763503783);
  // ModernBERT-large itself (the masked-LM head) is 395,881,664 (HF API, index id 68333517853).
  const ModelSpec large = LoadModelFile(Hf("modernbert-large-zeroshot-v2.0.json"));
  CHECK(Params(large).total == 395'833'346);
  CHECK(Params(Edited("modernbert-large-zeroshot-v2.0.json", "ModernBertForSequenceClassification",
                      "ModernBertForMaskedLM"))
            .total == 395'881'664);
}

TEST_CASE("modernbert: global attention every third layer, local windows of 128 tokens between") {
  const TransformerSpec t = LoadModelFile(Hf("modernbert-base.json")).transformer;
  REQUIRE(t.layer_specs.size() == 22);
  // configuration_modernbert.py: full when i % global_attn_every_n_layers == 0; a local layer's
  // query sees local_attention / 2 = 64 tokens each side and itself, 129 keys.
  CHECK(t.layer_specs[0].attention == AttentionKind::kFull);
  CHECK(t.layer_specs[1].attention == AttentionKind::kSliding);
  CHECK(t.layer_specs[1].span == 129);
  CHECK(t.layer_specs[3].attention == AttentionKind::kFull);
  CHECK_FALSE(t.layer_specs[0].attn_norm);
  CHECK(t.layer_specs[3].attn_norm);
  CHECK(t.encoder);
  // Attention FLOPs at 1,024 tokens: QK^T and AV, 2·2·s·keys·(12 heads · 64), on the 8 global
  // layers (0, 3, ..., 21) over 1,024 keys and the 14 local ones over 129.
  Settings s;
  s.seq = 1024;
  const uint64_t core = 8ULL * 4 * 1024 * 1024 * 768 + 14ULL * 4 * 1024 * 129 * 768;
  CHECK(core == 31'450'988'544ULL);
  CHECK(SummaryOf(LoadModelFile(Hf("modernbert-base.json")), s)
            ->flops.forward_by_component.at(Component::kAttentionCore) == core);
}

TEST_CASE("deberta-v2: DeBERTa-v3 base and large against their published counts") {
  // modeling_deberta_v2.py, DebertaV2Model of deberta-v3-base (V 128,100, h 768, f 3,072, 12
  // layers, position_buckets 256, share_att_key, no absolute positions, no token types):
  //   word_embeddings 128,100·768 = 98,380,800; embeddings.LayerNorm 1,536;
  //   each layer: query/key/value_proj 3·(768² + 768) = 1,771,776, output.dense 768² + 768,
  //   LayerNorm 1,536, intermediate 768·3072 + 3072, output 3072·768 + 768, LayerNorm 1,536:
  //   7,087,872; x 12 = 85,054,464;
  //   encoder.rel_embeddings 2·256 rows of 768 = 393,216 and encoder.LayerNorm 1,536:
  // 183,831,552. DebertaV2ForSequenceClassification adds ContextPooler's dense (768² + 768) and the
  // classifier (768·2 + 2): 184,423,682, the count of protectai/deberta-v3-base-prompt-injection-v2
  // (index id 68688959620) and of 'deberta-v3-base' in a parameter table (index id 29090630826).
  CHECK(Params(LoadModelFile(Hf("deberta-v3-base.json"))).total == 183'831'552);
  CHECK(Params(Edited("deberta-v3-base.json", "\"model_type\": \"deberta-v2\",",
                      "\"model_type\": \"deberta-v2\", \"architectures\": [\"DebertaV2ForSequenceClassification\"],"))
            .total == 184'423'682);
  // The masked-LM head (lm_predictions.lm_head: dense 768² + 768, LayerNorm 1,536, bias 128,100, the
  // word embeddings as decoder): 183,831,552 + 590,592 + 1,536 + 128,100 = 184,551,780.
  CHECK(Params(Edited("deberta-v3-base.json", "\"model_type\": \"deberta-v2\",",
                      "\"model_type\": \"deberta-v2\", \"architectures\": [\"DebertaV2ForMaskedLM\"],"))
            .total == 184'551'780);
  // deberta-v3-large (h 1024, f 4096, 24 layers) fine-tuned on CoLA, 2 labels: 131,174,400 +
  // 2,048 + 24·12,596,224 + 524,288 + 2,048 + 1,049,600 + 2,050 = 435,063,810, 'deberta-v3-large'
  // in the same parameter table (index id 29090630826).
  CHECK(Params(LoadModelFile(Hf("deberta-v3-large-cola.json"))).total == 435'063'810);
}

TEST_CASE("deberta-v2: disentangled attention's FLOPs, unshared projections and the v2 ConvLayer") {
  const ModelSpec rel = LoadModelFile(Hf("deberta-v3-base.json"));
  const ModelSpec plain =
      Edited("deberta-v3-base.json", "\"relative_attention\": true", "\"relative_attention\": false");
  Settings s;
  s.seq = 512;
  // Per layer at 512 tokens: the 512 relative rows through k_proj and q_proj, 2·512·768·1536, and
  // q·pos_kᵀ and k·pos_qᵀ per head, 2 · 2·512·512·64 · 12 heads: 2,013,265,920; x 12 layers.
  const uint64_t extra = 12ULL * (2ULL * 512 * 768 * 1536 + 2ULL * 2 * 512 * 512 * 64 * 12);
  CHECK(extra == 24'159'191'040ULL);
  CHECK(SummaryOf(rel, s)->flops.forward - SummaryOf(plain, s)->flops.forward == extra);
  // Without share_att_key each layer has pos_key_proj and pos_query_proj with biases.
  const ModelSpec own = Edited("deberta-v3-base.json", "\"share_att_key\": true", "\"share_att_key\": false");
  CHECK(Params(own).total - 183'831'552 == 12ULL * 2 * (768 * 768 + 768));
  // DeBERTa-v2's ConvLayer after layer 0 (conv_kernel_size 3): a Conv1d h -> h with its bias and a
  // LayerNorm, 768·768·3 + 768 + 2·768.
  const ModelSpec conv = Edited("deberta-v3-base.json", "\"relative_attention\": true",
                                "\"relative_attention\": true, \"conv_kernel_size\": 3, \"conv_act\": \"gelu\"");
  CHECK(Params(conv).total - 183'831'552 == 768ULL * 768 * 3 + 768 + 2 * 768);
  // The string form of pos_att_type and the list form read alike; an unknown entry is an error.
  CHECK(LoadModelFile(Hf("deberta-v3-large-cola.json")).transformer.disentangled.c2p);
  CHECK_THROWS_WITH_AS(Edited("deberta-v3-base.json", "\"p2c|c2p\"", "\"p2c|p2p\""),
                       doctest::Contains("unsupported pos_att_type entry 'p2p'"), InputError);
}

TEST_CASE("modern encoders: the CLI") {
  for (const char* file :
       {"modernbert-base.json", "modernbert-large-zeroshot-v2.0.json", "deberta-v3-large-cola.json"}) {
    CAPTURE(file);
    CHECK(testing::RunTally({"estimate", Hf(file), "--seq", "512", "--batch", "2"}).code == 0);
  }
  const auto kv = testing::RunTally({"memory", Hf("modernbert-base.json"), "--get", "kv_cache.per_token"});
  CHECK(kv.out == "0\n");
}

}  // namespace
}  // namespace tally
