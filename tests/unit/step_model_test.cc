// The training step from its parts (estimate/step_model.h): hand-derived pieces, and Korthikanti et
// al. 2022's Table 5 reproduced from the published configuration alone.
#include "estimate/step_model.h"

#include <doctest/doctest.h>

#include "config/hardware.h"
#include "estimate/attention_rate.h"
#include "estimate/flops.h"
#include "estimate/kernel_costs.h"
#include "estimate/params.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::Buckets;
using testing::NcclRing;
using testing::ResolvedGraph;

std::string Gpt(uint64_t h, uint64_t layers, uint64_t heads) {
  return "family: transformer\nvocab_size: 51200\ncontext_length: 2048\nd_model: " + std::to_string(h) +
         "\nn_layers: " + std::to_string(layers) + "\nn_heads: " + std::to_string(heads) +
         "\nd_ff: " + std::to_string(4 * h) + "\n";
}

// The graph TrainingStep takes: one micro-batch's.
LayerGraph Micro(const std::string& yaml, Settings s) {
  s.batch = s.micro_batch;
  return testing::InlineGraph(yaml, s);
}

Settings Parallel(uint64_t tp, uint64_t pp, uint64_t dp, uint64_t micro_batches) {
  Settings s;
  s.dtypes = PolicyDtypes(Precision::kMixedBf16);
  s.seq = 2048;
  s.tp = tp;
  s.pp = pp;
  s.gpus = tp * pp * dp;
  s.batch = micro_batches;  // micro-batches of 1: grad_accum() = micro_batches
  return s;
}

// nccl-tests across 4 nodes of 8 H100 SXM with 8 x 400 Gb/s InfiniBand: 330.93 GB/s of all-reduce
// bus bandwidth of the 400 their NICs carry (github.com/aigatech/vpbenchmarking, README).
constexpr double kNcclShare = 330.93 / 400;
constexpr double kEightNics = 8 * 25e9 * kNcclShare;  // 8 A100s a node, one 200 Gb/s NIC each

TEST_CASE("step: tile quantization by hand") {
  // 128 x 128 output tiles: 2048 x 6400 fills them; 100 rows use 100/128 of a tile; 129 columns
  // need two tiles (129/256).
  CHECK(TileEfficiency(2048, 6400) == 1.0);
  CHECK(TileEfficiency(100, 256) == doctest::Approx(100.0 / 128));
  CHECK(TileEfficiency(128, 129) == doctest::Approx(129.0 / 256));
}

TEST_CASE("step: the 1F1B bubble is (p - 1) / (vp m + p - 1) of the step") {
  // 4 stages, 8 micro-batches: 3 idle stage-times against 8 busy ones (Narayanan et al. 2021, §2.2);
  // interleaved over 3 virtual stages, a third of it.
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(1, 4, 1, 8);
  const LayerGraph g = Micro(Gpt(1024, 8, 16), s);
  const uint64_t params = CountParams(g).trainable;
  const StepTime one = TrainingStep(g, s, a100, 312e12, 0.8, params, {});
  CHECK(one.bubble_fraction == doctest::Approx(3.0 / 11));
  CHECK(one.pipeline_bubble == doctest::Approx(3.0 / 8 * (one.compute - one.optimizer + one.tp_comm + one.pp_comm)));
  const StepTime three = TrainingStep(g, s, a100, 312e12, 0.8, params, {.vp = 3});
  CHECK(three.bubble_fraction == doctest::Approx(3.0 / (3 * 8 + 3)));
}

TEST_CASE("step: flash attention's GEMMs run at the device's attention_efficiency, the scores on chip") {
  // GPT of 8 blocks, 16 heads of 64, seq 2048, one sequence, no causal discount: per block and head
  // the forward's QK^T (2048 x 2048 x 64) and PV (2048 x 64 x 2048) are F = 2 x 2048^2 x 64 FLOPs
  // each; the backward's dQ, dK, re-formed QK^T, dP and dV five more. Tile quantization (128 x 128
  // output tiles) halves the rate of each with a 64-wide output: PV, dQ, dK and dV, so the core
  // costs (1 + 2 + 2 + 2 + 1 + 1 + 2) F = 11 F at peak x attention_efficiency. Every one stays
  // compute-bound (each moves only its 2048 x 64 operands: the s x s scores stay on chip, Dao et
  // al. 2022, §3.1), so halving attention_efficiency adds exactly that time again. On a device of
  // other SMs than the attention sweep's: the H100's figures with an H100 PCIe's fp32 peak (51).
  HardwareSpec other = ResolveHardware("h100-sxm");
  REQUIRE(other.attention_efficiency == 0.35);  // FlashAttention-2 on H100 (Shah et al. 2024)
  other.peak_flops[GemmDType::kFp32] = 51e12;
  Settings s = Parallel(1, 1, 1, 1);
  s.causal = false;
  s.causal_kernels = false;
  s.loss_kernel = LossKernel::kFused;
  const LayerGraph g = Micro(Gpt(1024, 8, 16), s);
  const uint64_t params = CountParams(g).trainable;
  // No eager op priced by the SMs, the loss's neither; the H100 SXM's power limit apart (its own test).
  const StepOptions fused{.kernels = Kernels::kFused, .power_limit = false};
  const double f = 2.0 * 2048 * 2048 * 64;
  const double core = 8 * 16 * 11 * f / (989.5e12 * 0.35);
  const StepTime full = TrainingStep(g, s, other, 989.5e12, 0.75, params, fused);
  other.attention_efficiency = 0.175;
  const StepTime half = TrainingStep(g, s, other, 989.5e12, 0.75, params, fused);
  CHECK(half.compute - full.compute == doctest::Approx(core).epsilon(1e-9));
  // Without the field the GEMMs' efficiency stands in.
  other.attention_efficiency = 0;
  const StepTime gemm = TrainingStep(g, s, other, 989.5e12, 0.75, params, fused);
  CHECK(full.compute - gemm.compute == doctest::Approx(core * (1 - 0.35 / 0.75)).epsilon(1e-9));
  // On the SMs the sweep measured (the H100 SXM itself), cuDNN's rate for 16 heads of 64 over 2,048
  // tokens, whole kernels: the seven GEMMs' 7 F at peak x that rate, no tile quantization on top.
  const StepTime measured = TrainingStep(g, s, ResolveHardware("h100-sxm"), 989.5e12, 0.75, params, fused);
  const double cudnn = 8 * 16 * 7 * f / (989.5e12 * CudnnAttentionEfficiency(16, 2048, 64));
  CHECK(measured.compute - full.compute == doctest::Approx(cudnn - core).epsilon(1e-9));
}

