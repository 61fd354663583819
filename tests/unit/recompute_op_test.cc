// --recompute op, torchtitan's per-op selective checkpointing (graph/op_checkpoint.h): each block
// keeps its input, the outputs of its odd-numbered aten.mm calls and of SDPA, and reruns the rest.
// Each figure derived by hand for Llama-3-8B, whose block calls q_proj, k_proj, v_proj, o_proj,
// gate_proj (w1), up_proj (w3) and down_proj (w2) in that order (torchtitan's Attention and
// FeedForward: w2(silu(w1(x)) * w3(x))): q, v, gate and down are kept, k, o and up rerun.
#include <doctest/doctest.h>

#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "estimate/step_model.h"
#include "estimate/step_timeline.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

Settings Train(Recompute recompute, uint64_t tp = 1, bool sp = false) {
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kBf16);
  s.precision = Precision::kBf16;
  s.seq = 2048;
  s.recompute = recompute;
  s.tp = s.gpus = tp;
  s.sp = sp;
  return s;
}

TrainMemory Ledger(const std::string& model, const Settings& s) {
  return TrainingMemory(s, testing::MemoryOf(ResolveModel(model), s));
}

// Per token and block, beyond the input full recomputation keeps: q (4,096) and v (1,024), the
// attention output (4,096) and its fp32 log-sum-exp (32 heads), gate (14,336) and down (4,096), bf16.
constexpr uint64_t kKeptPerToken = (4096 + 1024 + 4096 + 14336 + 4096) * 2 + 32 * 4;  // 55,424 B

TEST_CASE("recompute op: a Llama block keeps q, v, attention, gate and down beside its input") {
  // Each of 32 blocks keeps kKeptPerToken more than under full; the block rebuilt in backward
  // needs that much less, since the rerun hands what was kept on to the backward (or frees it: the
  // down projection's output): 31 blocks' worth in all.
  const uint64_t diff = Ledger("llama-3-8b", Train(Recompute::kOp)).activations -
                        Ledger("llama-3-8b", Train(Recompute::kFull)).activations;
  CHECK(diff == 31ULL * 2048 * kKeptPerToken);
  // Under TP 2 with sequence parallelism (torchtitan's plan): q, v, the attention output and its
  // statistics split by heads (8 K/V heads over 2 ranks) and gate by columns, all in two; down's
  // output is a partial sum, whole on each rank (4,096); the reduce-scatters after o and down, on
  // the policy's list, keep half a token's hidden each: 19,968 elements and 16 fp32 statistics,
  // 40,000 B.
  const uint64_t tp = Ledger("llama-3-8b", Train(Recompute::kOp, 2, true)).activations -
                      Ledger("llama-3-8b", Train(Recompute::kFull, 2, true)).activations;
  CHECK(tp == 31ULL * 2048 * ((2048 + 512 + 2048 + 7168 + 4096 + 2048 + 2048) * 2 + 16 * 4));
  // Without sequence parallelism there is no reduce-scatter; down's whole output stays.
  const uint64_t no_sp = Ledger("llama-3-8b", Train(Recompute::kOp, 2, false)).activations -
                         Ledger("llama-3-8b", Train(Recompute::kFull, 2, false)).activations;
  CHECK(no_sp == 31ULL * 2048 * ((2048 + 512 + 2048 + 7168 + 4096) * 2 + 16 * 4));
}

TEST_CASE("recompute op: Phi-3's gate_up_proj is one call") {
  // modeling_phi3.py: qkv_proj (one call, 9,216 wide: kept), o_proj (rerun), gate_up_proj (one call,
  // 2 x 8,192: kept), down_proj (rerun); with attention's output (3,072) and fp32 log-sum-exp (32
  // heads), 57,472 B a token and block, 31 blocks' worth beyond full at 1,024 tokens.
  auto at_1024 = [](Recompute r) {
    Settings s = Train(r);
    s.seq = 1024;
    return Ledger("phi-3-mini", s).activations;
  };
  CHECK(at_1024(Recompute::kOp) - at_1024(Recompute::kFull) == 31ULL * 1024 * ((9216 + 16384 + 3072) * 2 + 32 * 4));
  // The same layout from the Hugging Face config (model_type phi3).
  CHECK(ResolveModel(TALLY_TEST_DATA "/hf/phi-3-mini.json").transformer.gate_up_fused);
}

TEST_CASE("recompute op: a linear with a bias makes addmm, which the policy neither counts nor keeps") {
  // GPT-2's Conv1D calls torch.addmm (c_attn, c_proj, c_fc, c_proj): no aten.mm in its blocks, so
  // each of its 12 blocks keeps attention's output (768) and fp32 log-sum-exp (12 heads) beside its
  // input, 11 blocks' worth beyond full at 1,024 tokens.
  auto at_1024 = [](Recompute r) {
    Settings s = Train(r);
    s.seq = 1024;
    return Ledger("gpt2-small", s).activations;
  };
  CHECK(at_1024(Recompute::kOp) - at_1024(Recompute::kFull) == 11ULL * 1024 * (768 * 2 + 12 * 4));
  // And --lora with op is refused: PEFT's adapters run between the base layers' matmuls.
  const testing::TallyRun lora =
      testing::RunTally({"memory", "llama-3-8b", "--mode", "train", "--recompute", "op", "--lora", "16"});
  CHECK(lora.code == 2);
  CHECK(lora.err.find("--recompute op: torchtitan's per-op policy, which trains no LoRA adapters") !=
        std::string::npos);
}

