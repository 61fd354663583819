#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "config/presets.h"
#include "config/resolve.h"
#include "estimate/flops.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::InlineGraph;
using testing::PresetGraph;
using testing::ResolvedGraph;
using testing::SummaryOf;

const Layer& Find(const LayerGraph& g, const std::string& path) {
  for (const Layer& l : g.layers) {
    if (l.path == path) return l;
  }
  FAIL("no layer " << path);
  return g.layers.front();
}

// Bytes of the unique tensors block `block` saves: 2-byte activations, 1-byte masks, 4-byte fp32.
uint64_t SavedBytes(const LayerGraph& g, int block) {
  std::map<std::string, uint64_t> unique;
  for (const Layer& l : g.Expanded()) {
    if (l.block != block) continue;
    for (const SavedTensor& t : l.saved) {
      unique.try_emplace(t.id, t.elements * (t.cls == SavedClass::kMask ? 1 : t.cls == SavedClass::kFp32 ? 4 : 2));
    }
  }
  uint64_t bytes = 0;
  for (const auto& [id, b] : unique) bytes += b;
  return bytes;
}

TEST_CASE("graph: saved tensors of a GPT-2 block are Korthikanti et al. 2022's Eq. 1 plus LayerNorm's statistics") {
  // Eq. 1: s·b·h·(34 + 5·a·s/h) bytes per layer with fp16 activations, dropout, no recomputation;
  // autograd's native_layer_norm also keeps an fp32 mean and rstd per row: 2 LayerNorms x 2 x 4 B
  // = 16 bytes per token; transformers' gelu_new, in ops, three more tensors of 4h: 24·s·b·h.
  for (uint64_t batch : {uint64_t{1}, uint64_t{4}}) {
    CAPTURE(batch);
    const uint64_t s = 1024, b = batch, h = 768, a = 12;
    LayerGraph g = PresetGraph("gpt2-small", {.batch = batch, .attention = Attention::kEager});
    CHECK(SavedBytes(g, 0) == 34 * s * b * h + 5 * a * s * s * b + 16 * s * b + 24 * s * b * h);
    CHECK(SavedBytes(g, 11) == SavedBytes(g, 0));
    CHECK(Find(g, "blocks.0.attn_norm").saved.size() == 3);  // input, mean, rstd
  }
}

TEST_CASE("graph: --dropout-mask cpu charges a transformer's masks the activation dtype") {
  // GPT-2 small's masks: the attention probabilities' (a·s²·b) and the two residual branches'
  // (2·s·b·h), 1 byte each with CUDA's bool masks, 2 bytes as the CPU's fp16 noise tensors.
  const uint64_t s = 1024, b = 1, h = 768, a = 12;
  LayerGraph g = PresetGraph("gpt2-small", {.attention = Attention::kEager, .dropout_mask = DropoutMask::kCpu});
  CHECK(SavedBytes(g, 0) ==
        34 * s * b * h + 5 * a * s * s * b + 16 * s * b + 24 * s * b * h + a * s * s * b + 2 * s * b * h);
}

// A 1-block Llama-style model, h = 8, f = 16, 2 heads, seq 4, no dropout, eager attention.
const char* kTinyLlama = R"(
family: transformer
vocab_size: 32
context_length: 4
d_model: 8
n_layers: 1
n_heads: 2
d_ff: 16
mlp: swiglu
norm: rmsnorm
bias: false
position: rope
)";

