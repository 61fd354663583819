// tally time through the command line: flags that would give an impossible number are refused,
// naming the flag (issue 20).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "unit/run_tally.h"

namespace tally {
namespace {

using testing::CheckRefused;
using testing::RunRaw;
using testing::TallyRun;

const std::vector<std::string> kTime = {"time", "gpt2-small", "--hardware", "h100-sxm"};

std::vector<std::string> With(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace

TEST_CASE("time command: flags that would give an impossible number are refused, naming the flag") {
  // 1e300 tokens x 6 x 124M parameters overflows a double: FLOPs inf, MFU NaN before.
  CheckRefused(With(kTime, {"--tokens", "1e300"}),
               "tally: error: --tokens: out of range: the FLOPs in all would be infinite");
  CheckRefused(With(kTime, {"--mfu", "1e-320"}),
               "tally: error: --mfu: '1e-320' is not a ratio in [1e-6, 1], such as 0.4");
  CheckRefused(With(kTime, {"--tokens", "5e-324", "--format", "json"}),
               "tally: error: --tokens: '5e-324' is not at least 1 token, such as 2T, 300B or 1.5e12");
  // gpt2-small: about 2.2 us of one H100 per token at MFU 0.4, so 1e30 tokens in 8.64 s need
  // ~2.5e23 devices, past 2^63 (the conversion to an integer was undefined behaviour).
  CheckRefused(With(kTime, {"--tokens", "1e30", "--days", "0.0001"}),
               "tally: error: --tokens: 1e+30 tokens in 8.64 s need more than 2^63 devices");
  // 1 PFLOP/s is above the H100 SXM's dense bf16 peak of 989.5 TFLOP/s: an MFU of 1.01.
  CheckRefused(With(kTime, {"--achieved", "1P", "--tokens", "1e9"}),
               "tally: error: --achieved: 1e+15 FLOP/s is above the device's dense peak of 9.895e+14 FLOP/s");
}

TEST_CASE("time command: one token in a day needs one device, not zero") {
  const TallyRun r = RunRaw(With(kTime, {"--tokens", "1", "--days", "1", "--get", "time.gpus"}));
  CHECK(r.code == 0);
  CHECK(r.out == "1\n");
}

}  // namespace tally

namespace tally {
namespace {

TEST_CASE("time command: the weight-only quantized GEMMs' kernel is named, with its bandwidth utilization") {
  const std::vector<std::string> infer = {"time", "llama-2-7b", "--mode", "infer", "--hardware", "h200"};
  // Marlin by default: the stored bytes at the H200's measured 0.879 (configs/hardware/h200.yaml).
  nlohmann::json t = testing::RunJson(With(infer, {"--quant", "int4"}))["time"];
  CHECK(t["decode"]["dequant_kernel"] == "marlin");
  CHECK(t["decode"]["dequant_mbu"].get<double>() == doctest::Approx(0.879));
  // tinygemm: 0.484 of it (estimate/kernel_costs.h), and a slower step (the kernels' floors, 1 ms of
  // Marlin's 1.9, do not change).
  const nlohmann::json tiny =
      testing::RunJson(With(infer, {"--quant", "int4", "--dequant-kernel", "tinygemm"}))["time"];
  CHECK(tiny["decode"]["dequant_kernel"] == "tinygemm");
  CHECK(tiny["decode"]["dequant_mbu"].get<double>() == doctest::Approx(0.879 * 0.484));
  CHECK(tiny["tpot_seconds"].get<double>() > 1.3 * t["tpot_seconds"].get<double>());
  // No weight-only weights, no key: bf16, and fp8 (W8A8 on fp8 tensor cores).
  for (const char* quant : {"none", "fp8"}) {
    CAPTURE(quant);
    t = testing::RunJson(With(infer, {"--quant", quant}))["time"];
    CHECK_FALSE(t["decode"].contains("dequant_kernel"));
  }
  // Asked for where nothing is weight-only, the kernel is said to be ignored, not silently dropped.
  t = testing::RunJson(With(infer, {"--dequant-kernel", "tinygemm"}));
  CHECK(t["notes"].dump().find("--dequant-kernel is ignored: 'llama-2-7b' has no weight-only quantized weights") !=
        std::string::npos);
  CheckRefused(With(infer, {"--quant", "int8", "--dequant-kernel", "tinygemm"}),
               "tally: error: --dequant-kernel: tinygemm runs 4-bit weights; 'llama-2-7b' stores 8-bit weights "
               "(bitsandbytes int8, an fp32 scale per row); use marlin");
  CheckRefused(With(infer, {"--dequant-kernel", "marlinn"}),
               "tally: error: --dequant-kernel: unknown value 'marlinn' (did you mean 'marlin'?); use one of marlin, "
               "tinygemm");
}

}  // namespace
}  // namespace tally

namespace tally {

TEST_CASE("time command: --precision tf32 keeps fp32 tensors and runs the GEMMs at the TF32 tensor-core peak") {
  // nanoGPT's GPT-2 124M count, 854,438,400 FLOPs a token at seq 1024, on 8 A100 at MFU 0.3 of the
  // TF32 dense peak, 156 TFLOP/s (A100 datasheet; 19.5 without TF32): 300e9 tokens take
  // 854,438,400 · 300e9 / (8 · 156e12 · 0.3) s.
  const nlohmann::json tf32 =
      testing::RunJson({"time", "gpt2-small", "--hardware", "a100-80gb", "--gpus", "8", "--precision", "tf32", "--mfu",
                        "0.3", "--tokens", "300e9", "--seq", "1024"})["time"];
  CHECK(tf32["peak_flop_per_s"].get<double>() == 156e12);
  CHECK(tf32["train_seconds"].get<double>() == doctest::Approx(854'438'400.0 * 300e9 / (8 * 156e12 * 0.3)));
  // Modelled, its GEMMs run at the catalog's tf32 efficiency (PyTorch's CUDA notes: a 10240³ matmul in
  // 0.016 s on GA100, 134.2 of 156 TFLOP/s, 0.86).
  const nlohmann::json step = testing::RunJson(
      {"time", "gpt2-small", "--hardware", "a100-80gb", "--precision", "tf32", "--tokens", "1e9"})["time"];
  CHECK(step["gemm_efficiency"].get<double>() == 0.86);
  // Its tensors are fp32's: the memory is the fp32 policy's to the byte.
  const std::vector<std::string> memory = {"memory", "gpt2-small", "--mode", "train", "--precision"};
  std::vector<std::string> a = memory, b = memory;
  a.push_back("tf32");
  b.push_back("fp32");
  CHECK(testing::RunJson(a)["memory"]["train"] == testing::RunJson(b)["memory"]["train"]);
}

}  // namespace tally

namespace tally {

TEST_CASE("time command: --fp8-recipe prices each fp8 linear's casts as Transformer Engine's recipe runs them") {
  // GPT-2 small in fp8 on one H100, micro-batch 8 of 1024 tokens (8,192). Each block's 4 linears cast
  // their inputs (qkv, out and fc take 768 wide, proj 3,072: 5,376 a token) and, in the backward,
  // their output gradients (2,304 + 768 + 3,072 + 768 = 6,912): 12,288 elements a token, 12 blocks.
  // Current scaling (tensorwise) reads each once more for its amax than delayed scaling does: 2 bytes
  // an element and two more kernels a cast, at the copy bandwidth (0.85 of 3.35 TB/s). MXFP8 adds
  // its E8M0 scales to delayed's bytes, one per 32 values each way: 2 / 32 bytes an element. The
  // power limit apart: the casts lower the GEMMs' share of the step, and with it the clock's loss.
  const auto step = [](const char* recipe) {
    return testing::RunJson({"time", "gpt2-small", "--hardware", "h100-sxm", "--gpus", "1", "--micro-batch", "8",
                             "--seq", "1024", "--tokens", "1e9", "--precision", "fp8", "--kernels", "fused",
                             "--fp8-recipe", recipe, "--no-power-limit"})["time"];
  };
  const nlohmann::json tensorwise = step("tensorwise"), delayed = step("delayed"), mxfp8 = step("mxfp8");
  const double elements = 8192.0 * 12288 * 12, copy = 3.35e12 * 0.85;
  CHECK(tensorwise["breakdown"]["compute"].get<double>() - delayed["breakdown"]["compute"].get<double>() ==
        doctest::Approx(2 * elements / copy));
  CHECK(tensorwise["compute"]["kernels"].get<double>() - delayed["compute"]["kernels"].get<double>() == 2 * 8 * 12);
  CHECK(mxfp8["breakdown"]["compute"].get<double>() - delayed["breakdown"]["compute"].get<double>() ==
        doctest::Approx(2.0 / 32 * elements / copy));
  // Without --precision fp8 no linear casts, and it says so.
  const testing::TallyRun bf16 =
      testing::RunTally({"time", "gpt2-small", "--hardware", "h100-sxm", "--tokens", "1e9", "--fp8-recipe", "delayed"});
  CHECK(bf16.err.find("--fp8-recipe delayed changes nothing without --precision fp8") != std::string::npos);
  CHECK(testing::RunTally({"time", "gpt2-small", "--fp8-recipe", "nvfp4"}).code == 2);
}

}  // namespace tally

namespace tally {

TEST_CASE("time command: the modelled step's own flags say so where no step is modelled") {
  // --mfu sets the rate for the whole step: the overlap, dispatch, imbalance and fp8 recipe flags
  // shape only the step modelled from its parts, so they are named, not silently dropped.
  const testing::TallyRun mfu =
      testing::RunTally({"time", "mixtral-8x7b", "--hardware", "h100-sxm", "--gpus", "16", "--ep", "8", "--tokens",
                         "1e9", "--mfu", "0.4", "--moe-imbalance", "2", "--tp-overlap"});
  CHECK(mfu.code == 0);
  CHECK(mfu.err.find("--tp-overlap, --moe-imbalance: the step is not modelled from its parts here (--mfu or "
                     "--achieved sets the rate), so they change nothing") != std::string::npos);
  // A device without the dtype's GEMM efficiency (the MI300X has none for tf32) falls back the same way.
  const testing::TallyRun flat = testing::RunTally({"time", "llama-3-8b", "--hardware", "mi300x", "--precision", "tf32",
                                                    "--tokens", "1e9", "--fp8-recipe", "mxfp8"});
  CHECK(flat.err.find("--fp8-recipe: the step is not modelled from its parts here (the device gives no GEMM "
                      "efficiency for tf32), so it changes nothing") != std::string::npos);
}

}  // namespace tally

namespace tally {

TEST_CASE("time command: --lora-dtype fp32 prices PEFT's fp32 adapters: their casts, and their GEMMs in fp32") {
  // GPT-2 small in bf16 on one H100, 1,024 tokens, rank 8 on qkv (768 -> 2,304) and out (768 -> 768)
  // in 12 blocks. Around each adapter PEFT's Linear.forward moves, per token, 6 bytes an input and 24
  // an output forward and 12 and 20 backward with fp32 adapters, 10 an output forward and 6 an input
  // and 4 an output backward in bf16 (LoraTraffic): 12 x 768 + 30 x 2,304 more for qkv and
  // 12 x 768 + 30 x 768 for out, at the copy bandwidth (0.85 of 3.35 TB/s); 9 kernels against 4.
  const auto step = [](const char* dtype) {
    return testing::RunJson({"time", "gpt2-small", "--hardware", "h100-sxm", "--precision", "bf16", "--batch", "1",
                             "--seq", "1024", "--tokens", "1e9", "--lora", "8", "--lora-dtype", dtype})["time"];
  };
  const nlohmann::json fp32 = step("fp32"), base = step("base");
  const double casts = 1024.0 * 12 * (12 * 768 + 30 * 2304 + 12 * 768 + 30 * 768) / (3.35e12 * 0.85);
  CHECK(fp32["compute"]["memory_bound"].get<double>() - base["compute"]["memory_bound"].get<double>() ==
        doctest::Approx(casts));
  CHECK(fp32["compute"]["kernels"].get<double>() - base["compute"]["kernels"].get<double>() == 2 * 5 * 12);
  // The adapters' GEMMs at fp32's CUDA-core rate (67 of 989.5 TFLOP/s), not bf16's: the compute
  // grows by well over the casts (rank-8 GEMMs over 1,024 tokens, 1.0 ms more here).
  CHECK(fp32["breakdown"]["compute"].get<double>() - base["breakdown"]["compute"].get<double>() > 1.5 * casts);
  // The fp32 policy has nothing to cast: the flag changes nothing.
  const auto fp32_policy = [](const char* dtype) {
    return testing::RunJson({"time", "gpt2-small", "--hardware", "h100-sxm", "--precision", "fp32", "--tokens", "1e9",
                             "--lora", "8", "--lora-dtype", dtype})["time"]["step_seconds"];
  };
  CHECK(fp32_policy("fp32") == fp32_policy("base"));
  // Without --lora the adapters' flags are named, not dropped.
  const testing::TallyRun no_adapters =
      testing::RunTally({"time", "gpt2-small", "--hardware", "h100-sxm", "--tokens", "1e9", "--lora-dtype", "base"});
  CHECK(no_adapters.code == 0);
  CHECK(no_adapters.err.find("--lora-dtype: no --lora R, so no adapters: it changes nothing") != std::string::npos);
  testing::CheckRefused(
      {"time", "gpt2-small", "--lora", "8", "--lora-dtype", "fp16"},
      "tally: error: --lora-dtype: unknown value 'fp16' (did you mean 'fp32'?); use one of fp32, base");
}

TEST_CASE("time command: a LoRA adapter's scaling and add, in the weights' dtype") {
  // --lora-dtype base on GPT-2 small in bf16, as above: against the same run without adapters the
  // non-GEMM time grows by PEFT's scaling and add, 10 bytes an output forward, 6 an input and 4 an
  // output backward: 6 x 1,536 + 14 x 3,072 a token and block.
  const nlohmann::json lora =
      testing::RunJson({"time", "gpt2-small", "--hardware", "h100-sxm", "--precision", "bf16", "--batch", "1", "--seq",
                        "1024", "--tokens", "1e9", "--lora", "8", "--lora-dtype", "base"})["time"];
  const nlohmann::json none = testing::RunJson({"time", "gpt2-small", "--hardware", "h100-sxm", "--precision", "bf16",
                                                "--batch", "1", "--seq", "1024", "--tokens", "1e9"})["time"];
  CHECK(lora["compute"]["memory_bound"].get<double>() - none["compute"]["memory_bound"].get<double>() ==
        doctest::Approx(1024.0 * 12 * (6 * 1536 + 14 * 3072) / (3.35e12 * 0.85)));
}

}  // namespace tally

namespace tally {

TEST_CASE("time command: fp32 adapters on a device with no fp32 GEMM rate are named, not silently fast") {
  // mi355x lists no gemm_efficiency.fp32: PEFT's fp32 adapters run at the bf16 rate there, said so.
  const testing::TallyRun r = testing::RunTally(
      {"time", "llama-3-8b", "--hardware", "mi355x", "--tokens", "1e9", "--precision", "bf16", "--lora", "16"});
  CHECK(r.code == 0);
  CHECK(r.err.find("--lora-dtype fp32: mi355x gives no fp32 GEMM rate") != std::string::npos);
  // With the adapters in bf16 there is nothing to say.
  CHECK(testing::RunTally({"time", "llama-3-8b", "--hardware", "mi355x", "--tokens", "1e9", "--precision", "bf16",
                           "--lora", "16", "--lora-dtype", "base"})
            .err.find("--lora-dtype fp32") == std::string::npos);
}

}  // namespace tally