TEST_CASE("step: fp32 and tf32 attention at SDPA's memory-efficient kernel rate, over the fp32 peak") {
  // The same GPT in fp32 (16 heads of 64, 2048 tokens, 8 blocks, no causal discount): no flash kernel
  // takes fp32, and the core's seven GEMMs of F = 2 x 2048^2 x 64 FLOPs each run as the memory-efficient
  // kernel at its measured rate for 16 heads of 64 over 2,048 tokens, a fraction of the CUDA-core fp32
  // peak, whatever the GEMMs' peak (tf32's here). Doubling that fp32 peak halves exactly the core's
  // time: 8 x 16 x 7 F / (fp32 peak x rate) / 2. Fused kernels and loss, so no eager op is priced by the SMs;
  // the update, PyTorch's AdamW on the fp32 weights whatever the kernels, is (its SM part), so it is left out.
  Settings s = Parallel(1, 1, 1, 1);
  s.precision = Precision::kTf32;
  s.dtypes = PolicyDtypes(Precision::kTf32);
  s.causal = false;
  s.causal_kernels = false;
  s.loss_kernel = LossKernel::kFused;
  const LayerGraph g = Micro(Gpt(1024, 8, 16), s);
  const uint64_t params = CountParams(g).trainable;
  const StepOptions fused{.kernels = Kernels::kFused};
  HardwareSpec h100 = ResolveHardware("h100-sxm");
  const StepTime at67 = TrainingStep(g, s, h100, 494.7e12, 0.785, params, fused);
  h100.peak_flops[GemmDType::kFp32] = 134e12;
  const StepTime at134 = TrainingStep(g, s, h100, 494.7e12, 0.785, params, fused);
  const double core = 8 * 16 * 7 * (2.0 * 2048 * 2048 * 64) / (67e12 * Fp32AttentionEfficiency(16, 2048, 64));
  CHECK((at67.compute - at67.optimizer) - (at134.compute - at134.optimizer) == doctest::Approx(core / 2).epsilon(1e-9));
  // 16.7 and 25.8 TFLOP/s at 8 and 32 heads of 64 over 2,048 tokens (docs/data/h100-kernel-sweep.json):
  // 16 heads, halfway in log4, is their mean.
  CHECK(Fp32AttentionEfficiency(16, 2048, 64) == doctest::Approx((16.7 + 25.8) / 2 / 67));
}

TEST_CASE("step: data-parallel gradients by ring all-reduce, over the node's link or the NIC") {
  // 16 replicas of a 1-device model: 2 (16 - 1) / 16 x params x 2 bytes (bf16 gradients) over the
  // intra-node link with 16 devices per node; with 8, across the two nodes on the NICs of the group's
  // 8 members in each, 8 x 25 GB/s (one 200 Gb/s HDR NIC per A100; NCCL runs a channel over each) at
  // the 330.93 / 400 of their line rate nccl-tests measured across H100 nodes;
  // each 25 MiB bucket a call with NCCL's latency: 30 ring steps, 2 of them between the two nodes.
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(1, 1, 16, 1);
  const LayerGraph g = Micro(Gpt(1024, 8, 16), s);
  const uint64_t params = CountParams(g).trainable;
  const double bytes = 2.0 * static_cast<double>(params);
  const StepTime intra = TrainingStep(g, s, a100, 312e12, 0.8, params, {.gpus_per_node = 16});
  CHECK(intra.dp_comm ==
        doctest::Approx(NcclRing(30, 0, Buckets(bytes), 2 * 15.0 / 16 * bytes, testing::kA100NcclNvlink)));
  const StepTime inter = TrainingStep(g, s, a100, 312e12, 0.8, params, {});
  CHECK(inter.dp_comm == doctest::Approx(NcclRing(30, 2, Buckets(bytes), 2 * 15.0 / 16 * bytes, kEightNics)));
  CHECK(inter.dp_bandwidth == doctest::Approx(kEightNics));
  CHECK(inter.dp_ranks_per_node == 8);
  // Hidden under the backward except what exceeds it, and at least the last 25 MiB bucket.
  CHECK(inter.dp_exposed >= 2 * 15.0 / 16 * 25 * 1024 * 1024 / kEightNics);
  CHECK(inter.dp_exposed <= inter.dp_comm);
}

TEST_CASE("step: ZeRO-1 reduce-scatters the gradients and all-gathers the updated weights") {
  // 16 replicas on one 16-device A100 node (NCCL moves 240 of NVLink's 300 GB/s): the gradients reduce-scattered to the
  // owners of their optimizer shard, then the new weights all-gathered, each (16 - 1) / 16 of the buffer in calls of 15
  // ring steps: with bf16 gradients and weights the all-reduce's volume (Rajbhandari et al. 2020, §5.1); with fp32
  // gradients, as Megatron-LM keeps them under --bf16, 4 + 2 bytes a parameter where an all-reduce would move 2 x 4,
  // the weights in the gradients' buckets (the same parameters: 25 MiB of fp32 gradients, 12.5 MiB of bf16 weights).
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(1, 1, 16, 1);
  s.zero = 1;
  const LayerGraph g = Micro(Gpt(1024, 8, 16), s);
  const uint64_t params = CountParams(g).trainable;
  const auto ring = [](double bytes, double calls) {
    return NcclRing(15, 0, calls, 15.0 / 16 * bytes, testing::kA100NcclNvlink);
  };
  const double p = static_cast<double>(params);
  const StepTime bf16 = TrainingStep(g, s, a100, 312e12, 0.8, params, {.gpus_per_node = 16});
  CHECK(bf16.dp_comm == doctest::Approx(2 * ring(2 * p, Buckets(2 * p))));
  // The gather waits for the update: after it, whole (DeepSpeed's, and Megatron-LM's by default);
  // with --overlap-param-gather under the next forward, which at 2,048 tokens outlasts it, all but its
  // first 25 MiB bucket.
  const StepTime under =
      TrainingStep(g, s, a100, 312e12, 0.8, params, {.gpus_per_node = 16, .param_gather_overlap = true});
  REQUIRE(Buckets(2 * p) > 1);
  CHECK(bf16.dp_exposed - under.dp_exposed ==
        doctest::Approx(ring(2 * p, Buckets(2 * p)) - ring(25.0 * 1024 * 1024, 1)));
  s.dtypes.grad = DType::kFp32;
  const StepTime fp32 = TrainingStep(g, s, a100, 312e12, 0.8, params, {.gpus_per_node = 16});
  CHECK(fp32.dp_comm == doctest::Approx(ring(4 * p, Buckets(4 * p)) + ring(2 * p, Buckets(4 * p))));
}

