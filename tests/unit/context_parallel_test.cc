// Context parallelism (--cp, estimate/context_parallel.h): Llama-3.1-8B at 131,072 tokens split over
// 1 and 4 ranks, against values derived by hand from the model card and the hardware catalog.
#include "estimate/context_parallel.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

nlohmann::json Json(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "json"});
  const testing::TallyRun run = testing::RunTally(args);
  REQUIRE(run.code == 0);
  return nlohmann::json::parse(run.out);
}

std::vector<std::string> Args(const char* command, const char* cp, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {command,  "llama-3.1-8b", "--mode", "train", "--seq",
                                "131072", "--gpus",       "8",      "--cp",  cp};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Llama-3.1-8B (Meta's model card: 8,030,261,248 parameters; config.json: 32 layers, 8 K/V heads of
// head_dim 128), h100-sxm (catalog: NVLink 4 at 18 x 25 GB/s per direction, of which NCCL moves
// 18 x 20.6; 400 Gb/s NDR = 50 GB/s per GPU across nodes).
constexpr double kParams = 8'030'261'248;
constexpr double kLayers = 32, kNvlink = testing::kH100NcclNvlink, kInfiniBand = 50e9;
// One hop: K and V of s/cp = 32,768 tokens x 8 heads x 128 x 2 bytes (bf16), micro-batch 1.
constexpr double kHop = 2.0 * 32768 * 8 * 128 * 2;
static_assert(kHop == 134'217'728);  // 128 MiB

TEST_CASE("cp: each rank keeps s/cp of the activations — ZeRO shards over dp x cp") {
  const nlohmann::json one = Json(Args("memory", "1", {"--zero", "1"}));
  const nlohmann::json four = Json(Args("memory", "4", {"--zero", "1"}));
  const nlohmann::json& m1 = one["memory"]["train"];
  const nlohmann::json& m4 = four["memory"]["train"];
  // By hand, per token of a block (memory_test's node-by-node Llama-2 tally, with grouped-query K and V
  // of 8 x 128 = 1,024 wide): two RMSNorms, fp32 x and the normalized x (2 x 6h; PyTorch 2's mean keeps
  // no x², graph/node_costs.h) and fp32 rstd (2 x 4); q (2h), k and v (2 x 2 x 1,024); the qkv and
  // gate/up inputs (2h + 2h); the flash output (2h); gate, silu(gate), up and their product (4 x 2f);
  // log-sum-exp (4a). Outside the blocks: the final norm (6h + 4), the head's input (2h) and the loss's
  // fp32 log-probabilities (4 x vocab).
  constexpr uint64_t h = 4096, f = 14336, a = 32, vocab = 128256;
  constexpr uint64_t block = 20 * h + 4 * 1024 + 8 + 8 * f + 4 * a;  // 200,840 B
  constexpr uint64_t outside = 8 * h + 4 + 4 * vocab;
  CHECK(one["activations"]["per_layer"].get<uint64_t>() == 131072 * block);
  CHECK(four["activations"]["per_layer"].get<uint64_t>() == 32768 * block);  // s/cp tokens
  CHECK(m1["activations"].get<uint64_t>() == 131072 * (32 * block + outside));
  CHECK(m4["activations"].get<uint64_t>() == 32768 * (32 * block + outside));
  // Every saved tensor is linear in the tokens under flash attention: a quarter of them, exactly.
  CHECK(m1["activations"].get<uint64_t>() % 4 == 0);
  CHECK(m4["activations"].get<uint64_t>() == m1["activations"].get<uint64_t>() / 4);
  CHECK(four["activations"]["per_layer"].get<uint64_t>() == one["activations"]["per_layer"].get<uint64_t>() / 4);
  // Korthikanti et al.'s formula follows the same s/cp: the ratio to it does not move.
  CHECK(four["activations"]["korthikanti_ratio"].get<double>() ==
        doctest::Approx(one["activations"]["korthikanti_ratio"].get<double>()));
  // Weights and gradients replicate over the context-parallel ranks: 2 bytes a parameter (bf16).
  CHECK(m4["weights"].get<double>() == 2 * kParams);
  CHECK(m4["gradients"].get<double>() == 2 * kParams);
  // ZeRO-1 splits the fp32 master copy (4 B) and AdamW's two fp32 states (8 B) over dp x cp =
  // 2 x 4 = 8 ranks (Megatron-Core's distributed optimizer spans the data- and context-parallel
  // group), as it does over dp = 8 without --cp.
  CHECK(four["settings"]["dp"] == 2);
  CHECK(m4["master_weights"].get<double>() == 4 * kParams / 8);
  CHECK(m4["optimizer"].get<double>() == 8 * kParams / 8);
  CHECK(m1["optimizer"] == m4["optimizer"]);
}

TEST_CASE("cp: the K/V ring's hops, by hand from the catalog's bandwidth") {
  const nlohmann::json t = Json(Args("time", "4", {"--hardware", "h100-sxm"}))["time"];
  CHECK(t["comm"]["cp_hop_bytes"].get<double>() == kHop);
  // tp x cp = 4 <= 8 GPUs a node: NVLink. Per block, (cp - 1) = 3 hops forward and 2 (cp - 1) = 6
  // backward; 32 blocks, one micro-batch.
  const double ring = 9 * kHop / kNvlink * kLayers;  // 104.25 ms
  CHECK(t["comm"]["cp_seconds"].get<double>() == doctest::Approx(ring).epsilon(1e-12));
  // At 131,072 tokens a block's attention core (a quarter of 4·s²·h/2 causal FLOPs = 3.5e13, tens of
  // ms) hides its 3 hops (0.9 ms) forward and 6 backward: nothing exposed.
  CHECK(t["breakdown"]["cp_ring"].get<double>() == 0);
  // The gradients reduce over dp x cp = 8 ranks inside the node: 2 (n - 1) / n x 2 bytes x P, in
  // 25 MiB buckets, each by NVLS (the switches reduce): 25 us and 476 GB/s of bus bandwidth, where a
  // ring would take 14 steps at the link's 370.8.
  const double buckets = testing::Buckets(2 * kParams), wire = 2 * 7.0 / 8 * 2 * kParams;
  CHECK(t["comm"]["dp_seconds"].get<double>() ==
        doctest::Approx(testing::NcclNvls(buckets, wire, testing::kH100x8Nvls)).epsilon(1e-12));
  CHECK(testing::NcclNvls(buckets, wire, testing::kH100x8Nvls) < testing::NcclRing(14, 0, buckets, wire, kNvlink));

  // time is training time unless --mode infer: the same ring without --mode train.
  const nlohmann::json plain =
      Json({"time", "llama-3.1-8b", "--seq", "131072", "--gpus", "8", "--cp", "4", "--hardware", "h100-sxm"})["time"];
  CHECK(plain["comm"]["cp_seconds"] == t["comm"]["cp_seconds"]);

  // --tp 2: a rank passes its 4 of the 8 K/V heads (Megatron-LM docs: "KV communication happens between
  // a GPU and its counterparts in other TP groups"); tp x cp = 8 still fits a node.
  const nlohmann::json tp = Json(Args("time", "4", {"--tp", "2", "--hardware", "h100-sxm"}))["time"];
  CHECK(tp["comm"]["cp_hop_bytes"].get<double>() == kHop / 2);
  CHECK(tp["comm"]["cp_seconds"].get<double>() == doctest::Approx(ring / 2).epsilon(1e-12));

  // Two GPUs a node: the ring of 4 spans nodes and runs over InfiniBand.
  const nlohmann::json inter = Json(Args("time", "4", {"--hardware", "h100-sxm", "--gpus-per-node", "2"}))["time"];
  CHECK(inter["comm"]["cp_seconds"].get<double>() == doctest::Approx(9 * kHop / kInfiniBand * kLayers).epsilon(1e-12));
}

TEST_CASE("cp: a short sequence exposes the ring — the step sums its parts") {
  // At 8,192 tokens over 8 ranks on one GPU a node, a hop is 2 x 1,024 x 8 x 128 x 2 bytes = 4 MiB at
  // 50 GB/s, against a block's attention core on 1,024 queries: the ring outlasts it.
  const std::vector<std::string> a = {
      "time", "llama-3.1-8b", "--mode",   "train",           "--seq", "8192", "--gpus", "8", "--cp",
      "8",    "--hardware",   "h100-sxm", "--gpus-per-node", "1"};
  const nlohmann::json t = Json(a)["time"];
  const double hop = 2.0 * 1024 * 8 * 128 * 2;
  CHECK(t["comm"]["cp_hop_bytes"].get<double>() == hop);
  const double ring = 3 * 7 * hop / kInfiniBand * kLayers;
  CHECK(t["comm"]["cp_seconds"].get<double>() == doctest::Approx(ring).epsilon(1e-12));
  const double exposed = t["breakdown"]["cp_ring"].get<double>();
  CHECK(exposed > 0);
  CHECK(exposed < ring);
  CHECK(t["breakdown"]["communication"].get<double>() ==
        doctest::Approx(t["comm"]["tp_seconds"].get<double>() + t["comm"]["pp_seconds"].get<double>() +
                        t["comm"]["dp_exposed_seconds"].get<double>() + exposed));
}

TEST_CASE("cp: compute per device is the s/cp tokens' share") {
  // One replica on 1 device vs split over 4 (no data parallelism, so the same optimizer update):
  // 131,072 / 4 = 32,768 rows fill the 128-row tiles, every GEMM stays compute-bound and the
  // attention core splits evenly, so everything but the update is a quarter. The power limit apart:
  // the ring's exposed hops lower the GEMMs' share of the step, and with it the clock's loss.
  const auto compute = [](const char* gpus, const char* cp) {
    const nlohmann::json t = Json({"time", "llama-3.1-8b", "--mode", "train", "--seq", "131072", "--gpus", gpus, "--cp",
                                   cp, "--hardware", "h100-sxm", "--no-power-limit"})["time"];
    return t["breakdown"]["compute"].get<double>();
  };
  const nlohmann::json one = Json({"time", "llama-3.1-8b", "--mode", "train", "--seq", "131072", "--hardware",
                                   "h100-sxm", "--no-power-limit"})["time"];
  // The AdamW update, memory-bound at 0.8 x 3.35 TB/s: per parameter it reads the bf16 gradient and
  // weight and the fp32 master and two states and writes the weight, master and states
  // (2 + 2·2 + 2·4 + 2·8 = 30 bytes).
  const double update = kParams * 30 / (0.8 * 3.35e12);
  CHECK(compute("4", "4") - update == doctest::Approx((compute("1", "1") - update) / 4).epsilon(1e-9));
  CHECK(one["breakdown"]["compute"].get<double>() == compute("1", "1"));
}

TEST_CASE("cp: fit searches the sequence in whole load-balanced chunks and keeps ZeRO's dp x cp") {
  // The longest sequence is a multiple of 2·cp = 8 (a shorter one would be refused), and 8 more tokens
  // no longer fit.
  const nlohmann::json fit = Json({"fit", "llama-3.1-8b", "--memory", "80GiB", "--solve", "seq", "--gpus", "8", "--cp",
                                   "4", "--zero", "3", "--seq", "8192"});
  const uint64_t seq = fit["fit"]["seq"].get<uint64_t>();
  CHECK(seq % 8 == 0);
  CHECK(seq > 8192);
  // fit compares what the device holds: the step's peak and the device's overheads.
  const auto device = [](uint64_t s) {
    return Json({"memory", "llama-3.1-8b", "--mode", "train", "--gpus", "8", "--cp", "4", "--zero", "3", "--seq",
                 std::to_string(s)})["memory"]["train"]["device"]
        .get<uint64_t>();
  };
  CHECK(device(seq) <= (uint64_t{80} << 30));
  CHECK(device(seq + 8) > (uint64_t{80} << 30));
}

TEST_CASE("cp: what cannot be split or modelled exits 2 naming --cp") {
  const auto refused = [](std::vector<std::string> args, const std::string& says) {
    const testing::TallyRun run = testing::RunTally(args);
    CHECK(run.code == 2);
    CHECK(run.err.rfind("tally: error: --cp: ", 0) == 0);
    CHECK(run.err.find(says) != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  };
  refused(Args("memory", "3"), "do not divide --gpus / (--tp x --pp) = 8 devices");
  refused(Args("memory", "16"), "do not divide --gpus / (--tp x --pp) = 8 devices");
  // Megatron-Core's load balancing cuts the sequence into 2·cp chunks.
  refused({"memory", "llama-3.1-8b", "--mode", "train", "--seq", "131068", "--gpus", "8", "--cp", "4"},
          "not a multiple of 8");
  refused(Args("memory", "4", {"--attention", "eager"}), "fused (flash) attention");
  refused({"memory", "llama-3.1-8b", "--seq", "131072", "--gpus", "8", "--cp", "4"}, "training only");
  refused({"memory", "mistral-7b", "--mode", "train", "--gpus", "8", "--cp", "4"}, "sliding-window attention");
  const testing::TallyRun zero = testing::RunTally(Args("memory", "0"));
  CHECK(zero.code == 2);
  CHECK(zero.err.find("--cp") != std::string::npos);
}

}  // namespace
}  // namespace tally