TEST_CASE("graph: RMSNorm saves what transformers' eager LlamaRMSNorm saves in PyTorch 2") {
  // LlamaRMSNorm(x) = w · (x.float() · rsqrt(mean(x.float()², -1) + eps)).to(x.dtype): pow saves the
  // fp32 x, rsqrt its result (one per row), mul x and rstd again, the weight's mul the normalized x;
  // PyTorch 2's mean keeps only its input's sizes (torch 1.13's kept x², which scripts/conformance
  // writes as sum(x²) / h to match). Per row of h = 8: 8·4 (x) + 4 (rstd) + 8·2 (normed, 2-byte) =
  // 52 bytes; 4 tokens, batch 2: 8 rows, 416 bytes.
  LayerGraph g = InlineGraph(kTinyLlama, {.batch = 2, .attention = Attention::kEager});
  const Layer& norm = Find(g, "blocks.0.attn_norm");
  REQUIRE(norm.saved.size() == 3);
  const SavedClass fp32 = SavedClass::kFp32;
  CHECK(norm.saved[0].cls == fp32);
  CHECK(norm.saved[0].elements == 2 * 4 * 8);
  CHECK(norm.saved[1].cls == fp32);
  CHECK(norm.saved[1].elements == 2 * 4);
  CHECK(norm.saved[2].cls == SavedClass::kAutocastFp32);  // the input's dtype: bf16 here
  CHECK(norm.saved[2].elements == 2 * 4 * 8);
  uint64_t bytes = 0;
  for (const SavedTensor& t : norm.saved) bytes += t.elements * (t.cls == fp32 ? 4 : 2);
  CHECK(bytes == 416);
}

TEST_CASE("graph: an eager SwiGLU saves 4 tensors of d_ff, a fused kernel 3") {
  // down(silu(gate(x)) · up(x)): SiLU saves gate(x); the multiply saves silu(gate(x)) and up(x);
  // down saves the product: 4 · b·s·f elements, 4 · 2·4·16 · 2 B = 1,024 bytes at 2-byte
  // activations. A fused act-and-multiply kernel recomputes silu(gate(x)): 3 tensors, 768 bytes.
  auto mlp_bytes = [](MlpKernel kernel) {
    LayerGraph g = InlineGraph(kTinyLlama, {.batch = 2, .attention = Attention::kEager, .mlp_kernel = kernel});
    uint64_t bytes = 0;
    for (const char* path : {"blocks.0.mlp.act", "blocks.0.mlp.down"}) {
      for (const SavedTensor& t : Find(g, path).saved) bytes += t.elements * 2;
    }
    return bytes;
  };
  CHECK(mlp_bytes(MlpKernel::kEager) == 1024);
  CHECK(mlp_bytes(MlpKernel::kFused) == 768);
  // In the whole block only the MLP moves, by the one b·s·f tensor silu(gate(x)).
  CHECK(SavedBytes(InlineGraph(kTinyLlama, {.batch = 2, .mlp_kernel = MlpKernel::kEager}), 0) -
            SavedBytes(InlineGraph(kTinyLlama, {.batch = 2, .mlp_kernel = MlpKernel::kFused}), 0) ==
        2 * 4 * 16 * 2);
}

TEST_CASE("graph: GQA shrinks the K and V projections and the KV cache") {
  LayerGraph g = PresetGraph("llama-3-8b", {.seq = 16});
  const Layer& qkv = Find(g, "blocks.0.attn.qkv");
  // q: 32 heads · 128, k and v: 8 heads · 128 each; no bias.
  CHECK(qkv.params == 4096ULL * (32 * 128 + 2 * 8 * 128));
  CHECK(Find(g, "blocks.0.attn.scores").kv_elements_per_token == 2 * 8 * 128);
}

TEST_CASE("graph: multi-query attention and an explicit head_dim") {
  LayerGraph g = InlineGraph(R"(
family: transformer
vocab_size: 100
context_length: 8
d_model: 64
n_layers: 1
n_heads: 8
n_kv_heads: 1
head_dim: 16
d_ff: 128
bias: false
position: none
)");
  // q width 8·16 = 128, k and v 16 each; out projection 128 -> 64.
  CHECK(Find(g, "blocks.0.attn.qkv").params == 64 * (128 + 2 * 16));
  CHECK(Find(g, "blocks.0.attn.out").params == 128 * 64);
  CHECK(Find(g, "blocks.0.attn.scores").gemms[0].k == 16);
}