TEST_CASE("step: the data-parallel group's link follows Megatron-Core's rank order (tp, cp, dp, pp)") {
  // 8 devices a node. --tp 8 over 4 nodes: each data-parallel group has one member a node, a ring of
  // 4 nodes on one NIC (25 GB/s on an A100, at nccl-tests' share), 2 (4 - 1) = 6 ring steps, all
  // between nodes.
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  const LayerGraph g = Micro(Gpt(1024, 8, 16), Parallel(8, 1, 4, 1));
  const uint64_t params = CountParams(g).trainable;
  const StepTime wide = TrainingStep(g, Parallel(8, 1, 4, 1), a100, 312e12, 0.8, params, {});
  CHECK(wide.dp_bandwidth == doctest::Approx(25e9 * kNcclShare));
  CHECK(wide.dp_ranks_per_node == 1);
  // --tp 2 --pp 4 --dp 4 on 32 devices: a pipeline stage's tp x dp = 8 devices fill one node, so its
  // gradients reduce over NVLink (NCCL's 12 x 20 GB/s), though the job spans 4 nodes.
  const StepTime staged = TrainingStep(g, Parallel(2, 4, 4, 1), a100, 312e12, 0.8, params, {});
  CHECK(staged.dp_bandwidth == testing::kA100NcclNvlink);
  CHECK(staged.dp_ranks_per_node == 4);
  // Its pipeline's adjacent stages are tp x dp = 8 ranks apart, a node apart: each micro-batch's
  // activation (2048 x 1024 bf16, 1/tp of it a rank) goes forward and its gradient back over the NIC,
  // 25 GB/s. With 32 devices a node (one node) the same sends stay on NVLink.
  const double send = 2 * 2048.0 * 1024 * 2 / 2;
  CHECK(staged.pp_comm == doctest::Approx(send / 25e9));
  CHECK(TrainingStep(g, Parallel(2, 4, 4, 1), a100, 312e12, 0.8, params, {.gpus_per_node = 32}).pp_comm ==
        doctest::Approx(send / testing::kA100NcclNvlink));
  // --tp 2 --cp 2 --pp 2 over 16 devices (dp 2): stages of tp x cp x dp = 8, a node each, so the one
  // boundary crosses the NIC, though tp x dp x pp = 8 would fit a node. The context-parallel rank holds
  // s / cp of the tokens: half the send.
  Settings context_pp = Parallel(2, 2, 4, 1);
  context_pp.cp = 2;
  CHECK(TrainingStep(g, context_pp, a100, 312e12, 0.8, params, {}).pp_comm == doctest::Approx(send / 2 / 25e9));
  // --tp 4 over 16 devices: 4 groups of 4 members, 2 of each a node: 2 NICs. With --cp 2 too (32
  // devices), each gradient group is cp x dp = 8 ranks tp = 4 apart: still 2 a node, over 4 nodes.
  Settings cp = Parallel(4, 1, 4, 1);
  cp.cp = 2;
  cp.gpus = 32;
  const StepTime context = TrainingStep(g, cp, a100, 312e12, 0.8, params, {});
  CHECK(context.dp_ranks_per_node == 2);
  CHECK(context.dp_bandwidth == doctest::Approx(2 * 25e9 * kNcclShare));
  CHECK(TrainingStep(g, Parallel(4, 1, 4, 1), a100, 312e12, 0.8, params, {}).dp_bandwidth ==
        doctest::Approx(2 * 25e9 * kNcclShare));
  // --dp-bucket: PyTorch DDP's 25 MiB, or Megatron-Core's max(40M, 1M x dp) parameters at the
  // gradients' 2 bytes (megatron/core/distributed/distributed_data_parallel.py).
  CHECK(wide.dp_bucket_bytes == 25.0 * 1024 * 1024);
  const StepTime megatron =
      TrainingStep(g, Parallel(8, 1, 4, 1), a100, 312e12, 0.8, params, {.dp_bucket = DpBucket::kMegatron});
  CHECK(megatron.dp_bucket_bytes == 80e6);
  const StepTime many =
      TrainingStep(g, Parallel(1, 1, 64, 1), a100, 312e12, 0.8, params, {.dp_bucket = DpBucket::kMegatron});
  CHECK(many.dp_bucket_bytes == 128e6);
  // A given count (--dp-bucket 128Mi, Megatron-Bridge's CommOverlapConfig): 2^27 parameters of 2 bytes.
  const StepTime given = TrainingStep(g, Parallel(8, 1, 4, 1), a100, 312e12, 0.8, params,
                                      {.dp_bucket = DpBucket::kParams, .dp_bucket_params = 128ULL << 20});
  CHECK(given.dp_bucket_bytes == 2.0 * (128ULL << 20));
}

TEST_CASE("step: LoRA's fp32 adapters all-reduce 4-byte gradients, the policy's 2 under --lora-dtype base") {
  // The same GPT with rank-8 adapters on qkv and out over 16 replicas on one 16-device node: only the
  // adapters train, 8 blocks x 4 projections (q, k, v, out) x (1024 x 8 + 8 x 1024) = 524,288
  // parameters; PEFT keeps them in fp32 (4 B gradients), --lora-dtype base in the policy's bf16. At
  // 1-2 MiB in one bucket NCCL's LL ring is the fastest (collectives.cc, from NCCL's tuning model):
  // 3.6 us + 30 hops of 0.47 us, the wire bytes at a quarter of the link's 240 GB/s (NCCL's rate).
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(1, 1, 16, 1);
  s.lora_rank = 8;
  const auto reduced = [&](LoraDtype dtype, double bytes_per_param) {
    Settings d = s;
    d.lora_dtype = dtype;
    const LayerGraph g = Micro(Gpt(1024, 8, 16), d);
    const uint64_t params = CountParams(g).trainable;
    REQUIRE(params == 8 * 4 * (1024 * 8 + 8 * 1024));
    const double bytes = bytes_per_param * static_cast<double>(params);
    const StepTime t = TrainingStep(g, d, a100, 312e12, 0.8, params, {.gpus_per_node = 16});
    REQUIRE(Buckets(bytes) == 1);
    CHECK(t.dp_comm ==
          doctest::Approx((3.6 + 30 * 0.47) * 1e-6 + 2 * 15.0 / 16 * bytes / (0.25 * testing::kA100NcclNvlink)));
  };
  reduced(LoraDtype::kFp32, 4);
  reduced(LoraDtype::kBase, 2);
}

