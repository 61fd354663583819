// The training step's timeline (estimate/step_timeline.h): peaks derived by hand, the repeated-block
// shortcut against the walk of every block, and the device figure's lines.
#include "estimate/step_timeline.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "estimate/memory.h"
#include "estimate/params.h"
#include "estimate/step_model.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

Settings Make(Settings s) {
  s.dtypes = PolicyDtypes(s.precision);
  if (s.batch < s.micro_batch) s.batch = s.micro_batch;
  return s;
}

struct Step {
  TrainMemory ledger;
  StepTimeline timeline;
};

Step StepOf(const std::string& model, Settings s, bool events = false) {
  const ModelSpec spec = ResolveModel(model);
  s = ResolveSettings(Make(s), spec);
  const MemoryModel m = testing::MemoryOf(spec, s);
  Step out{TrainingMemory(s, m), {}};
  out.timeline = TrainingTimeline(m, s, out.ledger, events);
  return out;
}

uint64_t States(const TrainMemory& m) { return m.weights + m.master_weights + m.gradients + m.optimizer; }

// The temporaries live at `node`'s event in `phase`.
uint64_t Temporaries(const Step& s, StepPhase phase, const std::string& node) {
  for (const StepEvent& e : s.timeline.events) {
    if (e.phase == phase && e.node == node) return e.live[LiveCategory::kTemporaries];
  }
  FAIL("no event " << node);
  return 0;
}

// seed-mlp: Linear(512, 1024), ReLU, Linear(1024, 512), ReLU, Linear(512, 10), in that order:
// 524,288 + 1,024 + 524,288 + 512 + 5,120 + 10 = 1,055,242 parameters.
constexpr uint64_t kSeedParams = 1'055'242;

TEST_CASE("timeline: AdamW's optimizer step peaks with its temporaries, by implementation") {
  // fp32: weights, gradients 4 B each and AdamW's two states 8 B: 16 B a parameter at the step.
  // The logits the loop still holds (10 per sample, fp32) are live too: 40 B.
  const uint64_t states = 16 * kSeedParams, logits = 10 * 4;
  // for-loop (torch/optim/adamw.py, _single_tensor_adamw): exp_avg_sq.sqrt() and its division, two
  // tensors of one parameter, while the previous parameter's denom lives: at the second weight,
  // 2 · 524,288 + 1,024 (the first bias) elements.
  const Step loop = StepOf("seed-mlp", {.precision = Precision::kFp32, .optimizer_impl = OptimizerImpl::kForLoop});
  CHECK(States(loop.ledger) == states);
  CHECK(loop.timeline.peak == states + (2 * 524'288 + 1'024) * 4 + logits);
  CHECK(loop.timeline.peak_phase == StepPhase::kOptimizer);
  CHECK(loop.timeline.peak_at == "optimizer");
  // foreach (_multi_tensor_adamw): _foreach_sqrt over every parameter at once, divided in place.
  const Step foreach = StepOf("seed-mlp", {.precision = Precision::kFp32, .optimizer_impl = OptimizerImpl::kForeach});
  CHECK(foreach.timeline.peak == states + kSeedParams * 4 + logits);
  CHECK(foreach.timeline.at_peak[LiveCategory::kTemporaries] == kSeedParams * 4 + logits);
  // Fused kernels allocate nothing: the step's peak moves to the end of backward, below the
  // for-loop's, at or above all the model states.
  const Step fused = StepOf("seed-mlp", {.precision = Precision::kFp32, .optimizer_impl = OptimizerImpl::kFused});
  CHECK(fused.timeline.peak_phase == StepPhase::kBackward);
  CHECK(fused.timeline.peak >= states);
  CHECK(fused.timeline.peak < loop.timeline.peak);
}