TEST_CASE("graph: a tied head shares the token embedding and counts once") {
  LayerGraph g = PresetGraph("gpt2-small");
  const Layer& head = Find(g, "lm_head");
  CHECK(head.params == 0);
  REQUIRE(head.weights_of.has_value());
  CHECK(g.layers[*head.weights_of].path == "embed.tokens");
  CHECK(CountLayerFlops(head).forward == 2ULL * 1024 * 50257 * 768);  // the head still costs its GEMM
  CHECK(Find(PresetGraph("llama-2-7b"), "lm_head").params == 32000ULL * 4096);
}

TEST_CASE("graph: the nodes between a column- and a row-parallel linear are split over the tensor-parallel group") {
  // Megatron's tensor parallelism (Shoeybi et al. 2019, §3; Korthikanti et al. 2022, §4.2.1): the
  // MLP's act(gate)·up, RoPE, per-head q/k norms, the attention core and the vocabulary-parallel loss
  // run on each rank's own share; K's norm on at most its g = 2 heads. The residual stream's norms
  // and adds are whole on every rank.
  const LayerGraph g = InlineGraph(
      "family: transformer\nvocab_size: 1000\ncontext_length: 64\nd_model: 256\nn_layers: 2\nn_heads: 8\n"
      "n_kv_heads: 2\nd_ff: 512\nmlp: swiglu\nnorm: rmsnorm\nposition: rope\nbias: false\nqk_norm: per_head\n",
      {.seq = 64});
  for (const char* path : {"blocks.0.mlp.act", "blocks.0.attn.rope", "blocks.0.attn.q_norm", "blocks.0.attn.scores",
                           "blocks.0.attn.softmax", "blocks.0.attn.context", "loss"}) {
    CAPTURE(path);
    CHECK(Find(g, path).tp_split);
    CHECK(Find(g, path).tp_max_shards == 0);
  }
  const Layer& k_norm = Find(g, "blocks.0.attn.k_norm");
  CHECK(k_norm.tp_split);
  CHECK(k_norm.tp_max_shards == 2);
  // Its saved k and statistics split with it (activation memory).
  for (const SavedTensor& t : k_norm.saved) CHECK((t.tp_sharded && t.tp_max_shards == 2));
  for (const char* path : {"blocks.0.attn_norm", "blocks.0.mlp_norm", "blocks.0.attn.residual", "final_norm"}) {
    CAPTURE(path);
    CHECK_FALSE(Find(g, path).tp_split);
  }
  // A norm over the whole q projection needs every head: replicated.
  const LayerGraph olmo = PresetGraph("olmo-2-7b", {.seq = 64});
  CHECK_FALSE(Find(olmo, "blocks.0.attn.q_norm").tp_split);
}

TEST_CASE("graph: SwiGLU has gate, up and down — the gate and up share one saved input") {
  LayerGraph g = PresetGraph("llama-2-7b", {.seq = 8});
  CHECK(Find(g, "blocks.0.mlp.gate").params == 4096ULL * 11008);
  CHECK(Find(g, "blocks.0.mlp.up").params == 4096ULL * 11008);
  CHECK(Find(g, "blocks.0.mlp.down").params == 11008ULL * 4096);
  CHECK(Find(g, "blocks.0.mlp.gate").saved[0].id == Find(g, "blocks.0.mlp.up").saved[0].id);
  CHECK(Find(g, "blocks.0.attn_norm").params == 4096);  // RMSNorm: weight only
}

TEST_CASE("graph: every preset validates") {
  for (const std::string& name : PresetNames()) {
    CAPTURE(name);
    CHECK_NOTHROW(PresetGraph(name).Validate());
  }
}

TEST_CASE("graph: transformer backward is exactly twice the forward") {
  for (const char* name : {"gpt2-small", "gpt2-xl", "llama-2-7b", "llama-3-8b"}) {
    CAPTURE(name);
    FlopCounts f = CountFlops(PresetGraph(name, {.batch = 2, .seq = 128}));
    CHECK(f.backward == 2 * f.forward);
  }
}

