// Issue 14's decoder families, read from their real config.json files (tests/data/hf/, provenance
// in SOURCES.md), against published parameter counts and hand-derived KV caches. Each figure and
// its derivation is in tests/data/hf/EXPECTED.md; the source of each published count is repeated
// here. KV@8192 is the ideal per-layer cache at batch 1 in bf16: full layers keep 8192 tokens,
// sliding(w) and chunked(c) layers min(8192, w or c), MLA layers one latent per token (no ×2).
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/activations.h"
#include "estimate/kv_cache.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

std::string Hf(const std::string& file) { return std::string(TALLY_TEST_DATA) + "/hf/" + file; }

struct FamilyRow {
  const char* file;
  uint64_t total;
  uint64_t active;                // MoE only (0: dense, active = total)
  uint64_t active_non_embedding;  // MoE only
  uint64_t kv_8192;               // bytes, batch 1, bf16
  const char* source;             // of `total`
};

const FamilyRow kFamilies[] = {
    {"qwen3-0.6b.json", 596'049'920, 0, 0, 939'524'096, "keras-hub qwen3_0.6b_en"},
    {"qwen3-8b.json", 8'190'735'360, 0, 0, 1'207'959'552, "keras-hub qwen3_8b_en; issue 14 anchor"},
    {"qwen3-32b.json", 32'762'123'264, 0, 0, 2'147'483'648, "keras-hub qwen3_32b_en; HF safetensors total"},
    {"qwen3-30b-a3b.json", 30'532'122'624, 3'353'032'704, 3'041'867'776, 805'306'368,
     "keras-hub qwen3_moe_30b_a3b_en; active: card '3.3B'"},
    {"gemma-2-2b.json", 2'614'341'888, 0, 0, 654'311'424, "keras-hub gemma2_2b_en"},
    {"gemma-2-9b.json", 9'241'705'984, 0, 0, 2'113'929'216, "keras-hub gemma2_9b_en; issue 14 anchor"},
    {"gemma-2-27b.json", 27'227'128'320, 0, 0, 2'315'255'808, "keras-hub gemma2_27b_en"},
    {"gemma-3-1b-it.json", 999'885'952, 0, 0, 45'088'768, "keras-hub gemma3_1b"},
    {"gemma-3-27b-it.json", 27'432'406'640, 0, 0, 1'107'296'256,
     "HF safetensors total with the vision tower and projector (kvfit table; keras-hub medgemma_instruct_27b)"},
    {"llama-3.1-8b.json", 8'030'261'248, 0, 0, 1'073'741'824, "keras-hub llama3.1_8b; HF API total"},
    {"llama-3.1-70b-instruct.json", 70'553'706'496, 0, 0, 2'684'354'560, "HF API total (3.1-70B and 3.3-70B)"},
    {"llama-3.2-1b-instruct.json", 1'235'814'400, 0, 0, 268'435'456,
     "derived; keras-hub's 1,498,482,688 counts the tied head twice (+128256·2048)"},
    {"llama-3.2-3b.json", 3'212'749'824, 0, 0, 939'524'096, "HF safetensors total"},
    // Active counts include the vision model and projector (871,932,416): no expert of theirs is idle.
    {"llama-4-scout-17b-16e.json", 108'641'793'536, 18'044'827'136, 17'010'341'376, 1'610'612'736,
     "HF safetensors total with the vision model and projector (kvfit table)"},
    {"gpt-oss-20b.json", 20'914'757'184, 4'187'440'704, 3'608'307'264, 204'472'320,
     "keras-hub gpt_oss_20b_en; active: OpenAI '3.6B'"},
    {"gpt-oss-120b.json", 116'829'156'672, 5'711'982'912, 5'132'849'472, 306'708'480,
     "keras-hub gpt_oss_120b_en; issue 14 anchor; active: OpenAI '5.1B'"},
    {"deepseek-v2-lite.json", 15'706'484'224, 2'661'150'208, 2'451'435'008, 254'803'968,
     "third-party runtime print and model table (EXPECTED.md); card '15.7B', '2.4B activated'"},
    {"deepseek-v3.json", 671'026'419'200, 37'552'297'472, 36'625'618'432, 575'668'224,
     "issue 14 anchor (main model with e_score_correction_bias); DeepSeek '36.6B activated'"},
    {"phi-3.5-moe-instruct.json", 41'873'153'344, 6'640'999'744, 6'509'665'600, 1'073'741'824,
     "derived from modeling_phimoe.py; card '42B total, 6.6B active'"},
    {"phi-4.json", 14'659'507'200, 0, 0, 1'677'721'600, "HF safetensors total; GGUF general.parameter_count"},
    {"phi-4-mini-instruct.json", 3'836'021'760, 0, 0, 1'073'741'824, "HF safetensors total"},
    {"mistral-nemo-base-2407.json", 12'247'782'400, 0, 0, 1'342'177'280,
     "HF total of Mistral-Nemo-Instruct-2407; llama.cpp n_params"},
    {"command-r-v01.json", 34'980'831'232, 0, 0, 10'737'418'240, "derived from modeling_cohere.py; card '35B'"},
    {"aya-23-8b.json", 8'028'033'024, 0, 0, 1'073'741'824, "aya-expanse-8b (same dims) model-size table"},
    {"command-r7b-12-2024.json", 8'028'033'024, 0, 0, 671'088'640,
     "derived (same layer sizes as aya-expanse-8b); card '8B'"},
    {"olmo-2-7b.json", 7'298'617'344, 0, 0, 4'294'967'296, "HF API safetensors.total of OLMo-2-1124-7B"},
    {"olmo-1b-hf.json", 1'176'764'416, 0, 0, 1'073'741'824, "sum(p.numel()) of OLMo-1B in a test"},
    {"starcoder2-7b.json", 7'173'923'840, 0, 0, 268'435'456, "derived (tied by the config default)"},
    {"starcoder2-15b.json", 15'957'889'024, 0, 0, 335'544'320, "derived (untied); card '16B'"},
    {"gpt-bigcode-santacoder.json", 1'124'886'528, 0, 0, 100'663'296, "derived; card '1.1B'"},
    {"gpt-j-6b.json", 6'050'882'784, 0, 0, 3'758'096'384,
     "derived; the card's 6,053,381,344 is 610·4096 above the module sum (another convention)"},
    {"falcon-7b-instruct-rw.json", 6'921'720'704, 0, 0, 67'108'864, "derived; as falcon-7b.json"},
    {"falcon-40b-rw.json", 41'303'293'952, 0, 0, 1'006'632'960, "derived; as falcon-40b.json"},
    {"phi-2-msft.json", 2'779'683'840, 0, 0, 2'684'354'560, "HF safetensors F16 total (as phi-2.json)"},
    // Issue 30's dense decoders.
    {"smollm3-3b.json", 3'075'098'624, 0, 0, 603'979'776,
     "HF API safetensors.total of SmolLM3-3B-Base and SmolLM3-3B; the index's total_size / 2"},
    {"granite-3.3-8b-instruct.json", 8'170'864'640, 0, 0, 1'342'177'280,
     "HF API safetensors.total of ibm-granite/granite-3.3-8b-instruct"},
    {"ernie-4.5-0.3b-pt.json", 360'748'032, 0, 0, 150'994'944,
     "derived from modular_ernie4_5.py; a third-party runtime print of an 18-layer ERNIE 4.5 (EXPECTED.md)"},
    {"kimi-k2-instruct.json", 1'026'408'232'448, 32'861'500'928, 31'687'095'808, 575'668'224,
     "derived from modeling_deepseek_v3.py (EXPECTED.md); Moonshot '1T total, 32B activated'"},
    // Issue 30's mixture-of-experts families (EXPECTED.md, "Issue 30").
    {"qwen1.5-moe-a2.7b-chat.json", 14'315'784'192, 2'689'173'504, 2'378'008'576, 1'610'612'736,
     "keras-hub qwen1.5_moe_2.7b_en; HF safetensors metadata; active: 'A2.7B'"},
    {"olmoe-1b-7b-0125-instruct.json", 6'919'161'856, 1'282'017'280, 1'178'994'688, 1'073'741'824,
     "HF API total of OLMoE-1B-7B-0924(-Instruct), the same dims; active: '1.3B'"},
    {"glm-4.7.json", 352'797'829'024, 33'632'266'144, 32'856'319'904, 3'087'007'744,
     "derived from modeling_glm4_moe.py; with the MTP layer and its copies, the HF safetensors total"},
    {"granite-3.1-3b-a800m-instruct.json", 3'298'793'472, 882'874'368, 807'372'288, 536'870'912,
     "granite-guardian-3.2-3b-a800m (same dims) in a model table"},
    // Issue 30's remaining MoE families (EXPECTED.md, "Issue 30: the remaining families").
    {"dbrx-instruct.json", 131'596'523'520, 36'469'708'800, 35'853'146'112, 1'342'177'280,
     "derived from modeling_dbrx.py; card '132B total, 36B active'"},
    {"ernie-4.5-21b-a3b-pt.json", 21'825'437'888, 3'352'150'208, 3'087'384'768, 469'762'048,
     "derived from modular_ernie4_5_moe.py; card '21B total, 3B activated'"},
    {"hunyuan-a13b-instruct.json", 80'393'183'232, 12'747'448'320, 12'222'476'288, 1'073'741'824,
     "derived from modeling_hunyuan_v1_moe.py; card '80B total, 13B active'"},
    {"ling-mini-2.0.json", 16'255'643'392, 1'432'973'056, 1'111'060'224, 335'544'320,
     "HF safetensors total of inclusionAI/Ling-mini-2.0; active: card '1.43B (non-embedding 789M)'"},
    {"minimax-m2.json", 228'689'764'864, 11'030'553'088, 10'415'956'480, 2'080'374'784,
     "HF API safetensors.total of MiniMaxAI/MiniMax-M2.7 (M2's dims); card '230B total, 10B active'"},
    // Issue 30's remaining dense families.
    {"apertus-8b.json", 8'053'338'176, 0, 0, 1'073'741'824,
     "sum(p.numel()) of Apertus-8B printed by a loader (EXPECTED.md)"},
    {"stablelm-2-1_6b.json", 1'644'515'328, 0, 0, 1'610'612'736, "stablelm-2-1_6b's parameters in a model table"},
    {"minitron-4b-base.json", 4'190'509'056, 0, 0, 1'073'741'824, "derived from modeling_nemotron.py; card '4B'"},
    {"internlm2_5-7b-chat.json", 7'737'708'544, 0, 0, 1'073'741'824,
     "internlm2_5-7b-chat in a model-size table; a runtime print and a checkpoint's element count"},
    {"exaone-3.0-7.8b-instruct.json", 7'818'448'896, 0, 0, 1'073'741'824,
     "derived from modeling_exaone.py's module printout; card '7.8B'"},
    {"minicpm-2b-sft-bf16.json", 2'724'880'896, 0, 0, 3'019'898'880, "a runtime print of MiniCPM-2B's parameters"},
    {"falcon3-3b-instruct.json", 3'227'655'168, 0, 0, 738'197'504,
     "tiiuae/Falcon3-3B-Instruct's parameters pinned at a revision (a Llama config)"},
};

Settings KvSettings() {
  Settings s;
  s.seq = 1;  // the cache does not depend on the sequence the graph is built for
  s.kv_dtype = DType::kBf16;
  return s;
}

uint64_t KvAt(const ModelSpec& spec, uint64_t context) {
  const Settings s = KvSettings();
  return KvCacheBytes(testing::MemoryOf(spec, s), context, 1, s, 0);
}

TEST_CASE("families: published parameter counts, active parameters and the KV cache at 8192") {
  for (const FamilyRow& row : kFamilies) {
    CAPTURE(row.file);
    CAPTURE(row.source);
    const ModelSpec spec = LoadModelFile(Hf(row.file));
    Settings s;
    s.seq = 1;
    const ParamCounts p = CountParams(ResolvedGraph(spec, s));
    CHECK(p.total == row.total);
    if (row.active > 0) {
      CHECK(p.active == row.active);
      CHECK(p.active_non_embedding == row.active_non_embedding);
    } else {
      CHECK(p.active == p.total);
    }
    CHECK(KvAt(spec, 8192) == row.kv_8192);
  }
}

TEST_CASE("families: Llama 4's active parameters per text token leave out the vision tower") {
  // The tower (850,960,896) and projector (20,971,520) run once per image: 18,044,827,136 less them
  // is 17,172,894,720, Meta's "17B (Activated)" for Llama 4 Scout (model card); a text model has
  // no such key (its active count is already per token).
  const ModelSpec spec = LoadModelFile(Hf("llama-4-scout-17b-16e.json"));
  Settings s;
  s.seq = 1;
  const ParamCounts p = CountParams(ResolvedGraph(spec, s));
  CHECK(p.by_component.at(Component::kVision) == 850'960'896);
  CHECK(p.by_component.at(Component::kProjector) == 20'971'520);
  CHECK(p.active_text == 18'044'827'136 - 850'960'896 - 20'971'520);
  const ParamCounts mixtral = CountParams(ResolvedGraph(LoadModelFile(Hf("mixtral-8x7b.json")), s));
  CHECK(mixtral.active_text == mixtral.active);
}

TEST_CASE("families: GLM-4.7's multi-token-prediction layer is reported apart from the total") {
  // model.layers.92 (not loaded by Glm4MoeForCausalLM): enorm and hnorm 2·5120, eh_proj
  // 2·5120·5120, one MoE decoder layer 3,935,625,632 and shared_head.norm 5120 (EXPECTED.md).
  Settings s;
  s.seq = 1;
  const ParamCounts p = CountParams(ResolvedGraph(LoadModelFile(Hf("glm-4.7.json")), s));
  CHECK(p.mtp == 2ULL * 5120 + 2ULL * 5120 * 5120 + 3'935'625'632ULL + 5120);
  CHECK(p.mtp == 3'988'069'792ULL);
  // With the layer's own copies of the embedding and head (2 · 151552 · 5120), the checkpoint's
  // 358,337,791,296 (HF safetensors metadata of GLM-4.7; the kvfit table's GLM-4.5).
  CHECK(p.total + p.mtp + 2ULL * 151552 * 5120 == 358'337'791'296ULL);
}

TEST_CASE("families: Qwen1.5-MoE's shared expert and its gate run in every block") {
  // Per block (modeling_qwen2_moe.py): the router 60·2048 and shared_expert_gate 2048 → 1, both
  // without a bias; the shared expert 3·2048·5632 beside the routed ones.
  Settings s;
  s.seq = 1;
  const ParamCounts p = CountParams(ResolvedGraph(LoadModelFile(Hf("qwen1.5-moe-a2.7b-chat.json")), s));
  CHECK(p.by_component.at(Component::kRouter) == 24ULL * (60 * 2048 + 2048));
  CHECK(p.total - p.active == 24ULL * (60 - 4) * 3 * 2048 * 1408);
}

TEST_CASE("families: windows and chunks bite past their span") {
  // Gemma-3-27B at 131072: 10 full layers (5, 11, ..., 59) keep every token, 52 sliding ones 1024;
  // 8,192 bytes per token and layer (2 · 16 · 128 · 2).
  CHECK(KvAt(LoadModelFile(Hf("gemma-3-27b-it.json")), 131072) == 10ULL * 131072 * 8192 + 52ULL * 1024 * 8192);
  CHECK(KvAt(LoadModelFile(Hf("gemma-3-27b-it.json")), 131072) == 11'173'625'856ULL);
  // Llama 4 Scout at 131072: 36 chunked(8192) layers and 12 full (3, 7, ..., 47), 4,096 B each.
  CHECK(KvAt(LoadModelFile(Hf("llama-4-scout-17b-16e.json")), 131072) == 7'650'410'496ULL);
  // gpt-oss-120b: the 128-token window on the 18 sliding layers only (the issue's trap gave every
  // layer the window: 36 · 128 · 2048 = 9,437,184).
  CHECK(KvAt(LoadModelFile(Hf("gpt-oss-120b.json")), 8192) == 18ULL * 128 * 2048 + 18ULL * 8192 * 2048);
}

TEST_CASE("families: each layer's attention follows layer_types or the family's rule") {
  auto kinds = [](const char* file) {
    const TransformerSpec t = LoadModelFile(Hf(file)).transformer;
    std::vector<LayerSpec> out;
    for (const auto& [spec, count] : LayerRuns(t)) out.insert(out.end(), count, spec);
    return out;
  };
  // configuration_gemma2.py: sliding when (i + 1) % 2, so layer 0 slides and layer 1 is full.
  const auto gemma2 = kinds("gemma-2-9b.json");
  REQUIRE(gemma2.size() == 42);
  CHECK(gemma2[0].attention == AttentionKind::kSliding);
  CHECK(gemma2[0].span == 4096);
  CHECK(gemma2[1].attention == AttentionKind::kFull);
  CHECK(gemma2[1].span == 0);
  // Gemma 3 1B: sliding_window 512, pattern 6: full on 5, 11, 17, 23.
  const auto gemma3 = kinds("gemma-3-1b-it.json");
  CHECK(gemma3[4].attention == AttentionKind::kSliding);
  CHECK(gemma3[4].span == 512);
  CHECK(gemma3[5].attention == AttentionKind::kFull);
  // Llama 4 Scout: no_rope_layers 0 on every fourth layer = full; every layer MoE (moe_layers).
  const auto scout = kinds("llama-4-scout-17b-16e.json");
  CHECK(scout[2].attention == AttentionKind::kChunked);
  CHECK(scout[2].span == 8192);
  CHECK(scout[3].attention == AttentionKind::kFull);
  CHECK(scout[3].moe);
  // DeepSeek-V2-Lite: first_k_dense_replace 1, then MoE; every layer latent.
  const auto lite = kinds("deepseek-v2-lite.json");
  CHECK_FALSE(lite[0].moe);
  CHECK(lite[1].moe);
  CHECK(lite[0].attention == AttentionKind::kLatent);
  // Qwen3: use_sliding_window false, so no layer slides, whatever sliding_window says.
  CHECK(LoadModelFile(Hf("qwen3-8b.json")).transformer.sliding_window == 0);
}

TEST_CASE("families: issue 30's layer patterns") {
  auto kinds = [](const ModelSpec& spec) {
    std::vector<LayerSpec> out;
    for (const auto& [layer, count] : LayerRuns(spec.transformer)) out.insert(out.end(), count, layer);
    return out;
  };
  const std::string small = R"("vocab_size": 10, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 4,
      "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64)";
  // configuration_smollm3.py: the NoPE layers (every 4th by default) slide with use_sliding_window.
  const auto smol = kinds(LoadModelText(
      "s.json", "{\"model_type\": \"smollm3\", " + small + ", \"use_sliding_window\": true, \"sliding_window\": 16}"));
  REQUIRE(smol.size() == 4);
  CHECK(smol[2].attention == AttentionKind::kFull);
  CHECK(smol[3].attention == AttentionKind::kSliding);
  CHECK(smol[3].span == 16);
  // The released SmolLM3-3B: no window, every layer full (its layer_types say so).
  CHECK(LoadModelFile(Hf("smollm3-3b.json")).transformer.layer_specs.empty());
  CHECK_THROWS_WITH_AS(
      LoadModelText("s.json", "{\"model_type\": \"smollm3\", " + small + ", \"no_rope_layers\": [1, 0]}"),
      "s.json:2:108: error: 'no_rope_layers' must list at least the 4 layers", InputError);
  // configuration_olmo3.py: sliding (default 4096) unless (i + 1) % 4 == 0.
  const auto olmo = kinds(LoadModelText("o.json", "{\"model_type\": \"olmo3\", " + small + "}"));
  CHECK(olmo[0].attention == AttentionKind::kSliding);
  CHECK(olmo[0].span == 4096);
  CHECK(olmo[3].attention == AttentionKind::kFull);
  // modular_exaone4.py: the pattern as letters (L sliding, G full), or null windows: all full.
  const auto exaone =
      kinds(LoadModelText("e.json", "{\"model_type\": \"exaone4\", " + small +
                                        ", \"sliding_window\": 16, \"sliding_window_pattern\": \"LLGG\"}"));
  CHECK(exaone[1].attention == AttentionKind::kSliding);
  CHECK(exaone[2].attention == AttentionKind::kFull);
  CHECK(exaone[3].attention == AttentionKind::kFull);
  const ModelSpec global =
      LoadModelText("e.json", "{\"model_type\": \"exaone4\", " + small + ", \"sliding_window\": null}");
  CHECK(global.transformer.sliding_window == 0);
  CHECK(global.transformer.layer_specs.empty());
  // Seed-OSS and ERNIE 4.5: head_dim is 128 when absent, not hidden_size / heads.
  CHECK(LoadModelText("x.json", "{\"model_type\": \"seed_oss\", " + small + "}").transformer.head_dim == 128);
  CHECK(LoadModelText("x.json", "{\"model_type\": \"ernie4_5\", " + small + "}").transformer.head_dim == 128);
  CHECK(LoadModelText("x.json", "{\"model_type\": \"granite\", " + small + "}").transformer.head_dim == 2);
  // GLM: 2 K/V heads and half of each 128-wide head rotated when the keys are absent.
  const TransformerSpec glm = LoadModelText("g.json", R"({"model_type": "glm", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 64})")
                                  .transformer;
  CHECK(glm.n_kv_heads == 2);
  CHECK(glm.head_dim == 128);
  CHECK(glm.rotary_dim == 64);
}

TEST_CASE("families: issue 30's remaining MoE layouts") {
  Settings s;
  s.seq = 1;
  auto counts = [&](const ModelSpec& spec) { return CountParams(ResolvedGraph(spec, s)); };
  // DBRX: LayerNorms with a weight and no bias (norm_1, norm_2 per block, norm_f), 4 of 16 experts.
  const ModelSpec dbrx = LoadModelFile(Hf("dbrx-instruct.json"));
  CHECK(dbrx.transformer.norm_params == NormParams::kWeightOnly);
  CHECK(dbrx.transformer.n_kv_heads == 8);
  CHECK(counts(dbrx).by_component.at(Component::kNorm) == 81ULL * 6144);
  CHECK_THROWS_WITH_AS(LoadModelText("d.json", R"({"model_type": "dbrx", "tie_word_embeddings": true})"),
                       "d.json:1:47: error: DBRX's head is never tied (DbrxConfig refuses tie_word_embeddings)",
                       InputError);
  // ERNIE 4.5: block 0 dense (moe_layer_start_index 1), the rest MoE with two shared experts.
  const TransformerSpec ernie = LoadModelFile(Hf("ernie-4.5-21b-a3b-pt.json")).transformer;
  REQUIRE(LayerRuns(ernie).size() == 2);
  CHECK_FALSE(LayerRuns(ernie)[0].first.moe);
  CHECK(LayerRuns(ernie)[1].second == 27);
  CHECK(ernie.shared_expert_d_ff == 2 * 1536);
  // Hunyuan-A13B's remote config (model_type "hunyuan") read by its class, per-layer lists and all.
  const ModelSpec hunyuan = LoadModelFile(Hf("hunyuan-a13b-instruct.json"));
  CHECK(hunyuan.description == "Hugging Face config.json, model_type hunyuan_v1_moe");
  // The trimmed copy has no max_position_embeddings: a second note assumes 2048 tokens.
  REQUIRE(hunyuan.notes.size() == 2);
  CHECK(hunyuan.notes[1] == std::string(TALLY_TEST_DATA) +
                                "/hf/hunyuan-a13b-instruct.json: model_type 'hunyuan' is not one tally reads; read as "
                                "'hunyuan_v1_moe' from its architectures entry 'HunYuanMoEV1ForCausalLM'");
  CHECK(hunyuan.transformer.top_k == 8);
  CHECK_THROWS_WITH_AS(LoadModelText("h.json", R"({"model_type": "hunyuan_v1_moe", "vocab_size": 10,
      "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_experts": 2, "moe_topk": [1, 2]})"),
                       "h.json:3:41: error: 'moe_topk' differs between layers (1, 2); tally reads one value for "
                       "every layer",
                       InputError);
  // Ling 2.0: MTP layers are DeepSeek-V3's modules, reported apart: one MoE block (attention 10,486,016,
  // norms 4,096, MoE 808,976,640), eh_proj 2·2048², enorm, hnorm and final_layernorm 3·2048.
  std::string ling = R"({"model_type": "bailing_moe_v2", "num_nextn_predict_layers": 1, "vocab_size": 157184,
      "hidden_size": 2048, "intermediate_size": 5120, "num_hidden_layers": 20, "num_attention_heads": 16,
      "num_key_value_heads": 4, "num_experts": 256, "num_shared_experts": 1, "max_position_embeddings": 32768})";
  const ParamCounts with_mtp = counts(LoadModelText("l.json", ling));
  CHECK(with_mtp.total == 16'255'643'392ULL);
  CHECK(with_mtp.mtp == 10'486'016ULL + 4'096 + 808'976'640 + 2ULL * 2048 * 2048 + 3 * 2048);
  // MiniMax-M2: q/k norms over the whole projections, RoPE on 64 of 128 dimensions; lightning
  // attention (MiniMax-M1's, read as minimax_m1) refused.
  const TransformerSpec m2 = LoadModelFile(Hf("minimax-m2.json")).transformer;
  CHECK(m2.qk_norm == QkNorm::kProjection);
  CHECK(m2.rotary_dim == 64);
  CHECK(m2.router_score_bias);
  CHECK_THROWS_WITH_AS(LoadModelText("m.json", R"({"model_type": "minimax_m2", "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 4, "num_hidden_layers": 2, "num_attention_heads": 4, "attn_type_list": [0, 1]})"),
                       "m.json:2:99: error: lightning-attention layers (0 in 'attn_type_list') are MiniMax-M1's: "
                       "model_type minimax_m1, not minimax_m2",
                       InputError);
}

TEST_CASE("families: issue 30's remaining dense layouts") {
  Settings s;
  s.seq = 1;
  auto counts = [&](const ModelSpec& spec) { return CountParams(ResolvedGraph(spec, s)); };
  // Apertus: xIELU's two learnable values in each of the 32 MLPs.
  const ModelSpec apertus = LoadModelFile(Hf("apertus-8b.json"));
  CHECK(apertus.transformer.mlp == MlpKind::kXielu);
  CHECK(counts(apertus).by_component.at(Component::kMlp) == 32ULL * (2 * 4096 * 21504 + 2));
  // Nemotron: ReLU², up and down only; LayerNorm1P's weight and bias.
  const ModelSpec nemotron = LoadModelFile(Hf("minitron-4b-base.json"));
  CHECK(nemotron.transformer.mlp == MlpKind::kRelu2);
  CHECK(nemotron.transformer.rotary_dim == 64);
  CHECK(counts(nemotron).by_component.at(Component::kMlp) == 32ULL * 2 * 3072 * 9216);
  // StableLM 2 12B's layout on small sizes: qk_layernorm (a LayerNorm without a bias per head: a·d and
  // g·d weights) and the parallel residual with one LayerNorm. V 10, h 8, 4 heads of 2, 2 K/V heads,
  // f 16, 1 layer: q 64, k 32, v 32 and no biases, o 64, q/k norms 8 + 4, one LayerNorm 16, MLP 384:
  // 604; embedding and head 160, final LayerNorm 16: 604 + 176 = 780.
  const ModelSpec stablelm = LoadModelText("s.json", R"({"model_type": "stablelm", "vocab_size": 10,
      "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 4,
      "num_key_value_heads": 2, "max_position_embeddings": 64, "qk_layernorm": true,
      "use_parallel_residual": true})");
  CHECK(stablelm.transformer.parallel_block);
  CHECK(counts(stablelm).total == 780);
  // EXAONE 3: num_layers, and an untied head only when the config says so.
  CHECK(LoadModelFile(Hf("exaone-3.0-7.8b-instruct.json")).transformer.n_layers == 32);
  CHECK(LoadModelText("e.json", R"({"model_type": "exaone", "vocab_size": 10, "hidden_size": 8,
      "num_layers": 1, "num_attention_heads": 4, "max_position_embeddings": 64})")
            .transformer.d_ff == 32);
  // InternLM2: wqkv and wo carry biases unless `bias` is false.
  const TransformerSpec internlm = LoadModelText("i.json", R"({"model_type": "internlm2", "vocab_size": 10,
      "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 4,
      "max_position_embeddings": 64})")
                                       .transformer;
  CHECK(internlm.qkv_bias);
  CHECK(internlm.out_bias);
  CHECK_FALSE(internlm.mlp_bias);
  // MiniCPM's remote configs (some without model_type) are tied by default.
  CHECK(LoadModelFile(Hf("minicpm-2b-sft-bf16.json")).transformer.tied_embeddings);
}

TEST_CASE("families: ReLU² and xIELU save what GELU saves for backward") {
  // An MLP of up and down (d_ff 64) around each activation: GELU and xIELU keep their input, ReLU²
  // relu(x) (its square's input), and the down projection its input; ReLU keeps only its output,
  // which is the down projection's input: one tensor of d_ff per token fewer.
  auto per_layer = [](const char* mlp) {
    const ModelSpec spec = LoadModelText("m.yaml", std::string(R"(family: transformer
vocab_size: 100
context_length: 64
d_model: 16
n_layers: 1
n_heads: 2
d_ff: 64
norm: rmsnorm
bias: false
position: rope
mlp: )") + mlp + "\n");
    Settings s;
    s.seq = 8;
    return TrainingActivations(testing::MemoryOf(spec, s), s, 0).per_layer;
  };
  CHECK(per_layer("relu2") == per_layer("gelu"));
  CHECK(per_layer("xielu") == per_layer("gelu"));
  CHECK(per_layer("gelu") - per_layer("relu") == 8 * 64 * 2);  // 8 tokens · d_ff 64 · 2 bytes (bf16)
}

TEST_CASE("families: a config read by its architectures") {
  // Kimi K2's own model_type and DeepSeek-V3's class: read as DeepSeek-V3, with its score bias.
  const ModelSpec kimi = LoadModelFile(Hf("kimi-k2-instruct.json"));
  CHECK(kimi.transformer.router_score_bias);
  CHECK(kimi.notes.empty());
  // A model_type tally does not read, or none, with a class it knows: read by that class's row.
  const std::string body = R"("architectures": ["SmolLM3ForCausalLM"], "vocab_size": 10, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4, "max_position_embeddings": 64})";
  const ModelSpec renamed = LoadModelText("r.json", R"({"model_type": "smol_custom", )" + body);
  CHECK(renamed.description == "Hugging Face config.json, model_type smollm3");
  REQUIRE(renamed.notes.size() == 1);
  CHECK(renamed.notes[0] ==
        "r.json: model_type 'smol_custom' is not one tally reads; read as 'smollm3' from its architectures "
        "entry 'SmolLM3ForCausalLM'");
  const ModelSpec untyped = LoadModelText("r.json", "{" + body);
  REQUIRE(untyped.notes.size() == 1);
  CHECK(untyped.notes[0] ==
        "r.json: no model_type; read as 'smollm3' from its architectures entry 'SmolLM3ForCausalLM'");
  // Both the same family: the model_type decides, with no note.
  CHECK(LoadModelText("r.json", R"({"model_type": "smollm3", )" + body).notes.empty());
}

TEST_CASE("families: DeepSeek details") {
  ModelSpec v3 = LoadModelFile(Hf("deepseek-v3.json"));
  Settings s;
  s.seq = 1;
  // The MTP module, apart from the total: enorm 7,168 + hnorm 7,168 + eh_proj 2·7168·7168 + one MoE
  // decoder layer 11,507,286,272 + shared_head.norm 7,168 (EXPECTED.md).
  CHECK(CountParams(ResolvedGraph(v3, s)).mtp == 3ULL * 7168 + 2ULL * 7168 * 7168 + 11'507'286'272ULL);
  CHECK(CountParams(ResolvedGraph(v3, s)).mtp == 11'610'068'224ULL);
  // Hugging Face's eager layout: full K and V per head, 61 · 8192 · 128 · (192 + 128) · 2 bytes.
  v3.transformer.mla.full_kv_cache = true;
  CHECK(KvAt(v3, 8192) == 40'936'407'040ULL);
  // V2-Lite's explicit q_lora_rank: null is a plain q_proj (the config default would be 1536).
  CHECK(LoadModelFile(Hf("deepseek-v2-lite.json")).transformer.mla.q_lora_rank == 0);
  CHECK(v3.transformer.mla.q_lora_rank == 1536);
}

TEST_CASE("families: nested text_config and legacy spellings") {
  const ModelSpec gemma3 = LoadModelFile(Hf("gemma-3-27b-it.json"));
  CHECK(gemma3.transformer.vocab_size == 262'208);  // Gemma3TextConfig's default: no key in text_config
  CHECK(gemma3.notes.empty());                      // its vision tower is counted (vision_test.cc)
  CHECK(gemma3.transformer.vision.has_value());
  CHECK(LoadModelFile(Hf("falcon-40b-rw.json")).transformer.n_kv_heads == 8);          // n_head_kv
  CHECK(LoadModelFile(Hf("falcon-7b-instruct-rw.json")).transformer.n_kv_heads == 1);  // multi_query
  CHECK(LoadModelFile(Hf("gpt-bigcode-santacoder.json")).transformer.n_kv_heads == 1);
  CHECK(LoadModelFile(Hf("gpt-j-6b.json")).transformer.rotary_dim == 64);
  CHECK(LoadModelFile(Hf("phi-4-mini-instruct.json")).transformer.rotary_dim == 96);  // int(128 · 0.75)
  // Another spelling of the K/V heads, and transformers v5's rope_parameters.
  const ModelSpec glm = LoadModelText("x.json", R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "multi_query_group_num": 2,
      "max_position_embeddings": 128, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}})");
  CHECK(glm.transformer.n_kv_heads == 2);
  CHECK(glm.transformer.rotary_dim == 8);
  // Zero rotated dimensions is no RoPE, not "all of them".
  const ModelSpec none = LoadModelText("x.json", R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 128,
      "partial_rotary_factor": 0})");
  CHECK(none.transformer.position == PositionKind::kNone);
}

TEST_CASE("families: unknown model types get a suggestion only for a near spelling") {
  auto message = [](const std::string& type) {
    try {
      LoadModelText("x.json", "{\"model_type\": \"" + type + "\"}");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message("bert").find("did you mean") == std::string::npos);   // was: 'opt'
  CHECK(message("mamba").find("did you mean") == std::string::npos);  // was: 'gemma'
  CHECK(message("gpt_neo").find("did you mean") == std::string::npos);
  CHECK(message("xlnet").find("write a tally YAML config") != std::string::npos);
  CHECK(message("qwen-3").find("did you mean 'qwen3'") != std::string::npos);
  CHECK(message("gemma_2").find("did you mean 'gemma2'") != std::string::npos);
}

// The tally YAML keys for the same layouts: a Gemma-2-like model written by hand gives the counts
// derived from the layout (4 norms per block, window on layers 0, 2, ...).
TEST_CASE("families: tally YAML keys for the new layouts") {
  const std::string base = R"(family: transformer
vocab_size: 1000
context_length: 4096
d_model: 64
n_layers: 4
n_heads: 4
n_kv_heads: 2
d_ff: 128
mlp: geglu
norm: rmsnorm
bias: false
position: rope
)";
  const ModelSpec gemma = LoadModelText("g.yaml", base + R"(norm_placement: sandwich
qk_norm: per_head
attention_pattern: {kind: sliding, span: 16, full_every: 2}
)");
  Settings s;
  s.seq = 1;
  // Per block: q 64·64, k and v 64·32 each, o 64·64, q/k norms 16 each, MLP 3·64·128, 4 norms of 64;
  // tied embedding 1000·64 and a final norm.
  const uint64_t block = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 16 + 3 * 64 * 128 + 4 * 64;
  CHECK(CountParams(ResolvedGraph(gemma, s)).total == 4 * block + 1000 * 64 + 64);
  // KV at 64 tokens: layers 0 and 2 keep 16, layers 1 and 3 keep 64; 2 · 2 · 16 elements of 2 bytes.
  CHECK(KvAt(gemma, 64) == (16 + 64 + 16 + 64) * 2 * 2 * 16 * 2);
  CHECK_THROWS_WITH_AS(LoadModelText("g.yaml", base + "sliding_window: 8\nattention_pattern: {kind: sliding, span: 16, "
                                                      "full_every: 2}\n"),
                       "g.yaml:14:20: error: give 'sliding_window' (every layer) or 'attention_pattern', not both",
                       InputError);
  CHECK_THROWS_WITH_AS(LoadModelText("g.yaml", base + "mla: {kv_lora_rank: 8, qk_nope_head_dim: 8, "
                                                      "qk_rope_head_dim: 8, v_head_dim: 8}\n"),
                       "g.yaml:7:13: error: 'n_kv_heads' must equal 'n_heads' under 'mla' (the latent is expanded to "
                       "every head)",
                       InputError);
}

}  // namespace
}  // namespace tally
