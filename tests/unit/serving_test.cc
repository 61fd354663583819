// Serving: chunked prefill, paged KV, the claimed memory fraction, fit --mode infer's concurrency and
// KV tokens, and the decode crossover, against hand derivations.
#include "estimate/serving.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/hardware.h"
#include "config/load_config.h"
#include "unit/run_tally.h"

namespace tally {
namespace {

using testing::RunJson;

// The case: Mixtral-8x7B served on two 80 GiB devices, tp 2, int8 weights, an fp8 KV cache,
// 32,768-token sequences.
const std::vector<std::string> kMixtral = {
    "fit", "mixtral-8x7b", "--mode", "infer",      "--memory", "80GiB", "--gpus", "2", "--tp",
    "2",   "--quant",      "int8",   "--kv-dtype", "fp8",      "--seq", "32768"};

TEST_CASE("serving: fit --mode infer holds Mixtral-8x7B's sequences as vLLM allocates them") {
  const nlohmann::json j = RunJson(kMixtral);
  // The defaults stated (vLLM's): pages of 16 tokens, 0.9 of the memory, 8192 tokens per pass on an
  // 80 GiB device.
  CHECK(j["settings"]["kv_block"] == 16);
  CHECK(j["settings"]["max_batched_tokens"] == 8192);
  // Limit: floor(0.9 x 80 GiB) = floor(0.9 x 85,899,345,920) = 77,309,411,328 B.
  CHECK(j["fit"]["limit"] == 77'309'411'328ULL);
  // Weights per device, from the published shapes (d 4096, 32 blocks, 32 query and 8 K/V heads of
  // 128, 8 experts of d_ff 14336, vocabulary 32000) under LLM.int8 (Dettmers et al. 2022: one byte
  // per weight + an fp32 scale per output row), split over tp 2:
  //   attention q, k, v, o: (4096·4096 + 4·4096) + 2 (4096·1024 + 4·1024) + (4096·4096 + 4·4096)
  //     = 41,984,000 / 2 = 20,992,000
  //   experts: 8 (2 (4096·14336 + 4·14336) + 14336·4096 + 4·4096) = 1,410,334,720 / 2 = 705,167,360
  //   router 4096·8 + 4·8 = 32,800 (whole on each rank), two RMSNorms 2·4096·2 B = 16,384
  //   => 726,208,544 per block x 32 = 23,238,673,408
  //   embedding and head vocabulary-parallel bf16: 2 x 32000·4096·2 / 2 = 262,144,000; final norm 8,192
  //   => 23,500,825,600 B.
  CHECK(j["memory"]["infer"]["weights"] == 23'500'825'600ULL);
  // KV per sequence per device: 32 layers x (2 x 8 x 128 / tp 2) elements x 32,768 tokens (2,048
  // whole pages) x 1 byte (fp8) = 1,073,741,824 B.
  // Activations under chunked prefill: one pass of 8,192 tokens (Sarathi-Serve; vLLM), the largest
  // live pair being the two routed experts' d_ff outputs, 2 x (2 x 14,336) elements per token, each
  // expert's d_ff split over the tp 2 ranks (vLLM's fused MoE), at 2 bytes:
  // 2 · 28,672 / 2 · 8,192 · 2 = 469,762,048 B, + fp32 logits of one position per sequence,
  // 32,000 · 4 = 128,000 B each.
  // The runtime lives inside the claimed memory too: the CUDA context, cuBLAS's workspace and, on
  // two devices, NCCL's buffers, 685 + 32 + 256 MiB = 1,020,264,448 B (estimate/defaults.h).
  // b (1,073,741,824 + 128,000) <= 77,309,411,328 - 23,500,825,600 - 469,762,048 - 1,020,264,448
  //   = 52,318,559,232 => b = 48 (52,318,559,232 / 1,073,869,824 = 48.7); the issue expects 45-58.
  CHECK(j["fit"]["batch"] == 48);
  CHECK(j["memory"]["infer"]["kv_cache"] == 48 * 1'073'741'824ULL);
  CHECK(j["memory"]["infer"]["activations"] == 469'762'048ULL + 48 * 128'000ULL);
  // KV tokens: free = 52,318,559,232 - 48 · 128,000 = 52,312,415,232 B; a page is 16 tokens x 32
  // layers x 1,024 B = 524,288 B; 99,778 whole pages = 1,596,448 tokens.
  CHECK(j["fit"]["kv_pages"] == 99'778);
  CHECK(j["fit"]["kv_tokens"] == 1'596'448);
  // Whole-batch prefill: a sequence's 32,768 tokens at once hold 2 · 28,672 / 2 · 32,768 · 2 =
  // 1,879,048,192 B of activations beside its KV and logits, 2,952,918,016 B in all, in
  // 85,899,345,920 - 23,500,825,600 - 1,020,264,448 = 61,378,255,872 B: 20 sequences (20.8).
  std::vector<std::string> whole = kMixtral;
  whole.insert(whole.end(), {"--max-batched-tokens", "1000000000", "--gpu-memory-utilization", "1"});
  CHECK(RunJson(whole)["fit"]["batch"] == 20);
}

TEST_CASE("serving: on a named device, TPOT and tokens/s at the concurrency found") {
  std::vector<std::string> args = kMixtral;
  args[4] = "--hardware";
  args[5] = "h100-sxm";
  const nlohmann::json j = RunJson(args);
  // Limit: floor(0.9 x 85,899,345,920) = 77,309,411,328 B, which holds the runtime too: the CUDA
  // context, cuBLAS's workspace and, on two devices, NCCL's buffers (685 + 32 + 256 MiB =
  // 1,020,264,448 B; estimate/defaults.h). The same arithmetic as above with 2,147,483,648 -
  // 1,020,264,448 B more: b <= 51,848,797,184 / 1,073,869,824 = 48.28 => 48.
  CHECK(j["fit"]["limit"] == 77'309'411'328ULL);
  CHECK(j["fit"]["batch"] == 48);
  // The step reads every weight but the embedding (one row per token; 48 tokens route to nearly all
  // experts: 1 - 0.75^48 = 1 - 1e-6) and every sequence's cache: 23,500,825,600 - 131,072,000 +
  // 48 · 1,073,741,824 = 74,909,361,152 B at 3.35e12 B/s x MBU 0.8 = 27.95 ms; activations and
  // all-reduces add under 1%.
  const double tpot = j["fit"]["tpot_seconds"];
  CHECK(tpot == doctest::Approx(74'909'361'152.0 / (3.35e12 * 0.8)).epsilon(0.01));
  CHECK(j["fit"]["tokens_per_second"].get<double>() == doctest::Approx(48 / tpot));
}

TEST_CASE("serving: the KV cache in whole pages, per layer kind") {
  // Gemma-2-9B: 21 full and 21 sliding (4,096) layers, 8 K/V heads of 256: 2 · 8 · 256 = 4,096
  // elements per token per layer, bf16. At 5,000 tokens in pages of 16: full layers 5,008 slots,
  // sliding layers min(5,000, 4,096) = 4,096 slots (256 pages):
  // 21 · 4,096 · 2 · (5,008 + 4,096) = 1,566,179,328 B; contiguous: 21 · 4,096 · 2 · 9,096.
  const std::vector<std::string> base = {"memory", "gemma-2-9b", "--mode", "infer", "--seq", "5000"};
  std::vector<std::string> paged = base;
  paged.insert(paged.end(), {"--kv-block", "16"});
  CHECK(RunJson(paged)["memory"]["infer"]["kv_cache"] == 1'566'179'328ULL);
  CHECK(RunJson(base)["memory"]["infer"]["kv_cache"] == 21ULL * 4096 * 2 * 9096);
}

TEST_CASE("serving: a token budget bounds activations whatever the concurrency") {
  // Llama-2-7B, 4 sequences of 4,096 tokens in passes of 2,048 tokens hold the live pair of one
  // 2,048-token sequence, with logits for 4 positions instead of 1 (32,000 x 4 B each).
  const uint64_t one =
      RunJson({"memory", "llama-2-7b", "--mode", "infer", "--seq", "2048"})["memory"]["infer"]["activations"];
  const uint64_t four = RunJson({"memory", "llama-2-7b", "--mode", "infer", "--seq", "4096", "--batch", "4",
                                 "--max-batched-tokens", "2048"})["memory"]["infer"]["activations"];
  CHECK(four == one + 3 * 32'000 * 4);
  // Concurrency past the budget samples at most one token per budgeted position.
  const uint64_t many = RunJson({"memory", "llama-2-7b", "--mode", "infer", "--seq", "4096", "--batch", "3000",
                                 "--max-batched-tokens", "2048"})["memory"]["infer"]["activations"];
  CHECK(many == one + 2047 * 32'000 * 4);
  const testing::TallyRun mlp =
      testing::RunTally({"memory", "seed-mlp", "--mode", "infer", "--max-batched-tokens", "2048"});
  CHECK(mlp.code == 2);
  CHECK(mlp.err ==
        "tally: error: --max-batched-tokens: chunked prefill splits a decoder's tokens; 'seed-mlp' is "
        "sequential\n");
  const testing::TallyRun eager = testing::RunTally(
      {"memory", "llama-2-7b", "--mode", "infer", "--attention", "eager", "--max-batched-tokens", "2048"});
  CHECK(eager.code == 2);
  CHECK(eager.err ==
        "tally: error: --max-batched-tokens: chunked prefill runs fused attention, which never holds the s x s "
        "scores; drop --attention eager\n");
}

TEST_CASE("serving: --gpu-memory-utilization claims a fraction of a named device, less --reserve") {
  // floor(0.5 x 85,899,345,920) = 42,949,672,960, and 1 GiB less with --reserve 1GiB.
  const nlohmann::json j =
      RunJson({"memory", "llama-2-7b", "--hardware", "h100-sxm", "--gpu-memory-utilization", "0.5"});
  CHECK(j["memory"]["limit"] == 42'949'672'960ULL);
  const nlohmann::json kept = RunJson(
      {"memory", "llama-2-7b", "--hardware", "h100-sxm", "--gpu-memory-utilization", "0.5", "--reserve", "1GiB"});
  CHECK(kept["memory"]["limit"] == 42'949'672'960ULL - (1ULL << 30));
  CHECK(testing::RunTally({"memory", "llama-2-7b", "--gpu-memory-utilization", "1.5"}).code == 2);
}

TEST_CASE("serving: vLLM's default token budget by device") {
  // vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults (OpenAI server): 8192 from 70 GiB, not on an A100.
  CHECK(VllmMaxBatchedTokens(uint64_t{80} << 30, "h100-sxm") == 8192);
  CHECK(VllmMaxBatchedTokens(uint64_t{80} << 30, "a100-80gb") == 2048);
  CHECK(VllmMaxBatchedTokens(uint64_t{48} << 30, "l40s") == 2048);
  CHECK(VllmMaxBatchedTokens(uint64_t{70} << 30, "") == 8192);
  CHECK(VllmMaxNumSeqs(uint64_t{80} << 30, "h100-sxm") == 1024);
  CHECK(VllmMaxNumSeqs(uint64_t{24} << 30, "l4") == 256);
}

TEST_CASE("serving: the decode crossover is where a batch sweep of the real cost turns") {
  // Mixtral-8x7B on H100, tp 2, bf16: the experts read grow as E (1 - (1 - k/E)^n), so the batch
  // from which compute time reaches memory time is searched, not extrapolated from batches 1 and 2.
  Evaluation ev(ResolveModel("mixtral-8x7b"));
  Settings s;
  s.mode = Mode::kInfer;
  s.gpus = s.tp = 2;
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const RooflineRates rates = InferenceRates(h100, s, 0.4, 0.8);
  const std::optional<uint64_t> b = DecodeComputeBoundBatch(ev, s, rates, 576, false);
  REQUIRE(b.has_value());
  const Roofline below = DecodeStep(ev, s, rates, *b - 1, 576);
  const Roofline at = DecodeStep(ev, s, rates, *b, 576);
  CHECK(below.compute_seconds < below.memory_seconds);
  CHECK(at.compute_seconds >= at.memory_seconds);
  // Two experts of eight per token: batch 1 reads 2 experts, batch 2 an expected 8 (1 - 0.75^2) =
  // 3.5, so the per-sequence memory slope falls as the batch grows and the linear extrapolation
  // from batches 1 and 2 (what time reported before) lands far later.
  const Roofline one = DecodeStep(ev, s, rates, 1, 576), two = DecodeStep(ev, s, rates, 2, 576);
  const double compute_slope = two.compute_seconds - one.compute_seconds;
  const double memory_slope = two.memory_seconds - one.memory_seconds;
  const double linear =
      (one.memory_seconds - memory_slope - (one.compute_seconds - compute_slope)) / (compute_slope - memory_slope);
  CHECK((memory_slope > compute_slope || linear > 2.0 * static_cast<double>(*b)));
}

TEST_CASE("serving: the issue's Mixtral case, int8 weights on two H100, turns compute-bound near 256") {
  // Issue 19's setting (tp 2, --quant int8, --kv-dtype fp8; the default 512 + 128 tokens, so the mean
  // context is 576). By hand, weights alone, per device: by batch 270 every expert is read (0.75^270 is
  // ~1e-34), so a step reads the 32 layers' attention (4096 x 10240), router (4096 x 8) and 8 experts
  // (3 x 4096 x 14336) at one byte, plus the bf16 head (32000 x 4096 x 2 B): 46,702,526,464 B / 2, at
  // 0.8 x 3.35 TB/s. Each token computes 2 x (attention + router + 2 experts) x 32 + 2 x head =
  // 25,497,174,016 FLOP / 2 at 0.4 x 989.5 TFLOP/s (W8A16 runs at the bf16 peak). Equal times at
  // n = 46,702,526,464 / 2.68e12 x 395.8e12 / 25,497,174,016 = 270.5. The GEMMs' activation reads and
  // writes (bf16, about 7.7 MB a token, 4.5% of the per-token compute in bytes) and the int8 scales
  // add memory time, so the searched batch lies a few percent above: near the 256 of the sweep.
  Evaluation ev(ResolveModel("mixtral-8x7b"));
  Settings s;
  s.mode = Mode::kInfer;
  s.gpus = s.tp = 2;
  s.quant = Quant::kInt8;
  s.kv_dtype = DType::kFp8E4m3;
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const RooflineRates rates = InferenceRates(h100, s, 0.4, 0.8);
  const std::optional<uint64_t> gemm = DecodeComputeBoundBatch(ev, s, rates, 576, true);
  REQUIRE(gemm.has_value());
  CHECK(*gemm > 270);
  CHECK(*gemm < 300);
}

TEST_CASE("serving: --quant fp8 runs the block matrices at the fp8 peak (W8A8), int8 at bf16 (W8A16)") {
  // H100 SXM dense fp8 1,978.9 TFLOP/s (whitepaper v1.04); LLM.int8 weights dequantize to bf16.
  Settings s;
  s.quant = Quant::kFp8;
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  CHECK(InferenceRates(h100, s, 0.4, 0.8).linear_peak == 1978.9e12);
  s.quant = Quant::kInt8;
  CHECK(InferenceRates(h100, s, 0.4, 0.8).linear_peak == 0.0);
  CHECK(InferenceRates(h100, s, 0.4, 0.8).peak == 989.5e12);
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST_CASE("serving: time --mode infer --layers gives each node's roofline, summing to the step's") {
  const nlohmann::json j = RunJson(
      {"time", "mixtral-8x7b", "--mode", "infer", "--hardware", "h100-sxm", "--gpus", "2", "--tp", "2", "--layers"});
  double compute = 0, memory = 0;
  bool experts_memory_bound = false;
  for (const nlohmann::json& row : j["layers"]) {
    compute += row["decode"]["compute_seconds"].get<double>();
    memory += row["decode"]["memory_seconds"].get<double>();
    if (row["path"].get<std::string>().ends_with("experts.up"))
      experts_memory_bound = row["decode"]["bound"] == "memory";
  }
  CHECK(compute == doctest::Approx(j["time"]["decode"]["compute_seconds"].get<double>()).epsilon(1e-12));
  CHECK(memory == doctest::Approx(j["time"]["decode"]["memory_seconds"].get<double>()).epsilon(1e-12));
  // Batch 1 reads two experts' weights for one token's GEMMs: far below the ridge point.
  CHECK(experts_memory_bound);
  const testing::TallyRun train = testing::RunTally({"time", "llama-2-7b", "--hardware", "h100-sxm", "--layers"});
  CHECK(train.code == 2);
  CHECK(train.err == "tally: error: --layers: time gives the roofline per node for inference; add --mode infer\n");
}

}  // namespace
}  // namespace tally