TEST_CASE("step: ZeRO-3 reduce-scatters the gradients and gathers the parameters in every pass") {
  // 16 ranks across two nodes (their 8 NICs a node, 8 x 25 GB/s at nccl-tests' share), 2
  // micro-batches: per micro-batch a reduce-scatter of the bf16 gradients (partitioned gradients are
  // reduced to their owners in every backward: DeepSpeed's stage-3 hooks, FSDP's) and an all-gather
  // of the bf16 parameters in the forward and in the backward, each (16 - 1) / 16 of the buffer
  // (Rajbhandari et al. 2020, §7: 3x the data-parallel volume of 2x a micro-batch). The
  // reduce-scatters go block by block, as FSDP's units finish their backward (8 calls a
  // micro-batch), and the gathers per block, forward and backward (8 blocks, 2 micro-batches: 32
  // calls); each call 15 ring steps, one between the nodes. With DeepSpeed's buckets (5e8
  // parameters: one here) a micro-batch's reduce-scatter is one call.
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(1, 1, 16, 2);
  s.zero = 3;
  const LayerGraph g = Micro(Gpt(1024, 8, 16), s);
  const uint64_t params = CountParams(g).trainable;
  const double bytes = 2 * static_cast<double>(params), wire = 15.0 / 16 * bytes;
  const double scatters = 2 * NcclRing(15, 1, 8, wire, kEightNics);
  const double gathers = NcclRing(15, 1, 32, wire * 2 * 2, kEightNics);
  CHECK(TrainingStep(g, s, a100, 312e12, 0.8, params, {}).dp_comm == doctest::Approx(scatters + gathers));
  REQUIRE(static_cast<double>(params) < 5e8);
  CHECK(TrainingStep(g, s, a100, 312e12, 0.8, params, {.dp_bucket = DpBucket::kDeepSpeed}).dp_comm ==
        doctest::Approx(2 * NcclRing(15, 1, 1, wire, kEightNics) + gathers));
}

TEST_CASE("step: tensor-parallel all-reduces, forward and backward, not overlapped") {
  // Llama-2-7B at seq 2048, micro-batch 1, tp 2 on one A100 node: 64 row-parallel linears (attention
  // out and MLP down in 32 blocks), each a 2048 x 4096 bf16 output all-reduced in the forward and
  // its twin in the backward: 2 x 64 x 2 (2 - 1) / 2 x 2048 x 4096 x 2 B / 240 GB/s (NCCL's rate over the 300 GB/s
  // NVLink), and 128 calls of 2 ring steps each.
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(2, 1, 1, 1);
  const ModelSpec spec = ResolveModel("llama-2-7b");
  Settings micro = s;
  micro.batch = 1;
  const LayerGraph g = ResolvedGraph(spec, micro);
  const StepTime st = TrainingStep(g, s, a100, 312e12, 0.8, CountParams(g).trainable, {});
  CHECK(st.tp_comm == doctest::Approx(NcclRing(2, 0, 128, 2 * 64 * (2048.0 * 4096 * 2), testing::kA100NcclNvlink)));
  // Sequence parallelism swaps each for a reduce-scatter + all-gather of the same volume.
  s.sp = true;
  CHECK(TrainingStep(g, s, a100, 312e12, 0.8, CountParams(g).trainable, {}).tp_comm == doctest::Approx(st.tp_comm));
}

TEST_CASE("step: a GB200's node is its NVL72 rack unless --gpus-per-node says otherwise") {
  // Llama 3 70B on 64 GB200 at --tp 8: the 8 data-parallel ranks of a stage, tp = 8 apart, span 64
  // devices. In one 72-GPU rack they reduce over NVLink (NCCL's 18 x 40.1 GB/s); with 8 a node, one
  // member a node on its NIC (50 GB/s at nccl-tests' share, kNetworkCollectiveShare).
  const std::vector<std::string> args = {"time", "llama-3-70b", "--hardware", "gb200", "--gpus", "64", "--tp", "8"};
  const nlohmann::json rack = testing::RunJson(args)["time"]["comm"];
  CHECK(rack["dp_bandwidth"].get<double>() == doctest::Approx(18 * 40.1e9));
  std::vector<std::string> boards = args;
  boards.insert(boards.end(), {"--gpus-per-node", "8"});
  CHECK(testing::RunJson(boards)["time"]["comm"]["dp_bandwidth"].get<double>() ==
        doctest::Approx(50e9 * kNetworkCollectiveShare));
}

TEST_CASE("step: a plain tensor-parallel all-reduce may take NVLS, sequence parallelism and --tp-overlap never") {
  // Llama-2-7B at tp 8 on one H100 node: 128 all-reduces of a 2048 x 4096 bf16 output; each by NVLS,
  // 25 us and 476 GB/s of bus bandwidth (tests/unit/test_util.h), where the ring has 370.8.
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  HardwareSpec no_nvls = h100;
  no_nvls.nvls = NvlsArch::kNone;
  Settings s = Parallel(8, 1, 1, 1);
  Settings micro = s;
  micro.batch = 1;
  const LayerGraph g = ResolvedGraph(ResolveModel("llama-2-7b"), micro);
  const uint64_t params = CountParams(g).trainable;
  const auto tp = [&](const Settings& at, const HardwareSpec& hw, StepOptions o = {}) {
    o.power_limit = false;
    return TrainingStep(g, at, hw, 989.5e12, 0.8, params, o).tp_comm;
  };
  const double wire = 128 * 2 * 7.0 / 8 * (2048.0 * 4096 * 2);
  CHECK(tp(s, h100) == doctest::Approx(testing::NcclNvls(128, wire, testing::kH100x8Nvls)));
  CHECK(tp(s, no_nvls) == doctest::Approx(NcclRing(14, 0, 128, wire, testing::kH100NcclNvlink)));
  // Under --sp a reduce-scatter and an all-gather, which NCCL runs as rings in a node; under
  // --tp-overlap Transformer Engine's own exchanges: the ring's rate either way.
  Settings sp = s;
  sp.sp = true;
  CHECK(tp(sp, h100) == doctest::Approx(tp(sp, no_nvls)));
  CHECK(tp(s, h100, {.tp_overlap = true}) == doctest::Approx(tp(s, no_nvls, {.tp_overlap = true})));
  CHECK(tp(sp, h100) == doctest::Approx(tp(s, no_nvls)));
}