TEST_CASE("recompute op: the backward reruns k, o and up, not q, v, gate, down or attention") {
  // 2 · 4,096 · (1,024 + 4,096 + 14,336) FLOPs a token and block, over 32 blocks of 2,048 tokens.
  const LayerGraph g = testing::ResolvedGraph(ResolveModel("llama-3-8b"), {.seq = 2048});
  CHECK(RecomputeFlops(g, RecomputeRule(g, Recompute::kOp)) == 32ULL * 2048 * 2 * 4096 * (1024 + 4096 + 14336));
  // The same through the CLI, at batch 1.
  CHECK(testing::RunJson({"flops", "llama-3-8b", "--seq", "2048", "--recompute", "op"})["flops"]["recompute"]
            .get<uint64_t>() == 32ULL * 2048 * 2 * 4096 * (1024 + 4096 + 14336));
}

TEST_CASE("recompute op: the step's time lies between none and full, by its reruns") {
  const LayerGraph g = testing::ResolvedGraph(ResolveModel("llama-3-8b"), {.seq = 2048});
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const uint64_t params = CountParams(g).trainable;
  auto step = [&](Recompute r) {
    Settings s = Train(r);
    s.batch = s.micro_batch = 1;
    return TrainingStep(g, s, h100, 989.5e12, 0.785, params, {.kernels = Kernels::kFused}).compute;
  };
  const double none = step(Recompute::kNone), op = step(Recompute::kOp), full = step(Recompute::kFull);
  CHECK(none < op);
  CHECK(op < full);
  // Op reruns every elementwise op full does and a third of its matmul FLOPs (k, o and up, of the
  // seven linears and attention), so it adds more than that share of what full adds.
  const double share = static_cast<double>(RecomputeFlops(g, RecomputeRule(g, Recompute::kOp))) /
                       static_cast<double>(RecomputeFlops(g, RecomputeRule(g, Recompute::kFull)));
  CHECK(share > 0.3);
  CHECK(share < 0.4);
  CHECK(op - none > share * (full - none));
}

TEST_CASE("recompute op: the tensor-parallel collectives a rerun block repeats") {
  // Every block reruns, so each row-parallel linear's collective reruns too, whether its GEMM's
  // output was kept or not; under --sp the reduce-scatter after it is on the policy's list and kept,
  // so only the all-gather, half the pair's volume, reruns. full reruns both.
  const LayerGraph g = testing::ResolvedGraph(ResolveModel("llama-3-8b"), {.seq = 2048});
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const uint64_t params = CountParams(g).trainable;
  auto comm = [&](Recompute r, bool sp) {
    Settings s = Train(r, 2, sp);
    s.batch = s.micro_batch = 1;
    return TrainingStep(g, s, h100, 989.5e12, 0.785, params, {.kernels = Kernels::kFused}).tp_comm;
  };
  CHECK(comm(Recompute::kOp, true) - comm(Recompute::kNone, true) ==
        doctest::Approx((comm(Recompute::kFull, true) - comm(Recompute::kNone, true)) / 2));
  CHECK(comm(Recompute::kOp, false) == doctest::Approx(comm(Recompute::kFull, false)));
}

TEST_CASE("recompute op: the step holds the kept outputs until each block's backward") {
  // At the loss every block holds its input and the kept outputs: op's live activations exceed
  // full's by the kept outputs of 32 blocks, as the ledger's do.
  auto at_loss = [](Recompute r) {
    const ModelSpec spec = ResolveModel("llama-3-8b");
    const Settings s = ResolveSettings(Train(r), spec);
    const MemoryModel m = testing::MemoryOf(spec, s);
    const StepTimeline t = TrainingTimeline(m, s, TrainingMemory(s, m), true);
    for (const StepEvent& e : t.events) {
      if (e.node == "loss") return e.live[LiveCategory::kActivations];
    }
    FAIL("no loss event");
    return uint64_t{0};
  };
  CHECK(at_loss(Recompute::kOp) - at_loss(Recompute::kFull) == 32ULL * 2048 * kKeptPerToken);

  // The walk ends with nothing saved: every kept output was handed to the backward or freed.
  const ModelSpec spec = ResolveModel("llama-3-8b");
  const Settings s = ResolveSettings(Train(Recompute::kOp), spec);
  const MemoryModel m = testing::MemoryOf(spec, s);
  const StepTimeline t = TrainingTimeline(m, s, TrainingMemory(s, m), true);
  CHECK(t.events.back().live[LiveCategory::kActivations] == 0);
}

TEST_CASE("recompute op: a model torchtitan does not build gets the policy with a warning") {
  const testing::TallyRun bert = testing::RunTally(
      {"memory", TALLY_TEST_DATA "/hf/bert-base-uncased.json", "--mode", "train", "--recompute", "op", "--seq", "256"});
  CHECK(bert.code == 0);
  CHECK(bert.err.find("--recompute op: torchtitan's per-op policy, on an encoder, which torchtitan does not build") !=
        std::string::npos);
  const testing::TallyRun llama =
      testing::RunTally({"memory", "llama-3-8b", "--mode", "train", "--recompute", "op", "--seq", "256"});
  CHECK(llama.code == 0);
  CHECK(llama.err.find("--recompute op") == std::string::npos);
}

}  // namespace
}  // namespace tally
