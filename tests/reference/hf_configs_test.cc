// Hugging Face config.json files (tests/data/hf/, with their provenance in SOURCES.md) against
// published parameter counts, and against tally's own presets of the same models.
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/flops.h"
#include "estimate/kv_cache.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

std::string Hf(const std::string& file) { return std::string(TALLY_TEST_DATA) + "/hf/" + file; }

struct CountRow {
  const char* file;
  uint64_t total;
  const char* source;
};

const CountRow kCounts[] = {
    {"gpt2.json", 124'439'808, "keras-hub GPT-2 presets; HF checkpoint"},
    {"gpt2-medium.json", 354'823'168, "keras-hub GPT-2 presets"},
    {"gpt2-large.json", 774'030'080, "keras-hub GPT-2 presets"},
    {"gpt2-xl.json", 1'557'611'200, "keras-hub GPT-2 presets"},
    {"Llama-2-7b-hf.json", 6'738'415'616, "keras-hub Llama presets; calflops README"},
    {"Meta-Llama-3-8B.json", 8'030'261'248, "keras-hub Llama 3 presets"},
    {"llama-2-13b.json", 13'015'864'320, "togethercomputer/together-python src/together/finetune.py"},
    {"llama-2-70b.json", 68'976'648'192, "togethercomputer/together-python src/together/finetune.py"},
    {"llama-3-70b.json", 70'553'706'496, "reported for Llama-3.3-70B, the same architecture (SOURCES.md)"},
    {"mistral-7b.json", 7'241'732'096, "keras-hub mistral_presets.py"},
    {"mixtral-8x7b.json", 46'702'792'704, "keras-hub mixtral_presets.py (mixtral_8_7b_en)"},
    {"qwen2-7b.json", 7'615'616'512, "keras-hub qwen2.5_math_7b_en (same dims; SOURCES.md)"},
    {"gemma-7b.json", 8'537'680'896, "keras-hub gemma_presets.py (gemma_7b_en)"},
    {"phi-3-mini.json", 3'821'079'552, "keras-hub phi3_presets.py (phi3_mini_4k_instruct_en)"},
    {"phi-2.json", 2'779'683'840, "HF safetensors metadata F16: 2779683840"},
    {"pythia-1.4b.json", 1'414'647'808, "Pythia model card parameter table"},
    {"bloom-7b1.json", 7'069'016'064, "bigscience/bloom-7b1 model card"},
    {"tinyllama-1.1b.json", 1'100'048'384, "llama.cpp n_params for TinyLlama-1.1B-Chat-v1.0"},
    {"opt-350m.json", 331'196'416, "one benchmark-script comment (unverified; SOURCES.md)"},
};

TEST_CASE("hf: published parameter counts") {
  for (const CountRow& row : kCounts) {
    CAPTURE(row.file);
    CAPTURE(row.source);
    CHECK(CountParams(ResolvedGraph(LoadModelFile(Hf(row.file)))).total == row.total);
  }
}

TEST_CASE("hf: counts with no published figure, derived by hand") {
  // OPT-13B: tokens 50272·5120, positions (2048 + 2)·5120; per layer 4·(5120² + 5120) attention,
  // 2·5120·20480 + 20480 + 5120 MLP, 2 LayerNorms of 2·5120; final LayerNorm; tied head.
  const uint64_t opt_layer = 4 * (5120ULL * 5120 + 5120) + 2 * 5120ULL * 20480 + 20480 + 5120 + 4 * 5120;
  const uint64_t opt = 50272ULL * 5120 + 2050ULL * 5120 + 40 * opt_layer + 2 * 5120;
  CHECK(opt == 12'853'473'280);
  CHECK(CountParams(ResolvedGraph(LoadModelFile(Hf("opt-13b.json")))).total == opt);
  // Falcon-7B: multi-query qkv 4544·(71 + 2)·64, dense 4544², MLP 2·4544·18176, one LayerNorm per
  // block; tokens 65024·4544 tied; ln_f.
  const uint64_t falcon7_layer = 4544ULL * 73 * 64 + 4544ULL * 4544 + 2 * 4544ULL * 18176 + 2 * 4544;
  CHECK(CountParams(ResolvedGraph(LoadModelFile(Hf("falcon-7b.json")))).total ==
        65024ULL * 4544 + 32 * falcon7_layer + 2 * 4544);
  // Falcon-40B (new decoder architecture): 8 KV heads, two LayerNorms per block.
  const uint64_t falcon40_layer = 8192ULL * (128 + 16) * 64 + 8192ULL * 8192 + 2 * 8192ULL * 32768 + 4 * 8192;
  CHECK(CountParams(ResolvedGraph(LoadModelFile(Hf("falcon-40b.json")))).total ==
        65024ULL * 8192 + 60 * falcon40_layer + 2 * 8192);
}

TEST_CASE("hf: Mixtral's active parameters") {
  // Jiang et al. 2024 quote 13B active of 47B; exactly: total less 6 of 8 experts' SwiGLU MLPs in
  // each of 32 blocks, 3·4096·14336 each.
  ParamCounts p = CountParams(ResolvedGraph(LoadModelFile(Hf("mixtral-8x7b.json"))));
  CHECK(p.active == 46'702'792'704ULL - 6ULL * 32 * 3 * 4096 * 14336);
  CHECK(p.active == 12'879'925'248ULL);
}

TEST_CASE("hf: family details are read") {
  ModelSpec phi = LoadModelFile(Hf("phi-2.json"));
  CHECK(phi.name == "microsoft/phi-2");
  CHECK(phi.transformer.lm_head_bias);
  CHECK(phi.transformer.rotary_dim == 32);  // int(80 · 0.4)
  CHECK(phi.transformer.dtype == DType::kFp16);
  ModelSpec qwen = LoadModelFile(Hf("qwen2-7b.json"));
  CHECK(qwen.transformer.qkv_bias);
  CHECK_FALSE(qwen.transformer.out_bias);
  CHECK(qwen.transformer.sliding_window == 0);  // use_sliding_window: false
  CHECK(LoadModelFile(Hf("mistral-7b.json")).transformer.sliding_window == 4096);
  ModelSpec opt = LoadModelFile(Hf("opt-350m.json"));
  CHECK(opt.transformer.embed_dim == 512);
  CHECK_FALSE(opt.transformer.final_norm);
  CHECK(opt.notes.size() == 1);                                  // post-norm, noted
  CHECK(LoadModelFile(Hf("falcon-7b.json")).notes.size() == 1);  // no max_position_embeddings
  CHECK(LoadModelFile(Hf("gpt2.json")).name == "gpt2");          // no _name_or_path: the file stem
}

// The tally presets of the same models must be the same models: every field, and so every figure.
TEST_CASE("hf: presets agree with their Hugging Face configs") {
  const std::pair<const char*, const char*> pairs[] = {
      {"gpt2-small", "gpt2.json"},
      {"gpt2-medium", "gpt2-medium.json"},
      {"gpt2-large", "gpt2-large.json"},
      {"gpt2-xl", "gpt2-xl.json"},
      {"llama-2-7b", "Llama-2-7b-hf.json"},
      {"llama-3-8b", "Meta-Llama-3-8B.json"},
      {"llama-2-13b", "llama-2-13b.json"},
      {"llama-2-70b", "llama-2-70b.json"},
      {"llama-3-70b", "llama-3-70b.json"},
      {"mistral-7b", "mistral-7b.json"},
      {"mixtral-8x7b", "mixtral-8x7b.json"},
      {"qwen2-7b", "qwen2-7b.json"},
      {"gemma-7b", "gemma-7b.json"},
      {"phi-3-mini", "phi-3-mini.json"},
      {"phi-2", "phi-2.json"},
      {"falcon-7b", "falcon-7b.json"},
      {"opt-13b", "opt-13b.json"},
      {"pythia-1.4b", "pythia-1.4b.json"},
      {"bloom-7b1", "bloom-7b1.json"},
      // issue 14's families
      {"qwen3-0.6b", "qwen3-0.6b.json"},
      {"qwen3-8b", "qwen3-8b.json"},
      {"qwen3-32b", "qwen3-32b.json"},
      {"qwen3-30b-a3b", "qwen3-30b-a3b.json"},
      {"gemma-2-2b", "gemma-2-2b.json"},
      {"gemma-2-9b", "gemma-2-9b.json"},
      {"gemma-2-27b", "gemma-2-27b.json"},
      {"gemma-3-1b", "gemma-3-1b-it.json"},
      {"gemma-3-27b", "gemma-3-27b-it.json"},
      {"llama-3.1-8b", "llama-3.1-8b.json"},
      {"llama-3.1-70b", "llama-3.1-70b-instruct.json"},
      {"llama-3.3-70b", "llama-3.1-70b-instruct.json"},
      {"llama-3.2-1b", "llama-3.2-1b-instruct.json"},
      {"llama-3.2-3b", "llama-3.2-3b.json"},
      {"llama-4-scout", "llama-4-scout-17b-16e.json"},
      {"gpt-oss-20b", "gpt-oss-20b.json"},
      {"gpt-oss-120b", "gpt-oss-120b.json"},
      {"deepseek-v2-lite", "deepseek-v2-lite.json"},
      {"deepseek-v3", "deepseek-v3.json"},
      {"phi-4", "phi-4.json"},
      {"phi-3.5-moe", "phi-3.5-moe-instruct.json"},
      {"mistral-nemo-12b", "mistral-nemo-base-2407.json"},
      {"command-r", "command-r-v01.json"},
      {"olmo-2-7b", "olmo-2-7b.json"},
      {"starcoder2-15b", "starcoder2-15b.json"},
  };
  for (const auto& pair : pairs) {
    const auto& preset = pair.first;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const auto& file = pair.second;
    CAPTURE(preset);
    const TransformerSpec a = ResolveModel(preset).transformer;
    // The presets are language models: a multimodal file's vision tower is left out of the comparison.
    ModelSpec file_spec = LoadModelFile(Hf(file));
    file_spec.transformer.vision.reset();
    const TransformerSpec& b = file_spec.transformer;
    CHECK(a.vocab_size == b.vocab_size);
    CHECK(a.context_length == b.context_length);
    CHECK(a.d_model == b.d_model);
    CHECK(a.n_layers == b.n_layers);
    CHECK(a.n_heads == b.n_heads);
    CHECK(a.n_kv_heads == b.n_kv_heads);
    CHECK(a.head_dim == b.head_dim);
    CHECK(a.d_ff == b.d_ff);
    CHECK(a.mlp == b.mlp);
    CHECK(a.norm == b.norm);
    CHECK(a.qkv_bias == b.qkv_bias);
    CHECK(a.out_bias == b.out_bias);
    CHECK(a.mlp_bias == b.mlp_bias);
    CHECK(a.lm_head_bias == b.lm_head_bias);
    CHECK(a.position == b.position);
    CHECK(a.position_offset == b.position_offset);
    CHECK(a.rotary_dim == b.rotary_dim);
    CHECK(a.tied_embeddings == b.tied_embeddings);
    CHECK(a.embed_dim == b.embed_dim);
    CHECK(a.embedding_norm == b.embedding_norm);
    CHECK(a.final_norm == b.final_norm);
    CHECK(a.parallel_block == b.parallel_block);
    CHECK(a.norms_per_block == b.norms_per_block);
    CHECK(a.n_experts == b.n_experts);
    CHECK(a.top_k == b.top_k);
    CHECK(a.sliding_window == b.sliding_window);
    CHECK(a.dtype == b.dtype);
    CHECK(a.dropout == b.dropout);
    CHECK(a.norm_placement == b.norm_placement);
    CHECK(a.norm_params == b.norm_params);
    CHECK(a.qk_norm == b.qk_norm);
    CHECK(a.attention_sinks == b.attention_sinks);
    CHECK(a.mla == b.mla);
    CHECK(a.moe_d_ff == b.moe_d_ff);
    CHECK(a.shared_expert_d_ff == b.shared_expert_d_ff);
    CHECK(a.router_bias == b.router_bias);
    CHECK(a.router_score_bias == b.router_score_bias);
    CHECK(a.mtp_layers == b.mtp_layers);
    CHECK(LayerRuns(a) == LayerRuns(b));  // each block's attention kind, span and MLP
    // And so the figures: parameters, FLOPs and KV cache per token.
    const Settings s{.batch = 2, .seq = 64};
    LayerGraph ga = ResolvedGraph(ResolveModel(preset), s), gb = ResolvedGraph(file_spec, s);
    CHECK(CountParams(ga).total == CountParams(gb).total);
    FlopCounts fa = CountFlops(ga), fb = CountFlops(gb);
    CHECK(fa.forward == fb.forward);
    CHECK(fa.backward == fb.backward);
    CHECK(fa.non_matmul_forward == fb.non_matmul_forward);
    uint64_t kva = 0, kvb = 0;
    for (const Layer& l : ga.layers) kva += l.kv_elements_per_token;
    for (const Layer& l : gb.layers) kvb += l.kv_elements_per_token;
    CHECK(kva == kvb);
  }
}

// Presets with no config here: the sibling config with the published dimensions (EXPECTED.md).
TEST_CASE("hf: presets of models without a config file here") {
  struct Row {
    const char* preset;
    uint64_t total, active, kv_8192;  // KV: batch 1, bf16, derived in EXPECTED.md
    const char* source;
  };
  const Row rows[] = {
      {"qwen3-235b-a22b", 235'093'634'560, 22'190'763'520, 1'577'058'304,
       "keras-hub qwen3_moe_235b_a22b_en; HF total; card '22B'"},
      {"llama-3.1-405b", 405'853'388'800, 0, 4'227'858'432, "HF API total for meta-llama/Llama-3.1-405B"},
      {"llama-3.3-70b", 70'553'706'496, 0, 2'684'354'560, "HF total for meta-llama/Llama-3.3-70B-Instruct"},
      {"llama-4-maverick", 400'711'848'960, 17'184'691'200, 1'610'612'736,
       "derived (card '400B total', '17B active'), text only"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.preset);
    CAPTURE(row.source);
    const Settings s{.seq = 1};
    const ParamCounts p = CountParams(ResolvedGraph(ResolveModel(row.preset), s));
    CHECK(p.total == row.total);
    CHECK(p.active == (row.active == 0 ? p.total : row.active));
    Settings kv{.seq = 1};
    kv.kv_dtype = DType::kBf16;
    CHECK(KvCacheBytes(testing::MemoryOf(ResolveModel(row.preset), kv), 8192, 1, kv, 0) == row.kv_8192);
  }
}

}  // namespace
}  // namespace tally