TEST_CASE("step: the hardware catalog carries the collective links, board power and GEMM efficiency") {
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  CHECK(a100.intra_node_bandwidth == 300e9);                 // NVLink 3: 12 links x 25 GB/s per direction
  CHECK(a100.intra_node_collective_share == 0.8);            // NCCL's topo.h: SM80_NVLINK_BW 20 of the link's 25
  CHECK(a100.inter_node_bandwidth == 25e9);                  // one 200 Gb/s HDR NIC per GPU
  CHECK(a100.board_power_w == 400);                          // A100 SXM datasheet, max TDP
  CHECK(a100.gemm_efficiency.at(GemmDType::kBf16) == 0.87);  // Bekman's MAMF, A100 SXM: 271.2 of 312
  CHECK(a100.nvls == NvlsArch::kNone);                       // NVLS: third-generation NVSwitch and sm90 on
  // NCCL's per-link NVLink rates (src/graph/topo.h) over the links' 25 and 50 GB/s: Hopper 20.6,
  // Blackwell 40.1; NVLS in their switch nodes.
  for (const std::string hopper : {"h100-sxm", "h200", "h800", "h20"}) {
    CAPTURE(hopper);
    CHECK(ResolveHardware(hopper).intra_node_collective_share == doctest::Approx(20.6 / 25).epsilon(1e-12));
    CHECK(ResolveHardware(hopper).nvls == NvlsArch::kHopper);
  }
  for (const std::string blackwell : {"b200", "b300", "gb200"}) {
    CAPTURE(blackwell);
    CHECK(ResolveHardware(blackwell).intra_node_collective_share == doctest::Approx(40.1 / 50).epsilon(1e-3));
    CHECK(ResolveHardware(blackwell).nvls == NvlsArch::kBlackwell);
  }
  CHECK(ResolveHardware("h800").IntraNodeCollectiveBandwidth() == doctest::Approx(8 * 20.6e9));  // 8 links
  CHECK(ResolveHardware("h100-pcie").nvls == NvlsArch::kNone);  // NVLink bridges, no switch
  // Across nodes a B200 (DGX B200: 8 ConnectX-7 at 400 Gb/s) has 50 GB/s, where NVLink's 900 had stood
  // in for want of the field; a GB200 between racks the same, its NVLink domain the 72-GPU rack.
  CHECK(ResolveHardware("b200").inter_node_bandwidth == 50e9);
  CHECK(ResolveHardware("gb200").inter_node_bandwidth == 50e9);
  CHECK(ResolveHardware("gb200").gpus_per_node == 72);
  CHECK(ResolveHardware("b200").gpus_per_node == 0);  // an HGX board: --gpus-per-node's 8
  CHECK(ResolveHardware("b200").board_power_w == 1000);
  CHECK_THROWS_WITH_AS(LoadHardwareText("x.yaml",
                                        "memory_bytes: 1\nmemory_bandwidth: 1e9\npeak_flops: {bf16: 1e12}\n"
                                        "nvls: ampere\n"),
                       "x.yaml:4:7: error: 'nvls' must be one of hopper, blackwell, got 'ampere'", InputError);
  CHECK_THROWS_WITH_AS(LoadHardwareText("x.yaml",
                                        "memory_bytes: 1\nmemory_bandwidth: 1e9\npeak_flops: {bf16: 1e12}\n"
                                        "gpus_per_node: 0\n"),
                       "x.yaml:4:16: error: 'gpus_per_node' must be a positive whole number, got '0'", InputError);
  // Blackwell's attention: FlashAttention-4's best, 1,605 of 2,250 TFLOP/s on a B200 (Zadouri et al.
  // 2026, arXiv 2603.05451); the GB200 carries it over (the same SMs), the B300 takes none.
  CHECK(ResolveHardware("b200").attention_efficiency == 0.71);
  CHECK(1605.0 / 2250 == doctest::Approx(0.71).epsilon(0.005).scale(0));
  CHECK(ResolveHardware("gb200").attention_efficiency == 0.71);
  CHECK(ResolveHardware("b300").attention_efficiency == 0);
  CHECK_THROWS_WITH_AS(LoadHardwareText("x.yaml",
                                        "memory_bytes: 1\nmemory_bandwidth: 1e9\npeak_flops: {bf16: 1e12}\n"
                                        "gemm_efficiency: {bf16: 1.5}\n"),
                       doctest::Contains("must be a ratio in (0, 1]"), InputError);
  // attention_efficiency: a ratio too, its position named.
  CHECK(a100.attention_efficiency == 0.5);  // FlashAttention-2's 50-73% of the A100's peak, the lower end
  CHECK_THROWS_WITH_AS(LoadHardwareText("x.yaml",
                                        "memory_bytes: 1\nmemory_bandwidth: 1e9\npeak_flops: {bf16: 1e12}\n"
                                        "attention_efficiency: 0\n"),
                       "x.yaml:4:23: error: 'attention_efficiency' must be a ratio in (0, 1] such as 0.8, got '0'",
                       InputError);
}

// The graph's node at `path` alone, as its one block (or its pre/post node).
LayerGraph OneNode(LayerGraph g, const std::string& path) {
  std::erase_if(g.layers, [&](const Layer& l) { return l.path != path; });
  REQUIRE(g.layers.size() == 1);
  g.layers[0].repeat = 1;
  g.n_layers = 1;
  g.runs = {{.type = g.layers[0].block_type, .first = 0, .count = 1}};
  g.blocks_begin = 0;
  g.blocks_end = g.layers[0].block_type >= 0 ? 1 : 0;
  return g;
}

