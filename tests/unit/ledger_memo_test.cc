// LedgerMemo (estimate/memory.h): the ledgers' parts memoized by the settings each reads answer
// exactly what the ledgers' functions answer without it, whatever order the settings come in, and
// keep an error an error.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/resolve.h"
#include "estimate/memory.h"
#include "unit/test_util.h"

namespace tally {
namespace {

// Settings as the CLI makes them: the policy's dtypes, `grad_accum` micro-batches a step.
Settings Point(Settings s, uint64_t grad_accum) {
  s.dtypes = PolicyDtypes(s.precision);
  s.batch = s.micro_batch * grad_accum;
  s.gpus = s.tp * s.pp * s.ep;
  return s;
}

// A grid over what the memo's keys read and what they do not (micro-batch, ZeRO, devices).
std::vector<Settings> Grid(bool moe) {
  std::vector<Settings> out;
  for (uint64_t pp : {1u, 2u, 4u}) {
    for (uint64_t tp : {1u, 2u}) {
      for (Precision p : {Precision::kMixedBf16, Precision::kFp32, Precision::kAmpBf16, Precision::kFp8}) {
        for (Optimizer o : {Optimizer::kAdamw, Optimizer::kAdafactor, Optimizer::kSgd}) {
          for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull, Recompute::kOp}) {
            for (uint64_t mb : {1u, 3u}) {
              for (uint64_t ga : {1u, 2u, 8u}) {
                Settings s{.micro_batch = mb, .precision = p, .optimizer = o, .recompute = r, .tp = tp, .pp = pp};
                s.ep = moe && ga == 2 ? 2 : 1;
                s.zero = ga % 4;
                s.quant = ga == 8 ? Quant::kInt4 : Quant::kNone;
                out.push_back(Point(s, ga));
              }
            }
          }
        }
      }
    }
  }
  return out;
}

TEST_CASE("ledger memo: training and inference ledgers equal the unmemoized ones at every point, twice over") {
  // The memo's activations take LinearActivations' form where it holds (--tp 1, --cp 1): these
  // models save every class of tensor (dropout masks: GPT-2; max-pool indices and fp32 tensors:
  // AlexNet; autocast copies under amp-bf16) and one or more distinct blocks (Llama 4 Maverick: two).
  for (const char* name :
       {"llama-2-7b", "mixtral-8x7b", "gemma-2-2b", "deepseek-v2-lite", "gpt2-small", "alexnet", "llama-4-maverick"}) {
    CAPTURE(name);
    const ModelSpec spec = ResolveModel(name);
    const bool transformer = spec.family == Family::kTransformer;
    for (uint64_t lora : {0u, 8u}) {
      CAPTURE(lora);
      if (lora > 0 && !transformer) continue;
      const MemoryModel model =
          testing::MemoryOf(spec, transformer ? Settings{.seq = 256, .lora_rank = lora} : Settings{});
      const std::vector<Settings> grid = Grid(spec.transformer.n_experts > 0);
      LedgerMemo memo;
      // Twice: the second pass answers from the memo what the first computed.
      for (int pass = 0; pass < 2; ++pass) {
        for (const Settings& s : grid) {
          CAPTURE(s.pp);
          CAPTURE(s.tp);
          CAPTURE(s.micro_batch);
          CHECK(TrainingMemory(s, model, &memo) == TrainingMemory(s, model));
          CHECK(InferenceMemory(spec, s, model, s.batch, &memo) == InferenceMemory(spec, s, model, s.batch));
        }
      }
    }
  }
}

TEST_CASE("ledger memo: the linear activations answer at --tp 1 --cp 1, as TrainingActivations does") {
  for (const char* name : {"llama-2-7b", "gpt2-small", "alexnet", "llama-4-maverick", "gemma-3-1b"}) {
    CAPTURE(name);
    const ModelSpec spec = ResolveModel(name);
    const MemoryModel model =
        testing::MemoryOf(spec, spec.family == Family::kTransformer ? Settings{.seq = 300} : Settings{});
    const LinearActivations linear(model);
    for (const Settings& s : Grid(false)) {
      const ActivationSettings a = ActivationSettingsOf(s);
      for (uint64_t stage = 0; stage < s.pp; ++stage) {
        const std::optional<ActivationMemory> got = linear.At(model, a, stage);
        CHECK(got.has_value() == (s.tp == 1));
        if (got) CHECK(*got == TrainingActivations(model, a, stage));
      }
    }
  }
}

TEST_CASE("ledger memo: an error is not kept, and is thrown again") {
  // A graph whose training memory is refused (MemoryModel::training_refused): asked twice through one
  // memo, it refuses twice.
  const ModelSpec spec = ResolveModel("gpt2-small");
  MemoryModel model = testing::MemoryOf(spec, {.seq = 64});
  model.training_refused = "refused for the test";
  LedgerMemo memo;
  const Settings s = Point({}, 1);
  CHECK_THROWS_WITH_AS(TrainingMemory(s, model, &memo), "tally: error: refused for the test", InputError);
  CHECK_THROWS_WITH_AS(TrainingMemory(s, model, &memo), "tally: error: refused for the test", InputError);
}

}  // namespace
}  // namespace tally
