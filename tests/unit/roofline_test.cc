// The inference roofline against hand derivations.
#include "estimate/roofline.h"

#include <doctest/doctest.h>

#include <map>

#include "config/hardware.h"
#include "estimate/flops.h"
#include "estimate/kernel_costs.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

// An inference forward of 32 tokens in bf16 over tp 2.
Settings InferTp2() {
  Settings s;
  s.mode = Mode::kInfer;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 32;
  s.gpus = s.tp = 2;
  return s;
}

TEST_CASE("roofline: past the K/V heads each rank computes its K/V replica in full") {
  // Multi-query attention (g = 1): d 64, 4 heads of 16, 32 tokens, no biases, tp = 2. The qkv
  // projection is 2 · 32 · 64 · (64 + 16 + 16) FLOPs; Q splits over both ranks, K and V do not:
  // per rank 2 · 32 · 64 · 64 / 2 + 2 · 32 · 64 · 32 = 131,072 + 131,072 (not 393,216 / 2).
  const std::string mqa =
      "family: transformer\nvocab_size: 100\ncontext_length: 32\nd_model: 64\nn_layers: 1\n"
      "n_heads: 4\nn_kv_heads: 1\nd_ff: 256\nbias: false\n";
  const Settings s = InferTp2();
  const ModelSpec spec = LoadModelText("mqa.yaml", mqa);
  LayerGraph g = ResolvedGraph(spec, s);
  std::erase_if(g.layers, [](const Layer& l) { return !l.path.ends_with("attn.qkv"); });
  REQUIRE(g.layers.size() == 1);
  const Roofline r = ForwardRoofline(g, spec, s, {.peak = 1e12, .mfu = 1, .bandwidth = 1e12, .mbu = 1});
  CHECK(r.flops == 262'144.0);
}

TEST_CASE("roofline: an elementwise op on tensor-parallel-split dims reads and writes 1/tp per rank") {
  // SwiGLU of f 256 over 32 tokens, bf16, tp 2: act(gate)·up lies between the column-parallel gate/up
  // and the row-parallel down, 32 · 256 / 2 elements a rank, read and written: 2 · 4,096 · 2 B =
  // 16,384 B. The RMSNorm before the MLP is on the residual stream, whole on each rank: 2 · 32 · 64
  // · 2 B = 8,192 B, and its weight of 64, 128 B.
  const std::string swiglu =
      "family: transformer\nvocab_size: 100\ncontext_length: 32\nd_model: 64\nn_layers: 1\n"
      "n_heads: 4\nd_ff: 256\nmlp: swiglu\nnorm: rmsnorm\nbias: false\n";
  const Settings s = InferTp2();
  const ModelSpec spec = LoadModelText("swiglu.yaml", swiglu);
  const LayerGraph g = ResolvedGraph(spec, s);
  const Roofline r =
      ForwardRoofline(g, spec, s, {.peak = 1e12, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 1e11});
  std::map<std::string, double> bytes;
  for (const NodeRoofline& n : r.nodes) bytes[n.path] = n.bytes;
  CHECK(bytes.at("blocks.0.mlp.act") == 16'384.0);
  CHECK(bytes.at("blocks.0.mlp_norm") == 8'192.0 + 128);
}

TEST_CASE("roofline: one linear layer by hand") {
  // 1000 -> 1000, no bias, batch 1, bf16: 2e6 FLOPs; 2e6 B of weights + 2,000 B in + 2,000 B out.
  ModelSpec spec =
      LoadModelText("one.yaml", "family: sequential\ninput: [1000]\nlayers: [{linear: {out: 1000, bias: false}}]\n");
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  Roofline r = ForwardRoofline(ResolvedGraph(spec, s), spec, s, {.peak = 1e12, .mfu = 1, .bandwidth = 1e9, .mbu = 1});
  CHECK(r.flops == 2e6);
  CHECK(r.bytes == 2'004'000);
  CHECK(r.seconds == doctest::Approx(2'004'000 / 1e9).scale(0));  // memory-bound: 2.004 ms against 2 us of compute
  CHECK(r.compute_seconds == doctest::Approx(2e-6).scale(0));
}

TEST_CASE("roofline: a 13B decode step on A100-40GB is bandwidth-bound at about weights / bandwidth") {
  ModelSpec spec = ResolveModel("llama-2-13b");
  const HardwareSpec a100 = ResolveHardware("a100-40gb");
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 1;
  s.context = 128;
  Roofline r =
      ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                      {.peak = *a100.Peak(GemmDType::kBf16), .mfu = 1, .bandwidth = a100.memory_bandwidth, .mbu = 1});
  const double weights = 2.0 * 13'015'864'320;  // fp16 weights, read once per step
  CHECK(r.memory_seconds > 20 * r.compute_seconds);
  // KV reads (2 · 40 · 40 · 128 · 2 B per token, 128 tokens) and activations add under 1%.
  CHECK(r.seconds / (weights / a100.memory_bandwidth) == doctest::Approx(1.0).epsilon(0.01));
}

TEST_CASE("roofline: tensor-parallel all-reduce per row-parallel linear") {
  // Llama-2-7B prefill of 8 tokens on tp = 2: 64 all-reduces (attention out and MLP down per block)
  // of 8 · 4096 · 2 bytes, each 2 · (2 - 1) / 2 of it over the link, plus NCCL's latency (NVIDIA/nccl,
  // src/graph/tuning.cc): at 64 KiB its low-latency protocol wins, 3.6 us + 2 ring steps x 0.47 us at a
  // quarter of the 100 GB/s (Simple: 8.4 + 2 x 3.4 us at the whole of it).
  ModelSpec spec = ResolveModel("llama-2-7b");
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 8;
  s.gpus = s.tp = 2;
  Roofline r = ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                               {.peak = 1e15, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 100e9});
  const double bytes = 8.0 * 4096 * 2;
  const double low_latency = 3.6e-6 + 2 * 0.47e-6 + bytes / 25e9, simple = 8.4e-6 + 2 * 3.4e-6 + bytes / 100e9;
  REQUIRE(low_latency < simple);
  CHECK(r.allreduce_seconds == doctest::Approx(64 * low_latency).scale(0));
}

// A two-block model (d 256, 4 heads, a GELU MLP of 1,024, no biases) decoding one token against 64
// cached ones at --quant QUANT: the blocks' four weight GEMMs, each its own kernel, repeated twice.
Roofline QuantizedGemms(Quant quant, const RooflineRates& rates, DequantKernel kernel = DequantKernel::kMarlin) {
  const ModelSpec spec = LoadModelText("tiny.yaml",
                                       "family: transformer\nvocab_size: 512\ncontext_length: 256\nd_model: 256\n"
                                       "n_layers: 2\nn_heads: 4\nd_ff: 1024\nmlp: gelu\nnorm: rmsnorm\n"
                                       "bias: false\nposition: rope\ntied_embeddings: false\n");
  Settings s;
  s.mode = Mode::kInfer;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 1;
  s.context = 64;
  s.quant = quant;
  s.dequant_kernel = kernel;
  LayerGraph g = ResolvedGraph(spec, s);
  std::erase_if(g.layers, [](const Layer& l) { return l.kind != LayerKind::kLinear || l.block_type < 0; });
  REQUIRE(g.layers.size() == 4);
  return ForwardRoofline(g, spec, s, rates);
}

TEST_CASE("roofline: a weight-only int4 decode step's GEMMs by hand, as Marlin and as tinygemm run them") {
  // GPTQ 4-bit, groups of 128 (--quant int4): in x out / 2 B of packed values, groups x out / 2 of
  // zeros, groups x out x 2 of fp16 scales, in x 4 of g_idx.
  //   qkv  256 -> 768:  98,304 + 768 + 3,072 + 3 x 1,024 = 105,216 B (q_proj, k_proj and v_proj, each
  //                     its own g_idx); in and out 2 (256 + 768) = 2,048 B
  //   out  256 -> 256:  32,768 + 256 + 1,024 + 1,024 =  35,072 B;                           1,024 B
  //   up   256 -> 1024: 131,072 + 1,024 + 4,096 + 1,024 = 137,216 B;                        2,560 B
  //   down 1024 -> 256: 131,072 + 1,024 + 4,096 + 4,096 = 140,288 B (8 groups);             2,560 B
  // Twice (two blocks): 835,584 B of stored weights, 16,384 B of activations; 2 x 2 x 786,432 FLOPs.
  const double weights = 2 * (105'216.0 + 35'072 + 137'216 + 140'288), acts = 16'384;
  RooflineRates r{.peak = 1e15, .mfu = 1, .bandwidth = 1e12, .mbu = 0.8, .floors = kGpuKernelFloors};
  const Roofline marlin = QuantizedGemms(Quant::kInt4, r);
  CHECK(marlin.bytes == weights + acts);
  CHECK(marlin.flops == 2 * 2 * 786'432.0);
  // Marlin: the stored bytes at the bf16 GEMMs' 0.8 of the bandwidth, and 8 kernels at 3.85 us.
  CHECK(marlin.seconds == doctest::Approx((weights + acts) / 0.8e12 + 8 * 3.85e-6).scale(0));
  CHECK(marlin.floor_seconds == doctest::Approx(8 * 3.85e-6).scale(0));
  // tinygemm: the stored bytes at 0.484 of that; still memory-bound at a peak of 1 PFLOP/s.
  r.dequant = kTinygemmCost;
  const Roofline tinygemm = QuantizedGemms(Quant::kInt4, r, DequantKernel::kTinygemm);
  CHECK(tinygemm.seconds == doctest::Approx(acts / 0.8e12 + weights / (0.8e12 * 0.484) + 8 * 3.85e-6).scale(0));
  // At a peak of 1 TFLOP/s its dequantization binds: 0.0297 of it, 29.7 GFLOP/s, gives qkv 13.2 us
  // against 2,048 / 0.8e12 + 105,216 / (0.8e12 x 0.484) + 3.85 us = 4.12 us, out 4.41 against 3.94, up
  // and down 17.7 against 4.2: every GEMM is compute-bound. Marlin's FLOPs run at the peak (1.57 us a block).
  r.peak = 1e12;
  CHECK(QuantizedGemms(Quant::kInt4, r, DequantKernel::kTinygemm).seconds ==
        doctest::Approx(2 * 2 * 786'432.0 / (1e12 * 0.0297)).scale(0));
  r.dequant = kMarlinCost;
  CHECK(QuantizedGemms(Quant::kInt4, r).seconds == doctest::Approx((weights + acts) / 0.8e12 + 8 * 3.85e-6).scale(0));
}

TEST_CASE("roofline: a weight-only int8 decode step's GEMMs by hand, and tinygemm has no 8-bit figure") {
  // bitsandbytes LLM.int8 (--quant int8): a byte a weight and an fp32 scale per output row.
  //   qkv 196,608 + 3,072; out 65,536 + 1,024; up 262,144 + 4,096; down 262,144 + 1,024 (B)
  const double weights = 2 * (199'680.0 + 66'560 + 266'240 + 263'168), acts = 16'384;
  const RooflineRates r{.peak = 1e15, .mfu = 1, .bandwidth = 1e12, .mbu = 0.8, .floors = kGpuKernelFloors};
  const Roofline marlin = QuantizedGemms(Quant::kInt8, r);
  CHECK(marlin.bytes == weights + acts);
  CHECK(marlin.seconds == doctest::Approx((weights + acts) / 0.8e12 + 8 * 3.85e-6).scale(0));
  CHECK_THROWS_WITH_AS(QuantizedGemms(Quant::kInt8, r, DequantKernel::kTinygemm),
                       "tally: error: --dequant-kernel: tinygemm runs 4-bit weights; 'tiny' stores 8-bit weights "
                       "(bitsandbytes int8, an fp32 scale per row); use marlin",
                       InputError);
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

using testing::ResolvedGraph;

Roofline Decode(const std::string& model, uint64_t batch, uint64_t tp = 1) {
  ModelSpec spec = ResolveModel(model);
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.batch = s.micro_batch = batch;
  s.seq = 1;
  s.context = 128;
  s.gpus = s.tp = tp;
  return ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                         {.peak = 1e18, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 1e12});
}

TEST_CASE("roofline: a batch-1 decode step of a mixture of experts reads only the routed experts") {
  // Mixtral: one token runs 2 of 8 experts, so the step reads about the 12.88 B active parameters,
  // not all 46.7 B (bf16, 2 bytes each); KV and activations add under 1%.
  const double active = 12'879'925'248.0 * 2;
  CHECK(Decode("mixtral-8x7b", 1).bytes / active == doctest::Approx(1.0).epsilon(0.01));
}

TEST_CASE("roofline: a tied head reads the embedding matrix") {
  // GPT-2 small at batch 1 reads every weight once: 124,439,808 parameters at 2 bytes (the token
  // embedding through the tied head, the positions row by row, so the 786,432 position weights
  // are read for one row only). The KV cache of 128 tokens adds 128 · 36,864 B (1.9%).
  const double weights = 2.0 * (124'439'808 - 1024 * 768 + 768) + 128 * 36'864.0;
  CHECK(Decode("gpt2-small", 1).bytes / weights == doctest::Approx(1.0).epsilon(0.005));
}

}  // namespace
}  // namespace tally