TEST_CASE(
    "step: a memory-bound op on tensor-parallel-split dims takes 1/tp per rank, the residual stream's only under "
    "--sp") {
  // A Llama-style block, d 512, SwiGLU of f 1536, seq 2048, one sequence, bf16 activations, fused
  // kernels at mbu 0.5 on an A100: every memory-bound op moves 2 · 2 B per output element forward (its
  // input read, its output written) and 4 · 2 B backward (estimate/kernel_costs.h, the fused case).
  // The MLP's act(gate)·up sits between the column-parallel gate/up and the row-parallel down: each of
  // tp 4 ranks runs 2048 · 1536 / 4 elements, sequence parallel or not (Korthikanti et al. 2022,
  // §4.2.1). The RMSNorm before the MLP is on the residual stream: whole on every rank without --sp,
  // 2048 · 512 / 4 with it (§4.2.2).
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  const std::string llama =
      "family: transformer\nvocab_size: 1000\ncontext_length: 2048\nd_model: 512\nn_layers: 2\nn_heads: 8\n"
      "d_ff: 1536\nmlp: swiglu\nnorm: rmsnorm\nposition: rope\nbias: false\n";
  const double bw = a100.memory_bandwidth * 0.5, act = 2048.0 * 1536, norm = 2048.0 * 512;
  const auto memory_bound = [&](const std::string& path, uint64_t tp, bool sp, Kernels kernels,
                                LossKernel loss = LossKernel::kEager) {
    Settings s = Parallel(tp, 1, 1, 1);
    s.sp = sp;
    s.loss_kernel = loss;
    const LayerGraph g = OneNode(Micro(llama, s), path);
    return TrainingStep(g, s, a100, 312e12, 0.8, 0, {.kernels = kernels, .mbu = 0.5}).memory_bound;
  };
  CHECK(memory_bound("blocks.0.mlp.act", 1, false, Kernels::kFused) == doctest::Approx(act * 12 / bw));
  CHECK(memory_bound("blocks.0.mlp.act", 4, false, Kernels::kFused) == doctest::Approx(act / 4 * 12 / bw));
  CHECK(memory_bound("blocks.0.mlp.act", 4, true, Kernels::kFused) == doctest::Approx(act / 4 * 12 / bw));
  CHECK(memory_bound("blocks.0.mlp_norm", 1, false, Kernels::kFused) == doctest::Approx(norm * 12 / bw));
  CHECK(memory_bound("blocks.0.mlp_norm", 4, false, Kernels::kFused) == doctest::Approx(norm * 12 / bw));
  CHECK(memory_bound("blocks.0.mlp_norm", 4, true, Kernels::kFused) == doctest::Approx(norm / 4 * 12 / bw));
  // Eager, silu(gate) * up as measured (estimate/kernel_costs.cc, kGatedAct: 10.90 B forward and 30.61 B
  // backward per 16-bit output element at a copy's 0.85 of the datasheet bandwidth): also 1/tp.
  const double copy = a100.memory_bandwidth * kCopyEfficiency;
  REQUIRE(kCopyEfficiency == 0.85);
  CHECK(memory_bound("blocks.0.mlp.act", 4, false, Kernels::kEager) ==
        doctest::Approx(act / 4 * (10.90 + 30.61) / copy));
  // The loss reads the [2048, 1000] logits and writes a loss per token: eager, Hugging Face's
  // upcast cross-entropy as measured per logit (kLoss: 27.38 B forward, 31.34 B backward), 1/tp of
  // the vocabulary-parallel logits per rank; fused, one read and one write forward, twice that
  // backward, of each logit. --loss-kernel decides, not --kernels: Megatron-LM's cross-entropy is op
  // by op over fp32 logits unless --cross-entropy-loss-fusion, however fused its other kernels.
  const double logits = 2048.0 * 1000;
  CHECK(memory_bound("loss", 1, false, Kernels::kEager) == doctest::Approx(logits * (27.38 + 31.34) / copy));
  CHECK(memory_bound("loss", 4, false, Kernels::kEager) == doctest::Approx(logits / 4 * (27.38 + 31.34) / copy));
  CHECK(memory_bound("loss", 1, false, Kernels::kFused) == doctest::Approx(logits * (27.38 + 31.34) / copy));
  CHECK(memory_bound("loss", 1, false, Kernels::kFused, LossKernel::kFused) == doctest::Approx(logits * 12 / bw));
  CHECK(memory_bound("loss", 1, false, Kernels::kEager, LossKernel::kFused) == doctest::Approx(logits * 12 / bw));
  // Liger's and Unsloth's chunked loss is one kernel a chunk: the fused price.
  CHECK(memory_bound("loss", 1, false, Kernels::kEager, LossKernel::kChunked) == doctest::Approx(logits * 12 / bw));
}

TEST_CASE("step: per-head q and k norms cost their own part of the qkv projection") {
  // Qwen3-style attention, d 512, 8 query heads and 2 K/V heads of 64, per-head RMSNorms on q and k:
  // the norms rewrite q (2048 · 512) and k (2048 · 128) inside the [2048, 768] qkv tensor. Eager,
  // Hugging Face's RMSNorm as measured (kRmsNormHf: 55.04 B forward and 129.97 B backward per 16-bit
  // element at a copy's 0.85 of the bandwidth).
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  const std::string qwen =
      "family: transformer\nvocab_size: 1000\ncontext_length: 2048\nd_model: 512\nn_layers: 1\nn_heads: 8\n"
      "n_kv_heads: 2\nd_ff: 1536\nmlp: swiglu\nnorm: rmsnorm\nposition: rope\nbias: false\nqk_norm: per_head\n";
  const double copy = a100.memory_bandwidth * kCopyEfficiency;
  const auto memory_bound = [&](const std::string& path) {
    const Settings s = Parallel(1, 1, 1, 1);
    const LayerGraph g = OneNode(Micro(qwen, s), path);
    return TrainingStep(g, s, a100, 312e12, 0.8, 0, {.kernels = Kernels::kEager}).memory_bound;
  };
  CHECK(memory_bound("blocks.0.attn.q_norm") == doctest::Approx(2048.0 * 512 * (55.04 + 129.97) / copy));
  CHECK(memory_bound("blocks.0.attn.k_norm") == doctest::Approx(2048.0 * 128 * (55.04 + 129.97) / copy));
}

struct Table5Row {
  const char* name;
  uint64_t h, layers, heads, tp, pp, batch;
  double seconds, mfu;  // published: iteration time (selective recompute + sequence parallel), MFU
  double tolerance;     // |predicted / published - 1| allowed, stated per row (docs/validation-time.md)
};

TEST_CASE("step: --tp-overlap hides tensor-parallel collectives under the tensor-parallel GEMMs") {
  // Llama-2-7B, tp 2 on one A100 node: the collectives (tp_comm) are exposed whole by default. With
  // the overlap they hide under the split linears' GEMMs, which outlast them here, all but the last
  // of the 4 chunks Transformer Engine's "pipeline" method reduce-scatters after each row-parallel
  // forward: a quarter of the forward's reduce-scatter, half of its all-reduce volume, and the
  // forward carries half of the step's tensor-parallel traffic: tp_comm / 16. Over a 1 GB/s link
  // they outlast the GEMMs: what is left shows.
  HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(2, 1, 1, 1);
  const ModelSpec spec = ResolveModel("llama-2-7b");
  Settings micro = s;
  micro.batch = 1;
  const LayerGraph g = ResolvedGraph(spec, micro);
  const uint64_t params = CountParams(g).trainable;
  const StepTime plain = TrainingStep(g, s, a100, 312e12, 0.8, params, {});
  const StepTime overlap = TrainingStep(g, s, a100, 312e12, 0.8, params, {.tp_overlap = true});
  CHECK(plain.tp_exposed == plain.tp_comm);
  CHECK(overlap.tp_comm == plain.tp_comm);
  CHECK(overlap.tp_exposed == doctest::Approx(plain.tp_comm / 16));
  // The chunked GEMMs run no faster than whole ones.
  CHECK(overlap.compute > plain.compute);
  a100.intra_node_bandwidth = 1e9;
  const StepTime slow = TrainingStep(g, s, a100, 312e12, 0.8, params, {.tp_overlap = true});
  CHECK(slow.tp_exposed > slow.tp_comm / 16);
  CHECK(slow.tp_exposed < slow.tp_comm);
  CHECK(slow.step_seconds == doctest::Approx(slow.compute + slow.communication + slow.pipeline_bubble));
}