TEST_CASE("timeline: the repeated-block shortcut finds the peak the walk of every block finds") {
  struct Case {
    const char* model;
    Settings settings;
  };
  const std::vector<Case> cases = {
      {"gpt2-small", {.seq = 512}},
      {"gpt2-small", {.seq = 256, .precision = Precision::kFp32, .attention = Attention::kEager}},
      {"llama-3.2-1b", {.seq = 1024, .recompute = Recompute::kFull}},
      {"llama-3.2-1b", {.batch = 4, .micro_batch = 2, .seq = 512}},
      {"llama-3.2-1b", {.seq = 512, .precision = Precision::kAmpBf16}},
      {"qwen3-0.6b", {.seq = 512, .gpus = 4, .zero = 3}},
      {"gemma-2-2b", {.seq = 1024, .recompute = Recompute::kSelective, .attention = Attention::kEager}},
      {"llama-2-7b", {.batch = 8, .micro_batch = 1, .seq = 1024, .gpus = 4, .pp = 4}},
      {"llama-3.2-1b",
       {.seq = 1024, .precision = Precision::kAmpBf16, .recompute = Recompute::kFull, .recompute_layers = 5}},
      {"llama-2-7b",
       {.batch = 8,
        .micro_batch = 1,
        .seq = 1024,
        .recompute = Recompute::kFull,
        .recompute_layers = 3,
        .gpus = 4,
        .pp = 4}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.model);
    const Step fast = StepOf(c.model, c.settings);
    const Step walked = StepOf(c.model, c.settings, true);
    REQUIRE_FALSE(walked.timeline.events.empty());
    uint64_t most = 0;
    std::string at;
    for (const StepEvent& e : walked.timeline.events) {
      if (e.live.Total() > most) most = e.live.Total(), at = e.node;
    }
    CHECK(fast.timeline.peak == most);
    CHECK(fast.timeline.peak == walked.timeline.peak);
    CHECK(fast.timeline.peak_at == at);
    CHECK(fast.timeline.events.empty());
  }
}

TEST_CASE("timeline: the loss holds four vocabulary-wide fp32 tensors at once") {
  // GPT-2 small in fp32, eager attention, 128 tokens: the logits are 128 · 50,257 fp32 values. While
  // log_softmax's backward runs the loop holds the logits, autograd the log-probabilities (saved:
  // in memory.train.activations), nll_loss's gradient of them and log_softmax's gradient of the
  // logits; no gradient is written yet (the tied head comes next), and the weights and AdamW states
  // are there from the step before.
  const uint64_t logits = 128ULL * 50'257 * 4;
  const Step s =
      StepOf("gpt2-small", {.seq = 128, .precision = Precision::kFp32, .attention = Attention::kEager}, true);
  const StepEvent* loss = nullptr;
  for (const StepEvent& e : s.timeline.events) {
    if (e.node == "loss.backward") loss = &e;
  }
  REQUIRE(loss != nullptr);
  CHECK(loss->phase == StepPhase::kLoss);
  CHECK(loss->live[LiveCategory::kGradients] == 0);
  CHECK(loss->live[LiveCategory::kActivations] == s.ledger.activations);
  CHECK(loss->live[LiveCategory::kTemporaries] == 3 * logits);
  CHECK(loss->live.Total() == s.ledger.weights + s.ledger.optimizer + s.ledger.activations + 3 * logits);
}

TEST_CASE("timeline: a tensor-parallel rank writes its share of a split output, the all-reduced ones whole") {
  // GPT-2 small in fp32, 128 tokens, TP 4 (Shoeybi et al. 2019, §3): the column-parallel qkv (2,304
  // wide) and MLP up (3,072) write a quarter of their columns on each rank, the attention core its
  // 3 of 12 heads (768 / 4); the row-parallel out ends in an all-reduce, whole on every rank, and a
  // quarter of it under sequence parallelism's reduce-scatter (Korthikanti et al. 2022, §4.2.2).
  const auto written = [](bool sp) {
    const Step s = StepOf("gpt2-small", {.seq = 128, .precision = Precision::kFp32, .tp = 4, .sp = sp}, true);
    std::map<std::string, uint64_t> out;
    for (const StepEvent& e : s.timeline.events) {
      if (e.phase == StepPhase::kForward && e.node.rfind("blocks.0.", 0) == 0)
        out[e.node] = e.live[LiveCategory::kTemporaries];
    }
    return out;
  };
  const std::map<std::string, uint64_t> tp = written(false);
  CHECK(tp.at("blocks.0.attn.qkv") == 128ULL * 2304 / 4 * 4);
  CHECK(tp.at("blocks.0.mlp.up") == 128ULL * 3072 / 4 * 4);
  CHECK(tp.at("blocks.0.attn.context") == 128ULL * 768 / 4 * 4);
  CHECK(tp.at("blocks.0.attn.out") == 128ULL * 768 * 4);
  const std::map<std::string, uint64_t> sp = written(true);
  CHECK(sp.at("blocks.0.attn.out") == 128ULL * 768 / 4 * 4);
  CHECK(sp.at("blocks.0.mlp.up") == tp.at("blocks.0.mlp.up"));
}