TEST_CASE("graph: an MLP on raw input skips the first layer's dX") {
  // seed-mlp, batch 32: the first Linear(512, 1024) needs dW only.
  FlopCounts f = CountFlops(PresetGraph("seed-mlp", {.batch = 32}));
  const uint64_t first = 2ULL * 32 * 512 * 1024;
  CHECK(f.backward == 2 * f.forward - first);
}

TEST_CASE("graph: --causal halves exactly the QK^T and AV GEMMs") {
  FlopCounts full = CountFlops(PresetGraph("gpt2-small"));
  FlopCounts causal = CountFlops(PresetGraph("gpt2-small", {.causal = true}));
  // Per layer QK^T + AV = 2 · 2·b·a·s²·d = 3,221,225,472; 12 layers, half of it skipped.
  CHECK(full.forward - causal.forward == 12ULL * 3'221'225'472 / 2);
}

TEST_CASE("graph: conv2d shapes, groups and pooling") {
  LayerGraph g = InlineGraph(R"(
family: sequential
input: [64, 17, 17]
layers:
  - conv2d: {out: 128, kernel: 3, stride: 2, groups: 4, bias: true}
  - pool: {kind: max, kernel: 2}
  - flatten
  - linear: {out: 10}
)",
                             {.batch = 2});
  const Layer& conv = g.layers[0];
  // Output (17 - 3) / 2 + 1 = 8; params 128 · (64/4) · 3 · 3 + 128.
  CHECK(conv.shape == std::vector<uint64_t>{2, 128, 8, 8});
  CHECK(conv.params == 128 * 16 * 9 + 128);
  // FLOPs 2 · Cout · Ho · Wo · (Cin/g) · k² per sample.
  CHECK(CountLayerFlops(conv).forward == 2ULL * 2 * 128 * 8 * 8 * 16 * 9);
  CHECK(g.layers[1].shape == std::vector<uint64_t>{2, 128, 4, 4});  // stride defaults to the kernel
  CHECK(g.layers[2].shape == std::vector<uint64_t>{2, 2048});
  CHECK(g.layers[3].params == 2048 * 10 + 10);
}

TEST_CASE("graph: a repeat expands in place") {
  LayerGraph g = InlineGraph(R"(
family: sequential
input: [8]
layers:
  - repeat: {times: 3, layers: [{linear: {out: 8}}, relu]}
  - linear: {out: 1, bias: false}
)");
  CHECK(g.layers.size() == 7);
  CHECK(CountParams(g).total == 3 * (8 * 8 + 8) + 8);
}

