// Memory ledgers against published formulas (ZeRO, Korthikanti et al.) and hand derivations.
#include "estimate/memory.h"

#include <doctest/doctest.h>

#include "config/resolve.h"
#include "estimate/activations.h"
#include "estimate/fit.h"
#include "estimate/params.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

// Settings as the CLI makes them: the policy's dtypes, consistent batch sizes.
Settings Make(Settings s) {
  s.dtypes = PolicyDtypes(s.precision);
  s.batch = s.micro_batch;  // one micro-batch per step
  return s;
}

TrainMemory Train(const std::string& model, Settings s) {
  s = Make(s);
  ModelSpec spec = ResolveModel(model);
  return TrainingMemory(s, testing::MemoryOf(spec, s));
}

TrainMemory TrainInline(const std::string& yaml, Settings s) {
  s = Make(s);
  ModelSpec spec = LoadModelText("inline.yaml", yaml);
  return TrainingMemory(s, testing::MemoryOf(spec, s));
}

uint64_t ModelStates(const TrainMemory& m) { return m.weights + m.gradients + m.master_weights + m.optimizer; }

TEST_CASE("memory: mixed-precision Adam keeps 16 bytes per parameter (ZeRO §3.1)") {
  // 2Ψ fp16 weights + 2Ψ gradients + 4Ψ fp32 master + 8Ψ fp32 Adam moments.
  CHECK(ModelStates(Train("gpt2-small", {})) == 1'991'036'928);
  CHECK(ModelStates(Train("llama-2-7b", {})) == 107'814'649'856);
  CHECK(ModelStates(Train("llama-2-7b", {.precision = Precision::kMixedFp16, .optimizer = Optimizer::kAdam})) ==
        16ULL * 6'738'415'616);
}

TEST_CASE("memory: ZeRO stages reproduce Rajbhandari et al. 2019, Table 1 (Ψ = 7.5B, Nd = 64)") {
  // A single 75,000 x 100,000 matrix: exactly 7.5B parameters.
  const std::string yaml = "family: sequential\ninput: [75000]\nlayers: [{linear: {out: 100000, bias: false}}]\n";
  auto states = [&](uint64_t zero) { return ModelStates(TrainInline(yaml, {.gpus = 64, .zero = zero})); };
  CHECK(states(0) == 120'000'000'000);  // (2 + 2 + 12)Ψ: "120GB"
  CHECK(states(1) == 31'406'250'000);   // 2Ψ + 2Ψ + 12Ψ/Nd: "31.4GB"
  CHECK(states(2) == 16'640'625'000);   // 2Ψ + 14Ψ/Nd: "16.6GB"
  CHECK(states(3) == 1'875'000'000);    // 16Ψ/Nd: "1.9GB"
}

TEST_CASE("memory: Megatron-LM's bf16 keeps fp32 main gradients: --grad-dtype fp32 gives its 18 and 6 + 12/d bytes") {
  // Megatron-LM's --bf16 accumulates and reduces gradients in fp32 (megatron/training/arguments.py:
  // "bfloat16 requires gradient accumulation and all-reduce to be done in fp32"); its distributed
  // optimizer's table (docs/user-guide/features/dist_optimizer.md, "bf16 parameters, fp32 gradients"):
  // 18 bytes per parameter, 6 + 12/d with the optimizer sharded over d data-parallel ranks.
  const std::string yaml = "family: sequential\ninput: [75000]\nlayers: [{linear: {out: 100000, bias: false}}]\n";
  const uint64_t psi = 7'500'000'000;
  auto states = [&](uint64_t zero) {
    Settings s{.gpus = 64, .zero = zero};
    s = Make(s);
    s.dtypes.grad = DType::kFp32;
    ModelSpec spec = LoadModelText("inline.yaml", yaml);
    return ModelStates(TrainingMemory(s, testing::MemoryOf(spec, s)));
  };
  CHECK(states(0) == 18 * psi);
  CHECK(states(1) == 6 * psi + 12 * psi / 64);
}

// Korthikanti et al. 2022 assume fp16 activations, dropout and eager attention: GPT-2 presets fit.
// Their Eq. 1-6 leave out LayerNorm's saved fp32 mean and rstd, which autograd keeps: two LayerNorms
// x 2 statistics x 4 B = 16 bytes per token per layer, replicated under tensor parallelism and split
// with sequence parallelism (rounded up per statistic: 4 · 4 · ceil(s·b/t)). And they count one GELU
// kernel keeping its input, where transformers' gelu_new, written in ops, keeps three more tensors of
// 4h (tanh, 0.5·x, 1 + tanh; TransformerSpec::gelu_in_ops): 24·s·b·h more, split like the GELU's.
struct Shape {
  const char* preset;
  uint64_t s, h, a, t;
};

// activations.korthikanti_per_layer from the CLI, with `flags` after the preset.
uint64_t PaperKey(const std::string& preset, uint64_t b, std::vector<std::string> flags) {
  std::vector<std::string> args = {"memory", preset, "--micro-batch", std::to_string(b), "--attention", "eager"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--get", "activations.korthikanti_per_layer"});
  const testing::TallyRun run = testing::RunTally(args);
  REQUIRE(run.code == 0);
  return std::stoull(run.out);
}

TEST_CASE("memory: per-layer activations are Korthikanti et al. 2022 (Eq. 1-6) plus LayerNorm's statistics") {
  for (const Shape& x : {Shape{"gpt2-small", 1024, 768, 12, 4}, Shape{"gpt2-xl", 1024, 1600, 25, 5}}) {
    CAPTURE(x.preset);
    for (uint64_t b : {uint64_t{1}, uint64_t{2}}) {
      CAPTURE(b);
      const uint64_t sbh = x.s * b * x.h, as2b = x.a * x.s * x.s * b;
      const uint64_t stats = 16 * x.s * b, stats_sp = 16 * ((x.s * b + x.t - 1) / x.t), gelu_new = 24 * sbh;
      const std::string t = std::to_string(x.t);
      Settings base{.micro_batch = b, .attention = Attention::kEager};
      // Eq. 1: s·b·h·(34 + 5·a·s/h).
      CHECK(PaperKey(x.preset, b, {}) == 34 * sbh + 5 * as2b);
      CHECK(Train(x.preset, base).per_layer_activations == 34 * sbh + 5 * as2b + stats + gelu_new);
      Settings selective = base;
      selective.recompute = Recompute::kSelective;
      CHECK(PaperKey(x.preset, b, {"--recompute", "selective"}) == 34 * sbh);  // §5
      CHECK(Train(x.preset, selective).per_layer_activations == 34 * sbh + stats + gelu_new);
      Settings full = base;
      full.recompute = Recompute::kFull;
      CHECK(PaperKey(x.preset, b, {"--recompute", "full"}) == 2 * sbh);  // §5: only the layer input
      CHECK(Train(x.preset, full).per_layer_activations == 2 * sbh);
      Settings tp = base;
      tp.gpus = tp.tp = x.t;
      // Eq. 2, tensor parallel alone: s·b·h·(10 + 24/t + 5·a·s/(h·t)).
      CHECK(PaperKey(x.preset, b, {"--gpus", t, "--tp", t}) == 10 * sbh + 24 * sbh / x.t + 5 * as2b / x.t);
      CHECK(Train(x.preset, tp).per_layer_activations ==
            10 * sbh + 24 * sbh / x.t + 5 * as2b / x.t + stats + gelu_new / x.t);
      Settings sp = tp;
      sp.sp = true;
      // Eq. 4, with sequence parallelism: s·b·h/t·(34 + 5·a·s/h).
      CHECK(PaperKey(x.preset, b, {"--gpus", t, "--tp", t, "--sp"}) == (34 * sbh + 5 * as2b) / x.t);
      CHECK(Train(x.preset, sp).per_layer_activations == (34 * sbh + 5 * as2b) / x.t + stats_sp + gelu_new / x.t);
      Settings sp_selective = sp;
      sp_selective.recompute = Recompute::kSelective;
      CHECK(PaperKey(x.preset, b, {"--gpus", t, "--tp", t, "--sp", "--recompute", "selective"}) ==
            34 * sbh / x.t);  // Eq. 6
      CHECK(Train(x.preset, sp_selective).per_layer_activations == 34 * sbh / x.t + stats_sp + gelu_new / x.t);
    }
  }
}

TEST_CASE("memory: flash attention keeps no s² tensors, only fp32 softmax statistics") {
  // GPT-2 small, dropout (masks regenerated from the RNG in flash): 34·s·b·h with no dropout mask in
  // the core, plus 4·a·s·b bytes of log-sum-exp, 16·s·b of LayerNorm statistics and gelu_new's three
  // more tensors of 4h (24·s·b·h).
  const uint64_t s = 1024, h = 768, a = 12;
  CHECK(Train("gpt2-small", {}).per_layer_activations == 34 * s * h + 4 * a * s + 16 * s + 24 * s * h);
  // Llama-2-7B (no dropout, eager SwiGLU, bf16), node by node: each RMSNorm saves an fp32 x (4h; no
  // x² under PyTorch 2, graph/node_costs.h), an fp32 rstd (4) and the normalized x (2h); q, k, v
  // (6h), the norms' outputs as the qkv and gate/up inputs (2h + 2h), the flash output O (2h):
  // 24·s·b·h + 8·s·b; gate, silu(gate), up and their product 4 · 2f; log-sum-exp 4·a·s·b.
  const uint64_t f = 11008, hl = 4096, al = 32, sl = 4096, bl = 8;
  CHECK(Train("llama-2-7b", {.micro_batch = bl}).per_layer_activations ==
        24 * sl * bl * hl + 8 * sl * bl + 8 * sl * bl * f + 4 * al * sl * bl);
  // A fused SwiGLU kernel saves 3 of the 4 d_ff tensors.
  CHECK(Train("llama-2-7b", {.micro_batch = bl, .mlp_kernel = MlpKernel::kFused}).per_layer_activations ==
        24 * sl * bl * hl + 8 * sl * bl + 6 * sl * bl * f + 4 * al * sl * bl);
  // Full recomputation keeps each block's input in the activation dtype (2h), not the RMSNorm's fp32 copy.
  CHECK(Train("llama-2-7b", {.micro_batch = bl, .recompute = Recompute::kFull}).per_layer_activations ==
        2 * sl * bl * hl);
}

TEST_CASE("memory: the lecture's Cruncher ledger with AdaGrad") {
  // fp32, D = 64, L = 2, B = 8: params D·D·L + D = 8,256, activations B·D·L = 1,024 values,
  // gradients = states = params; total 4 · (params + activations + gradients + states).
  TrainMemory m =
      Train("cruncher", {.micro_batch = 8, .precision = Precision::kFp32, .optimizer = Optimizer::kAdagrad});
  CHECK(m.weights == 4 * 8'256);
  CHECK(m.gradients == 4 * 8'256);
  CHECK(m.optimizer == 4 * 8'256);
  CHECK(m.master_weights == 0);
  CHECK(m.activations == 4 * 1'024);
  CHECK(m.total == 4 * (8'256 + 1'024 + 8'256 + 8'256));
}

TEST_CASE("memory: activations of the seed MLP and CNN by hand") {
  // Seed MLP, batch 32, fp32: the two hidden ReLU outputs (each also the next Linear's input):
  // 32·1024 + 32·512 values, and the cross-entropy's fp32 log-probabilities, 32·10. The input batch
  // is data, not an activation.
  CHECK(Train("seed-mlp", {.micro_batch = 32, .precision = Precision::kFp32}).activations ==
        4 * (32 * 1024 + 32 * 512 + 32 * 10));
  // Seed CNN, batch 1, fp32: ReLU outputs 64·32·32 and 128·32·32 (the first is conv2's input, the
  // second the average pool's), the pooled, flattened 128 values the Linear saves, and the 10
  // log-probabilities.
  CHECK(Train("seed-cnn", {.precision = Precision::kFp32}).activations ==
        4 * (64 * 32 * 32 + 128 * 32 * 32 + 128 + 10));
}

TEST_CASE("memory: optimizer states per parameter") {
  // One 100 x 200 weight and its 200 biases: n = 20,200, fp32 states.
  const std::string yaml = "family: sequential\ninput: [100]\nlayers: [{linear: {out: 200}}]\n";
  auto states = [&](Optimizer o) {
    return TrainInline(yaml, {.precision = Precision::kFp32, .optimizer = o}).optimizer;
  };
  const uint64_t n = 20'200;
  CHECK(states(Optimizer::kSgd) == 0);
  CHECK(states(Optimizer::kSgdMomentum) == 4 * n);
  CHECK(states(Optimizer::kAdagrad) == 4 * n);
  CHECK(states(Optimizer::kRmsprop) == 4 * n);
  CHECK(states(Optimizer::kLion) == 4 * n);
  CHECK(states(Optimizer::kAdam) == 8 * n);
  CHECK(states(Optimizer::kAdamw) == 8 * n);
  // 8-bit Adam: 2 bytes per parameter plus an fp32 absmax per 2048 values of each moment, per
  // tensor: weight 20,000 (10 blocks), bias 200 (1 block).
  CHECK(states(Optimizer::kAdam8bit) == 2 * (20'000 + 4 * 10) + 2 * (200 + 4 * 1));
  // Adafactor: the weight's second moment factored into 100 + 200, the bias kept whole (200).
  CHECK(states(Optimizer::kAdafactor) == 4 * (100 + 200 + 200));
}

TEST_CASE("memory: LoRA and QLoRA train only the adapters") {
  // Rank 16 on Llama-2-7B's q_proj, k_proj, v_proj and o_proj (each 4096 -> 4096, an adapter of its
  // own) in 32 blocks: 16,777,216, what PEFT's print_trainable_parameters reports for this setup.
  const uint64_t adapters = 32 * 4 * (4096 * 16 + 16 * 4096);
  CHECK(adapters == 16'777'216);
  // The adapters in fp32, as PEFT keeps them beside bf16 weights (--lora-dtype fp32): 4-byte weights
  // and gradients, AdamW's two fp32 states, no master copy.
  Settings lora{.lora_rank = 16};
  TrainMemory m = Train("llama-2-7b", lora);
  CHECK(m.gradients == 4 * adapters);
  CHECK(m.master_weights == 0);
  CHECK(m.optimizer == 8 * adapters);
  CHECK(m.weights == 2 * 6'738'415'616 + 4 * adapters);
  // --lora-dtype base: the policy's bf16 weights and gradients, the fp32 master copy and states.
  const TrainMemory base = Train("llama-2-7b", {.lora_rank = 16, .lora_dtype = LoraDtype::kBase});
  CHECK(base.gradients == 2 * adapters);
  CHECK(base.master_weights == 4 * adapters);
  CHECK(base.weights == 2 * (6'738'415'616 + adapters));
  // QLoRA with --quant int4, GPTQ's buffers per [in, out] matrix (AutoGPTQ QuantLinear, group 128):
  // qweight in·out/2 B, qzeros [in/128, out/8] int32, scales [in/128, out] fp16, g_idx [in] int32.
  // Embeddings, head and norms stay bf16; one dequantized matrix, the largest module (gate or up,
  // 4096 x 11008), at bf16 on top.
  auto gptq = [](uint64_t in, uint64_t out) {
    return in * out / 2 + (in / 128) * out / 2 + (in / 128) * out * 2 + in * 4;
  };
  Settings qlora = lora;
  qlora.quant = Quant::kInt4;
  const uint64_t blocks = 32ULL * (4 * 4096 * 4096 + 3 * 4096 * 11008);
  const uint64_t rest = 6'738'415'616 - blocks;
  const uint64_t int4 = 32 * (4 * gptq(4096, 4096) + 2 * gptq(4096, 11008) + gptq(11008, 4096));
  const TrainMemory q = Train("llama-2-7b", qlora);
  CHECK(q.dequant == 2ULL * 4096 * 11008);
  CHECK(q.weights == int4 + 2 * rest + 4 * adapters + q.dequant);
  CHECK(q.gradients == 4 * adapters);
}

TEST_CASE("memory: the settings name the dtypes of what trains: LoRA's fp32 adapters have no master copy") {
  // PEFT keeps the adapters in fp32 beside bf16 base weights (--lora-dtype fp32): their gradients
  // and AdamW states are fp32 and there is no master copy, whatever the precision policy says.
  const nlohmann::json lora = testing::RunJson({"memory", "llama-3-8b", "--lora", "16"})["settings"];
  CHECK(lora["param_dtype"] == "bf16");
  CHECK(lora["grad_dtype"] == "fp32");
  CHECK(lora["master_dtype"] == "none");
  CHECK(lora["state_dtype"] == "fp32");
  // --lora-dtype base trains them in the policy's dtypes: bf16 gradients, an fp32 master copy.
  const nlohmann::json base =
      testing::RunJson({"memory", "llama-3-8b", "--lora", "16", "--lora-dtype", "base"})["settings"];
  CHECK(base["grad_dtype"] == "bf16");
  CHECK(base["master_dtype"] == "fp32");
  // --grad-dtype cannot change them (a gradient takes its parameter's dtype): said, not dropped.
  const testing::TallyRun grad = testing::RunTally(
      {"memory", "llama-3-8b", "--lora", "16", "--grad-dtype", "bf16", "--get", "settings.grad_dtype"});
  CHECK(grad.code == 0);
  CHECK(grad.out == "fp32\n");
  CHECK(grad.err.find("--grad-dtype: LoRA's fp32 adapters (--lora-dtype fp32) keep fp32 gradients") !=
        std::string::npos);
  // --state-dtype holds for the adapters too.
  CHECK(testing::RunJson(
            {"memory", "llama-3-8b", "--lora", "16", "--state-dtype", "bf16"})["settings"]["state_dtype"] == "bf16");
}

TEST_CASE("memory: LoRA adapts each module the checkpoint stores: one fused qkv, or q, k and v apart") {
  // PEFT wraps each nn.Linear a target names. GPT-2 holds q, k and v as one c_attn (768 -> 2304): at
  // rank 8 on it, 12 x (768 x 8 + 8 x 2304) = 294,912 trainable parameters, what PEFT's
  // print_trainable_parameters reports for GPT-2 with target_modules=["c_attn"]. Pythia's
  // query_key_value (2048 -> 6144) and Phi-3's qkv_proj (3072 -> 9216) are one module too; Llama-2's
  // q_proj, k_proj and v_proj are three, each with its own A (3 x (4096 x 8 + 8 x 4096) a block).
  const auto adapters = [](const std::string& model) {
    return Train(model, {.lora_rank = 8, .lora_targets = {"qkv"}}).gradients / 4;  // PEFT's fp32 adapters
  };
  CHECK(adapters("gpt2-small") == 294'912);
  CHECK(adapters(testing::Hf("gpt2.json")) == 294'912);
  CHECK(adapters(testing::Hf("pythia-1.4b.json")) == 24 * (2048 * 8 + 8 * 6144));
  CHECK(adapters(testing::Hf("phi-3-mini.json")) == 32 * (3072 * 8 + 8 * 9216));
  CHECK(adapters(testing::Hf("phi-2-msft.json")) == 32 * (2560 * 8 + 8 * 7680));  // its remote code's Wqkv
  CHECK(adapters(testing::Hf("phi-2.json")) == 32 * 3 * (2560 * 8 + 8 * 2560));   // transformers' q, k, v_proj
  CHECK(adapters(testing::Hf("Llama-2-7b-hf.json")) == 32 * 3 * (4096 * 8 + 8 * 4096));
  CHECK(adapters("llama-2-7b") == 32 * 3 * (4096 * 8 + 8 * 4096));
  // PEFT 0.21 on Llama-3.2-1B, rank 16 on q, k, v, o, gate, up and down, counted on the real model
  // (docs/data/h100-step-peaks-2.json, "trainable"): 11,272,192.
  const TrainMemory all =
      Train("llama-3.2-1b", {.lora_rank = 16, .lora_targets = {"qkv", "out", "gate", "up", "down"}});
  CHECK(all.gradients / 4 == 11'272'192);
}

TEST_CASE("memory: QLoRA nf4 on Llama-2-7B, 0.5 + 0.127 bits per weight over 4 (QLoRA §3)") {
  // Dettmers et al. 2023 §3: NF4 packs two weights per byte; an absmax per 64 weights, stored in 8
  // bits under double quantization (8/64 = 0.125 bits) with an fp32 constant per 256 absmax
  // (32/(64·256) = 0.002 bits) and one fp32 offset per tensor. Llama-2-7B's graph tensors per block:
  // q, k, v and out 4096 x 4096 each, gate/up/down 4096 x 11008.
  auto nf4 = [](uint64_t n) { return n / 2 + n / 64 + 4 * ((n / 64 + 255) / 256) + 4; };
  CHECK(nf4(4096ULL * 4096) == 8'388'608 + 262'144 + 4'096 + 4);
  const uint64_t quantized = 32 * (4 * nf4(4096ULL * 4096) + 3 * nf4(4096ULL * 11008));
  CHECK(quantized == 32ULL * 104'399'132);
  const uint64_t adapters = 32 * 4 * (4096 * 16 + 16 * 4096);  // q, k, v and out: an adapter each
  const uint64_t rest = 32000ULL * 4096 * 2 + 65 * 4096;       // embedding, head, 65 RMSNorms: bf16
  const TrainMemory m = Train("llama-2-7b", {.lora_rank = 16, .quant = Quant::kNf4});
  CHECK(m.dequant == 2ULL * 4096 * 11008);
  CHECK(m.weights == quantized + 2 * rest + 4 * adapters + m.dequant);
  CHECK(m.optimizer == 8 * adapters);
  // Without --lora nothing is frozen: the quantization is moot for training.
  CHECK(Train("llama-2-7b", {.quant = Quant::kNf4}).weights == 2ULL * 6'738'415'616);
}

TEST_CASE("memory: frozen components carry no gradient or state") {
  Settings frozen{.frozen = {"embedding"}};
  TrainMemory m = Train("llama-2-7b", frozen);
  const uint64_t trainable = 6'738'415'616 - 32000ULL * 4096;  // the untied head still trains
  CHECK(m.gradients == 2 * trainable);
  CHECK(m.optimizer == 8 * trainable);
}

TEST_CASE("memory: tensor and pipeline parallelism split the weights") {
  // Llama-2-7B over tp = 2: every matrix (embedding and head vocabulary-parallel) halves; the
  // 65 RMSNorm weights stay whole.
  const uint64_t norms = 65ULL * 4096;
  CHECK(Train("llama-2-7b", {.gpus = 2, .tp = 2}).weights == 2 * ((6'738'415'616 - norms) / 2 + norms));
  // pp = 4: 8 blocks per stage; the last stage also holds the final norm and the head, the first
  // the embedding: the last is the most loaded by one norm.
  TrainMemory pp = Train("llama-2-7b", {.gpus = 4, .pp = 4});
  const uint64_t block = 4ULL * 4096 * 4096 + 3ULL * 4096 * 11008 + 2 * 4096;
  CHECK(pp.stage == 3);
  CHECK(pp.weights == 2 * (8 * block + 4096 + 32000ULL * 4096));
}

TEST_CASE("memory: tensor parallelism past the K/V heads replicates them (Megatron-LM query groups)") {
  // Llama-3-8B: 32 query heads, 8 K/V heads of 128, d 4096; 8,030,261,248 parameters, of which 65
  // RMSNorm vectors stay whole and the K/V projections are 32 · 4096 · 2048. At tp = 16 every other
  // matrix splits 16 ways; K and V split 8 ways, each head held by two ranks.
  const uint64_t total = 8'030'261'248, norms = 65ULL * 4096, kv = 32ULL * 4096 * 2048;
  const uint64_t device = (total - norms - kv) / 16 + kv / 8 + norms;  // 518,918,144
  CHECK(device == 518'918'144);
  const TrainMemory tp16 = Train("llama-3-8b", {.gpus = 16, .tp = 16});
  CHECK(tp16.weights == 2 * device);
  CHECK(tp16.gradients == 2 * device);
  CHECK(tp16.optimizer == 8 * device);  // Adam's two fp32 moments
  // At tp = 8 the K/V heads split like everything else.
  CHECK(Train("llama-3-8b", {.gpus = 8, .tp = 8}).weights == 2 * ((total - norms) / 8 + norms));
  // Saved K and V split over at most their heads too: one K-sized entry capped at 2 shards and
  // one ordinary entry, 1000 elements each at bf16, over tp 8: 1000/2·2 + 1000/8·2 = 1250 bytes.
  MemoryModel saved;
  saved.n_layers = 1;
  saved.runs = {{.type = 0, .first = 0, .count = 1}};
  saved.saved = {{.elements = 1000, .tp_sharded = true, .block_type = 0, .tp_max_shards = 2},
                 {.elements = 1000, .tp_sharded = true, .block_type = 0}};
  CHECK(TrainingActivations(saved, Make({.gpus = 8, .tp = 8}), 0).per_layer == 1250);
  // Inference weights follow the same split.
  Settings infer = Make({.mode = Mode::kInfer, .gpus = 16, .tp = 16});
  const ModelSpec spec = ResolveModel("llama-3-8b");
  CHECK(InferenceMemory(spec, infer, testing::MemoryOf(spec, infer), 1).weights == 2 * device);
  // tp must divide the K/V heads or be a multiple of them: 6 heads cannot be shared by 4 ranks.
  const std::string six_kv =
      "family: transformer\nvocab_size: 100\ncontext_length: 16\nd_model: 96\nn_layers: 1\n"
      "n_heads: 12\nn_kv_heads: 6\nd_ff: 256\n";
  CHECK_THROWS_WITH_AS(TrainInline(six_kv, {.gpus = 4, .tp = 4}),
                       "tally: error: --tp: 4 ranks cannot share the 6 key/value heads of 'inline' (one must divide "
                       "the other)",
                       InputError);
  CHECK_NOTHROW(TrainInline(six_kv, {.gpus = 12, .tp = 12}));
}

TEST_CASE("memory: KV cache per token and for a batch") {
  const std::pair<const char*, uint64_t> rows[] = {{"gpt2-small", 36'864},  {"gpt2-medium", 98'304},
                                                   {"gpt2-large", 184'320}, {"gpt2-xl", 307'200},
                                                   {"llama-2-7b", 524'288}, {"llama-3-8b", 131'072}};
  for (const auto& row : rows) {
    const char* preset = row.first;  // not a structured binding: clang 14's CAPTURE cannot take one
    const uint64_t bytes = row.second;
    CAPTURE(preset);
    CHECK(KvBytesPerToken(testing::MemoryOf(ResolveModel(preset), Settings{}), DType::kBf16) == bytes);
  }
  CHECK(KvBytesPerToken(testing::MemoryOf(ResolveModel("llama-3-8b"), Settings{}), DType::kFp8E4m3) == 65'536);
  CHECK(KvBytesPerToken(testing::MemoryOf(ResolveModel("llama-3-8b"), Settings{}), DType::kInt4) == 32'768);
  auto kv = [](const std::string& model, Settings s) {
    s = Make(s);
    ModelSpec spec = ResolveModel(model);
    return InferenceMemory(spec, s, testing::MemoryOf(spec, s), InferenceBatch(s)).kv_cache;
  };
  CHECK(kv("llama-2-7b", {}) == 2'147'483'648);  // 4096 tokens: 2 GiB
  CHECK(kv("llama-3-8b", {.micro_batch = 32, .seq = 8192, .kv_dtype = DType::kFp8E4m3}) == 65'536ULL * 32 * 8192);
  // Mistral's 4096-token window caps the cache at 32k context: 2 · 32 · 8 · 128 · 2 B · 4096.
  CHECK(kv("mistral-7b", {.seq = 32768}) == 131'072ULL * 4096);
  // tp = 4 over Llama-3-8B's 8 KV heads: 2 heads per device.
  CHECK(kv("llama-3-8b", {.seq = 1024, .gpus = 4, .tp = 4}) == 131'072ULL * 1024 / 4);
}

TEST_CASE("memory: the KV cache follows each layer's attention kind") {
  // Llama-2-7B's sizes with 4 blocks: sliding (window 4096), full, chunked (8192), full. At
  // 16,384 tokens, per layer 2 · 32 · 128 = 8,192 elements per token at 2 bytes: the sliding layer
  // holds 4,096 tokens, the chunked one 8,192, the full ones all 16,384 (hand-derived).
  ModelSpec spec = ResolveModel("llama-2-7b");
  spec.transformer.n_layers = 4;
  spec.transformer.layer_specs = {{AttentionKind::kSliding, 4096}, {}, {AttentionKind::kChunked, 8192}, {}};
  Settings s = Make({.seq = 16384, .mode = Mode::kInfer});
  const uint64_t per_token_layer = 2 * 32 * 128 * 2;
  const uint64_t expected = per_token_layer * (4096 + 16384 + 8192 + 16384);
  CHECK(InferenceMemory(spec, s, testing::MemoryOf(spec, s), 1).kv_cache == expected);
  // Below every span, each layer holds every token: what kv_cache.per_token counts.
  CHECK(KvBytesPerToken(testing::MemoryOf(spec, s), DType::kBf16) == 4 * per_token_layer);
  // Pipeline stages split the layers: stage 0 holds the sliding and the first full layer.
  Settings pp = Make({.seq = 16384, .mode = Mode::kInfer, .gpus = 2, .pp = 2});
  CHECK(KvCacheBytes(testing::MemoryOf(spec, pp), 16384, 1, pp, 0) == per_token_layer * (4096 + 16384));
  CHECK(KvCacheBytes(testing::MemoryOf(spec, pp), 16384, 1, pp, 1) == per_token_layer * (8192 + 16384));
}

TEST_CASE("memory: overhead is added as given") {
  TrainMemory plain = Train("gpt2-small", {});
  TrainMemory bytes = Train("gpt2-small", {.overhead_bytes = 1'000});
  TrainMemory pct = Train("gpt2-small", {.overhead_fraction = 0.5});
  CHECK(bytes.total == plain.total + 1'000);
  CHECK(pct.overhead == plain.total / 2);
}

TEST_CASE("fit: the answer fits and one more does not") {
  Evaluation spec(ResolveModel("llama-2-7b"));
  const uint64_t limit = 80ULL << 30;
  Settings base = Make({.seq = 4096, .gpus = 8, .zero = 3});
  base.mode = Mode::kTrain;
  FitResult batch = Fit(spec, base, Solve::kBatch, limit);
  REQUIRE(batch.fits);
  CHECK(DeviceMemory(spec, batch.settings) <= limit);
  Settings more = batch.settings;
  more.micro_batch += 1;
  more.batch = more.micro_batch;
  CHECK(DeviceMemory(spec, more) > limit);

  // One device: the model states (16 B a parameter) and foreach AdamW's sqrt of every parameter
  // (4 B more) alone take 135 GB, so the sequence is searched within 160 GiB.
  FitResult seq = Fit(spec, Make({.mode = Mode::kTrain}), Solve::kSeq, 160ULL << 30);
  REQUIRE(seq.fits);
  Settings longer = seq.settings;
  longer.seq = *seq.settings.seq + 1;
  CHECK(DeviceMemory(spec, seq.settings) <= 160ULL << 30);
  CHECK(DeviceMemory(spec, longer) > 160ULL << 30);

  FitResult gpus = Fit(spec, Make({.seq = 1024, .mode = Mode::kTrain, .zero = 3}), Solve::kGpus, 24ULL << 30);
  REQUIRE(gpus.fits);
  Settings fewer = gpus.settings;
  fewer.gpus -= 1;
  CHECK(DeviceMemory(spec, gpus.settings) <= 24ULL << 30);
  CHECK(DeviceMemory(spec, fewer) > 24ULL << 30);
}

TEST_CASE("fit: nothing fits is an answer too") {
  Evaluation ev(ResolveModel("llama-2-70b"));
  FitResult r = Fit(ev, ResolveSettings(Make({.mode = Mode::kTrain}), ev.spec()), Solve::kBatch, 1ULL << 30);
  CHECK_FALSE(r.fits);
  CHECK(r.bytes > 1ULL << 30);
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST_CASE("memory: int8 scales are per output channel, experts included") {
  // Mixtral's block matrices at 1 byte plus an fp32 scale (bitsandbytes' SCB) per output channel of
  // each expert; bitsandbytes replaces the router's nn.Linear too.
  ModelSpec spec = ResolveModel("mixtral-8x7b");
  Settings s = Make({.seq = 1, .quant = Quant::kInt8});
  const uint64_t w = InferenceMemory(spec, s, testing::MemoryOf(spec, s), 1).weights;
  // Per block: attention 4096·(4096 + 2·1024) + 4096·4096 with 6144 + 4096 channels; router
  // 4096·8 (8 channels); experts 8·(2·4096·14336 + 14336·4096) with 8·(2·14336 + 4096) channels.
  const uint64_t attention = 4096ULL * 6144 + 4096ULL * 4096 + 4 * (6144 + 4096);
  const uint64_t router = 4096ULL * 8 + 4 * 8;
  const uint64_t experts = 8ULL * 3 * 4096 * 14336 + 4 * 8ULL * (2 * 14336 + 4096);
  const uint64_t rest = 2ULL * (2 * 32000 * 4096 + 65 * 4096);  // embeddings, head, norms in bf16
  CHECK(w == 32 * (attention + router + experts) + rest);
}

TEST_CASE("memory: gpt-oss-20b's quantization_config, experts in mxfp4 and the rest bf16") {
  ModelSpec spec = ResolveModel("gpt-oss-20b");
  QuantizationSpec q;
  REQUIRE(ReadQuantization("config.json", R"({"quantization_config": {"quant_method": "mxfp4",
      "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
      "lm_head"]}})",
                           q));
  spec.quantization = q;
  Settings s = Make({.seq = 1, .mode = Mode::kInfer});
  const uint64_t w = InferenceMemory(spec, s, testing::MemoryOf(spec, s), 1).weights;
  // openai/gpt-oss-20b: 24 blocks of 32 experts, each gate, up and down 2880 x 2880; OCP MX: 32 E2M1
  // values (16 B) + one E8M0 scale (1 B) per 32 weights of a row, 2880/32 = 90 blocks a row.
  const uint64_t experts = 24ULL * 32 * 3 * 2880 * 90 * 17;
  CHECK(experts == 10'152'345'600);
  // The rest at bf16: 20,914,757,184 parameters (the published total) less the 24·32·3·2880² expert weights.
  const uint64_t rest = 20'914'757'184 - 24ULL * 32 * 3 * 2880 * 2880;
  CHECK(w == experts + 2 * rest);
  CHECK(w == 13'761'264'768);
  // --quant mxfp4 is the same rule; the flag wins over the config.
  spec.quantization.reset();
  Settings flag = Make({.seq = 1, .mode = Mode::kInfer, .quant = Quant::kMxfp4});
  CHECK(InferenceMemory(spec, flag, testing::MemoryOf(spec, flag), 1).weights == w);
}

TEST_CASE("memory: fp8 in 128 x 128 blocks on Llama-3.1-8B") {
  ModelSpec spec = ResolveModel("llama-3.1-8b");
  Settings s = Make({.seq = 1, .mode = Mode::kInfer, .quant = Quant::kFp8});
  const uint64_t w = InferenceMemory(spec, s, testing::MemoryOf(spec, s), 1).weights;
  // One e4m3 byte per block weight, an fp32 scale per 128 x 128 block (out/128 · in/128): q and o
  // 32·32, k and v 8·32, gate, up and down 112·32 each; embeddings, head, norms bf16.
  const uint64_t matrices = 32ULL * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336);
  const uint64_t scales = 32ULL * 4 * (2 * 1024 + 2 * 256 + 3 * 3584);
  CHECK(w == matrices + scales + 2 * (8'030'261'248 - matrices));
}

TEST_CASE("memory: modules_to_not_convert keeps modules unquantized") {
  ModelSpec spec = ResolveModel("llama-3.1-8b");
  QuantizationSpec q;
  REQUIRE(ReadQuantization("config.json", R"({"quantization_config": {"quant_method": "bitsandbytes",
      "load_in_8bit": true, "llm_int8_skip_modules": ["lm_head", "mlp"]}})",
                           q));
  spec.quantization = q;
  Settings s = Make({.seq = 1, .mode = Mode::kInfer});
  const uint64_t w = InferenceMemory(spec, s, testing::MemoryOf(spec, s), 1).weights;
  // Only attention in int8 with an fp32 scale per output row: q 4096, k and v 1024, o 4096 rows.
  const uint64_t attention = 32ULL * (2 * 4096 * 4096 + 2 * 4096 * 1024);
  CHECK(w == attention + 32ULL * 4 * (2 * 4096 + 2 * 1024) + 2 * (8'030'261'248 - attention));
  CHECK(Quantizes(q, QuantModule::kAttention));
  CHECK_FALSE(Quantizes(q, QuantModule::kMlp));
  CHECK_FALSE(Quantizes(q, QuantModule::kExperts));
  CHECK_FALSE(Quantizes(q, QuantModule::kRouter));
  CHECK_FALSE(Quantizes(q, QuantModule::kHead));
}

TEST_CASE("memory: pipeline stages split inference weights and KV cache") {
  ModelSpec spec = ResolveModel("llama-2-70b");
  Settings one = Make({.seq = 4096, .mode = Mode::kInfer});
  Settings four = Make({.seq = 4096, .mode = Mode::kInfer, .gpus = 4, .pp = 4});
  const InferMemory a = InferenceMemory(spec, one, testing::MemoryOf(spec, one), 1);
  const InferMemory b = InferenceMemory(spec, four, testing::MemoryOf(spec, four), 1);
  CHECK(b.kv_cache * 4 == a.kv_cache);  // 20 of 80 layers on each stage
  CHECK(b.weights < a.weights / 3);
}

TEST_CASE("memory: --layers names each layer's attention kind and the KV bytes one token adds to it") {
  // gemma-2-9b (config.json: sliding_window 4096, every other layer full, layer 0 sliding): each
  // layer keeps K and V of 8 heads x 256 per token, 2 · 8 · 256 = 4,096 elements: 8,192 bytes at
  // bf16 (the activation dtype, the KV dtype's default), 2,048 at int4.
  for (const auto& [flags, bytes] : {std::pair<std::vector<std::string>, uint64_t>{{}, 8192},
                                     std::pair<std::vector<std::string>, uint64_t>{{"--kv-dtype", "int4"}, 2048}}) {
    std::vector<std::string> args = {"estimate", "gemma-2-9b", "--seq", "16", "--layers", "--format", "json"};
    args.insert(args.end(), flags.begin(), flags.end());
    const testing::TallyRun run = testing::RunTally(args);
    REQUIRE(run.code == 0);
    const nlohmann::json doc = nlohmann::json::parse(run.out);
    std::vector<std::string> kinds;
    uint64_t sum = 0;
    for (const nlohmann::json& l : doc["layers"]) {
      if (l["attention"].is_null()) {
        CHECK(l["kv_bytes_per_token"].is_null());
        continue;
      }
      const std::string kind = l["attention"].get<std::string>();
      CHECK(l["kv_bytes_per_token"].get<uint64_t>() == bytes);
      CHECK(l["attention_span"] == (kind == "sliding" ? nlohmann::json(4096) : nlohmann::json(nullptr)));
      sum += l["kv_bytes_per_token"].get<uint64_t>();
      kinds.push_back(kind);
    }
    REQUIRE(kinds.size() == 42);
    for (size_t i = 0; i < kinds.size(); ++i) CHECK(kinds[i] == (i % 2 == 0 ? "sliding" : "full"));
    CHECK(sum == doc["kv_cache"]["per_token"].get<uint64_t>());  // the layers add up to the model's figure
  }
  // The human table shows the column.
  const testing::TallyRun text = testing::RunTally({"estimate", "gemma-2-9b", "--seq", "16", "--layers"});
  CHECK(text.out.find("sliding") != std::string::npos);
  CHECK(text.out.find("KV per token") != std::string::npos);
}

}  // namespace
}  // namespace tally