TEST_CASE("timeline: a tied embedding's gradient is the sum of two, three tables live at its last write") {
  // GPT-2's wte (50,257 x 768, fp32) gets the head's gradient first, held by autograd until the
  // embedding's dense gradient arrives; their sum becomes .grad (scripts/step_peaks_cpu measured it).
  const uint64_t wte = 50'257ULL * 768 * 4;
  const Step s =
      StepOf("gpt2-small", {.seq = 128, .precision = Precision::kFp32, .attention = Attention::kEager}, true);
  const StepEvent& last = s.timeline.events[s.timeline.events.size() - 2];  // before the optimizer
  CHECK(last.node == "embed.tokens");
  CHECK(last.live[LiveCategory::kGradients] == s.ledger.gradients);
  // The embedding's dense gradient and the sum, beside the pending one already in the gradients;
  // the gradient of the embedding's output (128 x 768 fp32) and the held logits.
  CHECK(last.live[LiveCategory::kTemporaries] == 2 * wte + 128 * 768 * 4 + 128ULL * 50'257 * 4);
}

TEST_CASE("timeline: gradient accumulation starts each micro-batch with every gradient") {
  const Step s = StepOf("llama-3.2-1b", {.batch = 4, .micro_batch = 2, .seq = 256}, true);
  for (const StepEvent& e : s.timeline.events) {
    CAPTURE(e.node);
    CHECK(e.live[LiveCategory::kGradients] == s.ledger.gradients);
  }
}

TEST_CASE("timeline: ZeRO-3 holds two gathered blocks, and in backward one block's unsharded gradients") {
  // Llama-2-7B's block: 4 · 4096² (attention) + 3 · 4096 · 11,008 (SwiGLU) + 2 · 4096 (norms) =
  // 202,383,360 parameters (docs/memory.md, --offload params), 404,766,720 B in bf16. Against ZeRO-1 on the
  // same 8 devices, FSDP adds the running and the prefetched block in forward, and the block's bf16
  // gradients before their reduce-scatter in backward.
  const uint64_t block = 202'383'360ULL * 2;
  const Settings zero1{.seq = 512, .gpus = 8, .zero = 1};
  Settings zero3 = zero1;
  zero3.zero = 3;
  const Step one = StepOf("llama-2-7b", zero1, true), three = StepOf("llama-2-7b", zero3, true);
  CHECK(Temporaries(three, StepPhase::kForward, "blocks.5.mlp.up") ==
        Temporaries(one, StepPhase::kForward, "blocks.5.mlp.up") + 2 * block);
  CHECK(Temporaries(three, StepPhase::kBackward, "blocks.5.mlp.up") ==
        Temporaries(one, StepPhase::kBackward, "blocks.5.mlp.up") + 3 * block);
}

TEST_CASE("timeline: under LoRA, ZeRO-2 holds a block's adapter gradients in fp32 before their reduce-scatter") {
  // Llama-2-7B with rank-16 adapters on q, k, v and o (PEFT wraps the four projections apart): each
  // adds A (16 x 4,096) and B (4,096 x 16), 4 · 2 · 16 · 4,096 = 524,288 parameters a block, whose
  // gradients are fp32 under --lora-dtype fp32 (PEFT's). The frozen bf16 weights have none, so the
  // unsharded buffer is 2,097,152 B, not the block's 404,766,720 B of weights.
  const uint64_t adapters = 4ULL * 2 * 16 * 4096 * 4;
  const Settings zero1{.seq = 512, .lora_rank = 16, .gpus = 8, .zero = 1};
  Settings zero2 = zero1;
  zero2.zero = 2;
  const Step one = StepOf("llama-2-7b", zero1, true), two = StepOf("llama-2-7b", zero2, true);
  CHECK(Temporaries(two, StepPhase::kForward, "blocks.5.mlp.up") ==
        Temporaries(one, StepPhase::kForward, "blocks.5.mlp.up"));
  CHECK(Temporaries(two, StepPhase::kBackward, "blocks.5.mlp.up") ==
        Temporaries(one, StepPhase::kBackward, "blocks.5.mlp.up") + adapters);
}

TEST_CASE("timeline: autocast saves its half-precision weight casts until each GEMM's backward") {
  // GPT-2 small under amp-bf16: at the loss every GEMM's bf16 weight copy is live beside the saved
  // activations: 12 blocks of 768·2304 + 768·768 + 2 · 768·3072 and the tied head's 50,257·768.
  const uint64_t casts = (12ULL * (768 * 2304 + 768 * 768 + 2 * 768 * 3072) + 50'257ULL * 768) * 2;
  const Step s = StepOf("gpt2-small", {.seq = 128, .precision = Precision::kAmpBf16}, true);
  CHECK(s.ledger.weights == 124'439'808ULL * 4);  // fp32 weights, no master copy
  const StepEvent* loss = nullptr;
  for (const StepEvent& e : s.timeline.events) {
    if (e.node == "loss") loss = &e;
  }
  REQUIRE(loss != nullptr);
  CHECK(loss->live[LiveCategory::kActivations] == s.ledger.activations + casts);
  // Under TP 4 a rank casts its quarter of every matrix (each of these splits by 4, the tied head's
  // 50,257 · 768 too: vocabulary-parallel).
  const Step tp = StepOf("gpt2-small", {.seq = 128, .precision = Precision::kAmpBf16, .tp = 4}, true);
  for (const StepEvent& e : tp.timeline.events) {
    if (e.node == "loss") CHECK(e.live[LiveCategory::kActivations] == tp.ledger.activations + casts / 4);
  }
}

TEST_CASE("timeline: a fused cross-entropy keeps a log-sum-exp a row and writes the gradient in bf16") {
  // Llama-3-8B, 2,048 tokens, bf16: the eager loss keeps the fp32 log-probabilities (2,048 x 128,256
  // x 4 B) where a fused kernel keeps one fp32 log-sum-exp a token (2,048 x 4 B); its backward
  // writes the logits' gradient in bf16 (2,048 x 128,256 x 2 B) and nothing in fp32 (the eager one
  // holds two fp32 gradients there).
  Settings fused{.seq = 2048, .precision = Precision::kBf16};
  fused.loss_kernel = LossKernel::kFused;
  const Step eager = StepOf("llama-3-8b", {.seq = 2048, .precision = Precision::kBf16}, true);
  const Step one = StepOf("llama-3-8b", fused, true);
  CHECK(eager.ledger.activations - one.ledger.activations == 2048ULL * 128'256 * 4 - 2048ULL * 4);
  const StepEvent* backward = nullptr;
  for (const StepEvent& e : one.timeline.events) {
    if (e.node == "loss.backward") backward = &e;
  }
  REQUIRE(backward != nullptr);
  // Beside the bf16 logits themselves, which the training loop holds (and the kernel reads again).
  CHECK(backward->live[LiveCategory::kTemporaries] == 2 * (2048ULL * 128'256 * 2));
  // The time prices it as one kernel under eager kernels too: less than the eager loss's passes.
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const ModelSpec spec = ResolveModel("llama-3-8b");
  auto step = [&](LossKernel k) {
    Settings s = ResolveSettings(Make({.seq = 2048, .precision = Precision::kBf16}), spec);
    s.loss_kernel = k;
    const LayerGraph g = testing::ResolvedGraph(spec, s);
    return TrainingStep(g, s, h100, 989.5e12, 0.8, CountParams(g).trainable, {}).compute;
  };
  CHECK(step(LossKernel::kFused) < step(LossKernel::kEager));
}

TEST_CASE("timeline: a chunked cross-entropy holds one chunk of logits, not the whole") {
  // Llama-3-8B at 8,192 tokens: ⌈V/h⌉ = ⌈128,256 / 4,096⌉ = 32, chunks of next_pow2(8,192 / 32) =
  // 256 tokens: 256 · 128,256 bf16 logits, beside the hidden states' gradient (8,192 · 4,096 bf16).
  const Settings base{.seq = 8192, .lora_rank = 16};
  Settings chunked = base;
  chunked.loss_kernel = LossKernel::kChunked;
  const Step s = StepOf("llama-3-8b", chunked, true);
  const StepEvent* loss = nullptr;
  for (const StepEvent& e : s.timeline.events) {
    if (e.phase == StepPhase::kLoss) loss = &e;
  }
  REQUIRE(loss != nullptr);
  CHECK(loss->live[LiveCategory::kTemporaries] == 256ULL * 128'256 * 2 + 8192ULL * 4096 * 2);
  CHECK(s.timeline.peak < StepOf("llama-3-8b", base).timeline.peak);
  // A model without a language-model head has nothing to chunk, and says so.
  const testing::TallyRun cnn =
      testing::RunTally({"memory", "resnet18", "--mode", "train", "--loss-kernel", "chunked"});
  CHECK(cnn.code == 0);
  CHECK(cnn.err.find("--loss-kernel chunked: 'resnet18' has no language-model head to chunk") != std::string::npos);
}

TEST_CASE("timeline: the device figure is the peak and the runtime's lines, each overridable") {
  const auto json = [](std::vector<std::string> args) {
    const testing::TallyRun run = testing::RunTally(args);
    REQUIRE(run.code == 0);
    return nlohmann::json::parse(run.out)["memory"]["train"];
  };
  const nlohmann::json d = json({"memory", "gpt2-small", "--mode", "train", "--format", "json"});
  const uint64_t peak = d["peak"].get<uint64_t>();
  // 685 MiB context, 32 MiB cuBLAS workspace, 10% of the peak; no NCCL on one device.
  CHECK(d["cuda_context"] == 685ULL << 20);
  CHECK(d["cublas_workspace"] == 32ULL << 20);
  CHECK_FALSE(d.contains("nccl_buffers"));
  CHECK(d["fragmentation"] == static_cast<uint64_t>(static_cast<double>(peak) * 0.10));
  CHECK(d["device"] == peak + (685ULL << 20) + (32ULL << 20) + d["fragmentation"].get<uint64_t>());
  const nlohmann::json o =
      json({"memory", "gpt2-small", "--mode", "train", "--cuda-context", "1GiB", "--cublas-workspace", "0B",
            "--fragmentation", "0%", "--gpus", "2", "--nccl-buffers", "100MiB", "--format", "json"});
  CHECK(o["device"] == o["peak"].get<uint64_t>() + (1ULL << 30) + 100ULL * (1 << 20));
}

TEST_CASE("timeline: memory --timeline draws the step and lists its events in JSON") {
  const std::string svg =
      (std::filesystem::temp_directory_path() / ("tally-step-" + std::to_string(::getpid()) + ".svg")).string();
  const testing::TallyRun run = testing::RunTally(
      {"memory", "gpt2-small", "--seq", "128", "--mode", "train", "--timeline", svg, "--format", "json"});
  REQUIRE(run.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  const nlohmann::json& events = doc["memory"]["train"]["timeline"];
  REQUIRE(events.is_array());
  uint64_t most = 0;
  for (const nlohmann::json& e : events) most = std::max(most, e["total"].get<uint64_t>());
  CHECK(most == doc["memory"]["train"]["peak"].get<uint64_t>());
  CHECK(events.back()["phase"] == "optimizer");
  const std::string text = ReadFileText(svg);
  std::filesystem::remove(svg);
  CHECK(text.rfind("<?xml", 0) == 0);
  CHECK(text.find("peak") != std::string::npos);
  const testing::TallyRun infer = testing::RunTally({"memory", "gpt2-small", "--mode", "infer", "--timeline", svg});
  CHECK(infer.code == 2);
  CHECK(infer.err == "tally: error: --timeline: it draws the training step; drop --mode infer\n");
}

}  // namespace
}  // namespace tally