TEST_CASE("graph: linear acts on the last dimension of a multi-dimensional input") {
  LayerGraph g = InlineGraph("family: sequential\ninput: [5, 7]\nlayers: [{linear: {out: 3}}]\n", {.batch = 2});
  CHECK(g.layers[0].gemms[0].m == 10);
  CHECK(g.layers[0].shape == std::vector<uint64_t>{2, 5, 3});
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST_CASE("graph: a transformer is built at a resolved sequence length, never a default of its own") {
  // ResolveSettings is the one place a default --seq is chosen; a graph without one is a caller's bug.
  const ModelSpec gpt2 = ResolveModel("gpt2-small");
  CHECK_THROWS_WITH_AS(BuildGraph(gpt2, GraphSettings{}),
                       "BuildTransformerGraph: 'gpt2-small' has no sequence length in its GraphSettings; resolve the "
                       "settings first (ResolveSettings)",
                       std::logic_error);
  CHECK(BuildGraph(gpt2, GraphSettingsOf(ResolveSettings({}, gpt2))).seq == 1024);  // n_positions
  // A sequential model has no sequence length at all.
  CHECK(BuildGraph(ResolveModel("seed-mlp"), GraphSettings{}).family == Family::kSequential);
  // An encoder-decoder's target follows the graph's own seq (fit and time change seq after
  // ResolveSettings): BuildGraph gives it; the transformer builder alone refuses to guess.
  const ModelSpec t5 = LoadModelFile(testing::Hf("t5-small.json"));
  CHECK(BuildGraph(t5, {.seq = 64}).target_seq == 64);
  CHECK(BuildGraph(t5, {.seq = 64, .target_seq = 16}).target_seq == 16);
  CHECK_THROWS_AS(BuildTransformerGraph(t5, {.seq = 64}), std::logic_error);
}

TEST_CASE("graph: a sliding window caps the keys each query sees") {
  // Mistral's 4096-token window at seq 16384: QK^T is 16384 x 4096 per head, not 16384 x 16384.
  LayerGraph g = PresetGraph("mistral-7b", {.seq = 16384});
  const Gemm& qk = Find(g, "blocks.0.attn.scores").gemms[0];
  CHECK(qk.m == 16384);
  CHECK(qk.n == 4096);
}

TEST_CASE("graph: parallelism and LoRA the model cannot have are errors") {
  auto check = [](const std::string& model, const Settings& s) { CheckParallelism(ResolveModel(model), s); };
  CHECK_THROWS_WITH_AS(check("gpt2-xl", {.gpus = 4, .tp = 4}),
                       "tally: error: --tp: 4 does not divide the 25 attention heads of 'gpt2-xl'", InputError);
  CHECK_THROWS_WITH_AS(check("gpt2-small", {.gpus = 24, .pp = 24}), "tally: error: --pp: 24 stages for 12 blocks",
                       InputError);
  CHECK_THROWS_AS(check("seed-mlp", {.gpus = 2, .tp = 2}), InputError);
  // The evaluation checks before it builds.
  CHECK_THROWS_AS(SummaryOf(ResolveModel("gpt2-xl"), {.gpus = 4, .tp = 4}), InputError);
  CHECK_THROWS_WITH_AS(PresetGraph("gpt2-small", {.lora_rank = 8, .lora_targets = {"gate"}}),
                       "tally: error: --lora-targets: 'gpt2-small' has no 'gate' projection (its MLP is not gated)",
                       InputError);
  CHECK_THROWS_AS(PresetGraph("seed-mlp", {.lora_rank = 8}), InputError);
}

TEST_CASE("graph: adapters on a fused gate_up_proj are flagged, not silently split") {
  // modeling_phi3.py holds gate and up as one gate_up_proj, which PEFT adapts with one adapter.
  const ModelSpec phi3 = ResolveModel("phi-3-mini");
  const Settings lora = ResolveSettings({.lora_rank = 8, .lora_targets = {"qkv", "gate", "up"}}, phi3);
  REQUIRE(lora.notes.size() == 1);
  CHECK(lora.notes[0].find("stores gate and up as one gate_up_proj, which PEFT adapts with one adapter") !=
        std::string::npos);
  CHECK(ResolveSettings({.lora_rank = 8, .lora_targets = {"qkv", "down"}}, phi3).notes.empty());
  CHECK(ResolveSettings({.lora_rank = 8, .lora_targets = {"gate", "up"}}, ResolveModel("llama-3-8b")).notes.empty());
}

TEST_CASE("graph: identical blocks are held once, with a repeat count") {
  const LayerGraph g = PresetGraph("llama-2-7b", {.seq = 16});
  REQUIRE(g.runs.size() == 1);
  CHECK(g.runs[0].count == 32);
  const size_t block_nodes = g.blocks_end - g.blocks_begin;
  for (size_t i = g.blocks_begin; i < g.blocks_end; ++i) CHECK(g.layers[i].repeat == 32);
  // Expanded: every block spelled out and renumbered, the nodes outside the blocks once.
  const std::vector<Layer> all = g.Expanded();
  CHECK(all.size() == g.layers.size() + 31 * block_nodes);
  CHECK(std::count_if(all.begin(), all.end(), [](const Layer& l) { return l.path == "blocks.31.attn.qkv"; }) == 1);
  // Cost follows the distinct blocks: a 100,000-block model has the nodes of a 1-block one.
  ModelSpec deep = ResolveModel("llama-2-7b");
  deep.transformer.n_layers = 100'000;
  const LayerGraph d = ResolvedGraph(deep, Settings{.seq = 16});
  CHECK(d.layers.size() == g.layers.size());
  CHECK(CountParams(d).total == 131'072'000ULL * 2 + 4096 + 100'000ULL * 202'383'360);
}

TEST_CASE("graph: per-layer attention kinds set the keys each query sees") {
  // Four blocks alternating sliding (window 4) and full attention, as Gemma 2 does, at seq 10.
  ModelSpec spec = ResolveModel("llama-2-7b");
  TransformerSpec& t = spec.transformer;
  t.n_layers = 4;
  const LayerSpec sliding{AttentionKind::kSliding, 4}, full{};
  t.layer_specs = {sliding, full, sliding, full};
  const LayerGraph g = ResolvedGraph(spec, Settings{.seq = 10});
  REQUIRE(g.runs.size() == 4);
  // Two distinct blocks: each one's nodes held once.
  const LayerGraph uniform = PresetGraph("llama-2-7b", {.seq = 10});
  CHECK(g.blocks_end - g.blocks_begin == 2 * (uniform.blocks_end - uniform.blocks_begin));
  CHECK(Find(g, "blocks.0.attn.scores").gemms[0].n == 4);   // the window
  CHECK(Find(g, "blocks.1.attn.scores").gemms[0].n == 10);  // every key
  CHECK(Find(g, "blocks.0.attn.scores").attention == AttentionKind::kSliding);
  CHECK(Find(g, "blocks.0.attn.scores").repeat == 2);
  // Scores FLOPs: 2 · s · keys · d · heads per layer, 2 layers of each kind.
  const uint64_t core = 2 * (2ULL * 10 * 4 * 128 * 32) + 2 * (2ULL * 10 * 10 * 128 * 32);
  CHECK(CountFlops(g).forward_by_component.at(Component::kAttentionCore) == 2 * core);  // QK^T and AV
}

}  // namespace
}  // namespace tally