TEST_CASE("step: --tp-overlap runs a linear's GEMM as the chunks Transformer Engine splits it into") {
  // Transformer Engine's userbuffers defaults (transformer_engine/pytorch/module/base.py,
  // initialize_ub): the column-parallel forward (fc1_fprop) is a "ring_exchange" of tp chunks, the
  // row-parallel forward (fc2_fprop) a "pipeline" of 4. A chunk of m / splits rows costs what the
  // same linear costs on m / splits tokens: so the forward of gate at 2048 tokens, overlapped at tp 2,
  // takes twice that of gate at 1024 tokens, and down's four times down's at 512. The weights are
  // frozen and the input is data, so the step is the forward alone.
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  const std::string llama =
      "family: transformer\nvocab_size: 1000\ncontext_length: 2048\nd_model: 4096\nn_layers: 1\nn_heads: 32\n"
      "d_ff: 8192\nmlp: swiglu\nnorm: rmsnorm\nposition: rope\nbias: false\n";
  const auto forward = [&](const std::string& path, uint64_t seq, bool overlap) {
    Settings s = Parallel(2, 1, 1, 1);
    s.sp = true;
    s.seq = seq;
    LayerGraph g = OneNode(Micro(llama, s), path);
    for (Gemm& gm : g.layers[0].gemms) gm.grad_a = gm.grad_b = false;
    const StepTime t = TrainingStep(g, s, a100, 312e12, 0.8, 0, {.tp_overlap = overlap});
    REQUIRE(t.host < t.compute);
    return t.compute - t.optimizer;
  };
  CHECK(forward("blocks.0.mlp.gate", 2048, true) == doctest::Approx(2 * forward("blocks.0.mlp.gate", 1024, false)));
  CHECK(forward("blocks.0.mlp.down", 2048, true) == doctest::Approx(4 * forward("blocks.0.mlp.down", 512, false)));
  // Whole, the larger GEMMs run faster per row: the identities above are not trivially true.
  CHECK(forward("blocks.0.mlp.gate", 2048, false) < 2 * forward("blocks.0.mlp.gate", 1024, false));
  CHECK(forward("blocks.0.mlp.down", 2048, false) < 4 * forward("blocks.0.mlp.down", 512, false));
}

TEST_CASE("step: --ep-overlap pairs one micro-batch's forward with another's backward") {
  // Mixtral 8x7B, ep 8 on one A100 node, 4 micro-batches, no pipeline. A combined 1F1B runs
  // micro-batch i + 1's forward beside micro-batch i's backward: the forward's all-to-alls (2 of the
  // 4 a block runs) hide under the partner's backward compute, the backward's under its forward. The
  // first forward and the last backward have no partner: a quarter of the all-to-alls shows whole.
  // Over a 1 GB/s link each half outlasts its partner, so the exposed part is
  // A / 4 + 3/4 (A / 2 - backward + A / 2 - forward) = A - 3/4 of the GPU compute (the compute less
  // the optimizer step: the step is not host-bound).
  HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(1, 1, 8, 4);
  s.ep = 8;
  const ModelSpec spec = ResolveModel("mixtral-8x7b");
  Settings micro = s;
  micro.batch = 1;
  const LayerGraph g = ResolvedGraph(spec, micro);
  const uint64_t params = CountParams(g).trainable;
  const StepTime fast = TrainingStep(g, s, a100, 312e12, 0.8, params, {.ep_overlap = true});
  a100.intra_node_bandwidth = 1e9;
  const StepTime plain = TrainingStep(g, s, a100, 312e12, 0.8, params, {});
  const StepTime overlap = TrainingStep(g, s, a100, 312e12, 0.8, params, {.ep_overlap = true});
  const double gpu = overlap.compute - overlap.optimizer;
  REQUIRE(overlap.host < gpu);
  REQUIRE(plain.ep_comm / 2 > gpu);
  CHECK(plain.ep_exposed == plain.ep_comm);
  CHECK(overlap.ep_comm == plain.ep_comm);
  CHECK(overlap.ep_exposed == doctest::Approx(plain.ep_comm - 0.75 * gpu));
  CHECK(overlap.step_seconds ==
        doctest::Approx(plain.step_seconds - 0.75 * gpu - (plain.pipeline_bubble - overlap.pipeline_bubble)));
  // Over NVLink each half hides whole under its partner: only the unpaired quarter shows.
  REQUIRE(fast.ep_comm / 2 < (fast.compute - fast.optimizer) / 3);
  CHECK(fast.ep_exposed == doctest::Approx(fast.ep_comm / 4));
  // Two pipeline stages and 8 micro-batches: the first stage's warm-up forward and cool-down backward
  // (pp - 1 = 1 of 8 each way) have no partner: A / 8 + 7/8 (A - the stage's GPU compute).
  Settings piped = Parallel(1, 2, 8, 8);
  piped.ep = 8;
  const StepTime two = TrainingStep(g, piped, a100, 312e12, 0.8, params, {.ep_overlap = true});
  const double stage_gpu = two.compute - two.optimizer;
  REQUIRE(two.host < stage_gpu);
  CHECK(two.ep_exposed == doctest::Approx(two.ep_comm - 0.875 * stage_gpu));
}

TEST_CASE("step: --no-dp-overlap exposes the whole data-parallel reduction") {
  // Llama-2-7B on 8 A100 of one node, data parallel 8, 4 micro-batches: by default the gradients'
  // all-reduce runs under the last micro-batch's backward, so only its last bucket (or what
  // outlasts that backward) shows; without the overlap the step waits for all of it.
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  Settings s = Parallel(1, 1, 8, 4);
  const ModelSpec spec = ResolveModel("llama-2-7b");
  Settings micro = s;
  micro.batch = 1;
  const LayerGraph g = ResolvedGraph(spec, micro);
  const uint64_t params = CountParams(g).trainable;
  const StepTime overlap = TrainingStep(g, s, a100, 312e12, 0.8, params, {});
  const StepTime serial = TrainingStep(g, s, a100, 312e12, 0.8, params, {.dp_overlap = false});
  CHECK(overlap.dp_comm > 0);
  CHECK(overlap.dp_exposed < overlap.dp_comm);
  CHECK(serial.dp_comm == overlap.dp_comm);
  CHECK(serial.dp_exposed == serial.dp_comm);
  CHECK(serial.step_seconds == doctest::Approx(overlap.step_seconds + overlap.dp_comm - overlap.dp_exposed));
}