namespace tally {

TEST_CASE("graph: PEFT's fp32 adapters on 16-bit weights keep an fp32 copy of their input") {
  // Rank 8 on GPT-2 small's qkv (768 -> 2,304), 1,024 tokens: the adapter saves its input cast to
  // fp32 (768 a token, its own tensor) and A x (8 a token), both fp32; with --lora-dtype base it
  // shares the 16-bit input its frozen linear reads.
  Settings s{.batch = 1, .seq = 1024, .precision = Precision::kBf16, .lora_rank = 8};
  const auto adapter = [](const LayerGraph& g) {
    for (const Layer& l : g.layers) {
      if (l.path == "blocks.0.attn.qkv.lora") return l;
    }
    FAIL("no adapter");
    return Layer{};
  };
  const Layer fp32 = adapter(testing::PresetGraph("gpt2-small", s));
  CHECK(fp32.fp32_adapter);
  REQUIRE(fp32.saved.size() == 2);
  CHECK(fp32.saved[0].id == "blocks.0.attn.qkv.lora:x_fp32");
  CHECK(fp32.saved[0].elements == 1024 * 768);
  CHECK(fp32.saved[0].cls == SavedClass::kFp32);
  CHECK(fp32.saved[1].elements == 1024 * 8);
  CHECK(fp32.saved[1].cls == SavedClass::kFp32);
  s.lora_dtype = LoraDtype::kBase;
  const Layer base = adapter(testing::PresetGraph("gpt2-small", s));
  CHECK_FALSE(base.fp32_adapter);
  CHECK(base.saved[0].cls == SavedClass::kActivation);
  CHECK(base.saved[0].id != fp32.saved[0].id);
}

}  // namespace tally