TEST_CASE("step: recomputation reruns the blocks' forward, never the embedding, head or loss") {
  // Hugging Face's gradient checkpointing wraps the decoder layers and Megatron-LM's the transformer
  // layers: the head and the loss run once. So what a full (or, with eager attention, selective)
  // recompute adds to the step is the same for a vocabulary of 51,200 as for one four times larger,
  // whose head and loss cost four times as much; and the selective one the same for an MLP twice as
  // wide, which it does not rerun. Eager kernels, so the loss is priced per logit. The power limit
  // apart (it changes with the step's GEMM share: its own test).
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  const auto added = [&](const std::string& yaml, Recompute recompute, Attention attention) {
    Settings s = Parallel(1, 1, 1, 1);
    s.attention = attention;
    Settings rerun = s;
    rerun.recompute = recompute;
    const LayerGraph none = Micro(yaml, s), again = Micro(yaml, rerun);
    const uint64_t params = CountParams(none).trainable;
    return TrainingStep(again, rerun, h100, 989.5e12, 0.785, params, {.power_limit = false}).compute -
           TrainingStep(none, s, h100, 989.5e12, 0.785, params, {.power_limit = false}).compute;
  };
  const std::string base = Gpt(1024, 8, 16);
  std::string big_vocab = base, wide_mlp = base;
  big_vocab.replace(big_vocab.find("51200"), 5, "204800");
  wide_mlp.replace(wide_mlp.find("d_ff: 4096"), 10, "d_ff: 8192");
  const double full = added(base, Recompute::kFull, Attention::kFlash);
  CHECK(full > 0);
  CHECK(added(big_vocab, Recompute::kFull, Attention::kFlash) == doctest::Approx(full).epsilon(1e-12));
  const double selective = added(base, Recompute::kSelective, Attention::kEager);
  CHECK(selective > 0);
  CHECK(added(big_vocab, Recompute::kSelective, Attention::kEager) == doctest::Approx(selective).epsilon(1e-12));
  CHECK(added(wide_mlp, Recompute::kSelective, Attention::kEager) == doctest::Approx(selective).epsilon(1e-12));
  // Under flash attention the scores are never stored: selective recomputation reruns nothing.
  CHECK(added(base, Recompute::kSelective, Attention::kFlash) == 0);
}

TEST_CASE("step: Korthikanti et al. 2022, Table 5, from the published configuration alone") {
  // arXiv 2205.05198, Table 3 (configuration: seq 2048, vocabulary 51,200, micro-batch 1, data
  // parallel 1, A100 80GB) and Table 5 ("present work": sequence parallelism + selective
  // recomputation; iteration time and MFU). Megatron-LM's fused kernels (--kernels fused); each
  // tolerance is the row's error rounded up to the next 5% (docs/validation-time.md: 0.92, 0.96, 1.03,
  // 1.03 of the published times).
  const Table5Row rows[] = {{"22B", 6144, 48, 64, 8, 1, 4, 1.10, 0.415, 0.10},
                            {"175B", 12288, 96, 96, 8, 8, 64, 13.75, 0.514, 0.05},
                            {"530B", 20480, 105, 128, 8, 35, 280, 37.83, 0.560, 0.05},
                            {"1T", 25600, 128, 160, 8, 64, 512, 71.49, 0.563, 0.05}};
  const HardwareSpec a100 = ResolveHardware("a100-80gb");
  for (const Table5Row& row : rows) {
    CAPTURE(row.name);
    Settings s = Parallel(row.tp, row.pp, 1, row.batch);
    s.sp = true;
    s.recompute = Recompute::kSelective;
    s.attention = Attention::kEager;  // Megatron-LM of 2022: fused softmax, no flash attention
    s.dropout = 0.1;                  // its default hidden and attention dropout (megatron/arguments.py)
    const LayerGraph g = Micro(Gpt(row.h, row.layers, row.heads), s);
    const StepTime st =
        TrainingStep(g, s, a100, *a100.Peak(GemmDType::kBf16), a100.gemm_efficiency.at(GemmDType::kBf16),
                     CountParams(g).trainable, {.kernels = Kernels::kFused});
    // scale(0): the tolerance relative to the value itself (doctest's default adds 1 to the scale).
    CHECK(st.step_seconds == doctest::Approx(row.seconds).epsilon(row.tolerance).scale(0));
    // MFU: model FLOPs (attention whole) / (time x devices x peak).
    const FlopCounts f = CountFlops(g);
    const double model = static_cast<double>(f.forward + f.backward) * static_cast<double>(row.batch);
    const double mfu = model / (st.step_seconds * static_cast<double>(s.gpus) * 312e12);
    CHECK(mfu == doctest::Approx(row.mfu).epsilon(row.tolerance / (1 - row.tolerance)).scale(0));  // MFU ∝ 1 / time
  }
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST_CASE("step: PyTorch's AdamW costs its measured passes whatever --kernels, a master copy's update one pass") {
  // torch.compile compiles the model and leaves the optimizer to PyTorch: on bf16 weights (no fp32
  // master) the update is PyTorch's AdamW as measured for --optimizer-impl under fused kernels too;
  // with a master copy (Megatron-LM's distributed optimizer, DeepSpeed) it is one fused pass either way.
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  Settings s = Parallel(1, 1, 1, 1);
  s.dtypes = PolicyDtypes(Precision::kBf16);
  s.precision = Precision::kBf16;
  const LayerGraph g = Micro(Gpt(1024, 8, 16), s);
  const uint64_t params = CountParams(g).trainable;
  const auto update = [&](const Settings& settings, Kernels kernels) {
    return TrainingStep(g, settings, h100, 989.5e12, 0.8, params, {.kernels = kernels}).optimizer;
  };
  const double eager = update(s, Kernels::kEager);
  CHECK(update(s, Kernels::kFused) == doctest::Approx(eager).epsilon(1e-12));
  Settings fused_impl = s;
  fused_impl.optimizer_impl = OptimizerImpl::kFused;
  CHECK(update(fused_impl, Kernels::kFused) < eager);  // 9 bytes a parameter where foreach moves 32
  Settings mixed = s;
  mixed.dtypes = PolicyDtypes(Precision::kMixedBf16);
  mixed.precision = Precision::kMixedBf16;
  // bf16 gradient, bf16 weight and fp32 master and two states read and written: 2 + 2·2 + 2·4 + 2·8.
  CHECK(update(mixed, Kernels::kFused) == doctest::Approx(static_cast<double>(params) * 30 / (0.8 * 3.35e12)));
  CHECK(update(mixed, Kernels::kEager) == doctest::Approx(update(mixed, Kernels::kFused)));
}

}  // namespace
}  // namespace tally
