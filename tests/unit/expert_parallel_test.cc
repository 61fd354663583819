// Expert parallelism (--ep, estimate/expert_parallel.h): the routed experts' share of memory per
// device, ZeRO over the expert-data-parallel group, the dispatch and combine all-to-alls, the
// expert gradients' reduction over dp / ep ranks, and the refusals; every figure derived by hand.
#include "estimate/expert_parallel.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "config/hardware.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::RunJson;

// Mixtral 8x7B (Jiang et al. 2024; Hugging Face config: d_model 4096, 32 blocks, 32 query and 8
// K/V heads of 128, 8 SwiGLU experts of width 14336, vocabulary 32,000, untied head, no biases).
// A block: attention 2 · 4096² + 2 · 4096 · 1024, router 4096 · 8, experts 8 · 3 · 4096 · 14336,
// two RMSNorms 2 · 4096; outside: embedding and head 32,000 · 4096 each, the final norm 4096. The
// published total is 46.7 B.
constexpr uint64_t kMixtralExperts = 32ULL * 8 * 3 * 4096 * 14336;
constexpr uint64_t kMixtralRest =
    32ULL * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 4096) + 2ULL * 32000 * 4096 + 4096;
static_assert(kMixtralExperts + kMixtralRest == 46'702'792'704);

// tests/data/moe_ep.yaml: d_model 64, 4 heads, 4 blocks, the first dense (SwiGLU 128), then 3 MoE
// blocks of 4 routed SwiGLU experts of width 32 (top-2) beside a shared SwiGLU expert of width 64;
// vocabulary 1000, untied head. Routed experts: 3 · 4 · 3 · 64 · 32. The rest: attention 4 · 64²
// and two norms per block, the dense MLP 3 · 64 · 128, per MoE block a router 64 · 4 and the shared
// expert 3 · 64 · 64, embedding and head 1000 · 64 each, the final norm 64 (tally params: 330,048).
constexpr uint64_t kTinyExperts = 3ULL * 4 * 3 * 64 * 32;
constexpr uint64_t kTinyRest =
    4ULL * (4 * 64 * 64 + 2 * 64) + 3 * 64 * 128 + 3ULL * (64 * 4 + 3 * 64 * 64) + 2 * 1000 * 64 + 64;
static_assert(kTinyExperts + kTinyRest == 330'048);

std::string Tiny() { return (std::filesystem::path(TALLY_TEST_DATA) / "moe_ep.yaml").string(); }

nlohmann::json Train(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> args = {"memory", model, "--mode", "train", "--seq", "256"};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunJson(args)["memory"]["train"];
}

// What NCCL moves per direction over an H100's NVLink (tests/unit/test_util.h).
constexpr double kNvlink = testing::kH100NcclNvlink;

TEST_CASE("ep: Mixtral's routed experts split over the expert-parallel ranks, the rest replicated") {
  // mixed-bf16, AdamW: 2-byte weights and gradients, a 4-byte master copy, two 4-byte states per
  // trainable parameter (docs/memory.md). 8 devices, no ZeRO: without --ep every device holds all
  // of it; with --ep 8 one expert of each block, E / 8.
  const nlohmann::json whole = Train("mixtral-8x7b", {"--gpus", "8"});
  const nlohmann::json split = Train("mixtral-8x7b", {"--gpus", "8", "--ep", "8"});
  const uint64_t all = kMixtralExperts + kMixtralRest, local = kMixtralExperts / 8 + kMixtralRest;
  CHECK(whole["weights"] == 2 * all);
  CHECK(whole["gradients"] == 2 * all);
  CHECK(whole["master_weights"] == 4 * all);
  CHECK(whole["optimizer"] == 8 * all);
  CHECK(split["weights"] == 2 * local);
  CHECK(split["weights"] == 14'485'561'344);
  CHECK(split["gradients"] == 2 * local);
  CHECK(split["master_weights"] == 4 * local);
  CHECK(split["optimizer"] == 8 * local);
  // The tokens a device's experts take are, balanced, as many as its own: the activations stay.
  CHECK(split["activations"] == whole["activations"]);
}

TEST_CASE("ep: ZeRO shards the experts over the dp / ep ranks holding them, the rest over dp") {
  // 16 devices, --ep 8: dp 16, the expert-data-parallel group 2. ZeRO-1: master and states are
  // (rest) / 16 + (E / 8) / 2 = P / 16, what ZeRO-1 gives without --ep; the weights and gradients
  // stay E / 8 + rest. ZeRO-3 shards the weights the same way.
  const nlohmann::json z1 = Train("mixtral-8x7b", {"--gpus", "16", "--ep", "8", "--zero", "1"});
  CHECK(z1["weights"] == 2 * (kMixtralExperts / 8 + kMixtralRest));
  CHECK(z1["master_weights"] == 4 * kMixtralRest / 16 + 4 * (kMixtralExperts / 8) / 2);
  CHECK(z1["optimizer"] == 8 * kMixtralRest / 16 + 8 * (kMixtralExperts / 8) / 2);
  CHECK(z1["optimizer"] == Train("mixtral-8x7b", {"--gpus", "16", "--zero", "1"})["optimizer"]);
  const nlohmann::json z3 = Train(Tiny(), {"--gpus", "8", "--ep", "2", "--zero", "3"});
  // Tiny: 2-byte weights, rest / 8 and (E / 2) / 4, each rounded up on its own.
  CHECK(z3["weights"] == (2 * kTinyRest + 7) / 8 + 2 * (kTinyExperts / 2) / 4);
  CHECK(z3["gradients"] == (2 * kTinyRest + 7) / 8 + 2 * (kTinyExperts / 2) / 4);
}

TEST_CASE(
    "ep: a synthetic MoE: shared experts, router and the dense block are not split, and --tp splits the experts too") {
  const nlohmann::json split = Train(Tiny(), {"--gpus", "4", "--ep", "4"});
  CHECK(split["weights"] == 2 * (kTinyRest + kTinyExperts / 4));
  CHECK(split["optimizer"] == 8 * (kTinyRest + kTinyExperts / 4));
  // --tp 2 (Megatron: q, k, v, gate, up split by columns, out and down by rows, norms and router
  // replicated; the experts' tensors likewise), --gpus 8 --ep 4: each device holds E / 4 / 2.
  const uint64_t rest_tp =
      4ULL * (4 * 64 * 64 / 2 + 2 * 64) + 3 * 64 * 128 / 2 + 3ULL * (64 * 4 + 3 * 64 * 64 / 2) + 2 * 1000 * 64 / 2 + 64;
  const nlohmann::json tp = Train(Tiny(), {"--gpus", "8", "--tp", "2", "--ep", "4"});
  CHECK(tp["weights"] == 2 * (rest_tp + kTinyExperts / 4 / 2));
}

TEST_CASE("ep: inference weights per device under --ep") {
  // memory --mode infer: bf16 weights, Mixtral's experts / 2 on each of 2 devices.
  const nlohmann::json m = RunJson(
      {"memory", "mixtral-8x7b", "--mode", "infer", "--seq", "1024", "--gpus", "2", "--ep", "2"})["memory"]["infer"];
  CHECK(m["weights"] == 2 * (kMixtralExperts / 2 + kMixtralRest));
}

nlohmann::json Time(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> args = {"time", model, "--hardware", "h100-sxm", "--tokens", "1e9"};
  if (std::find(extra.begin(), extra.end(), "--seq") == extra.end()) extra.insert(extra.end(), {"--seq", "4096"});
  args.insert(args.end(), extra.begin(), extra.end());
  return RunJson(args)["time"];
}

TEST_CASE("ep: the dispatch and combine all-to-alls, by hand from the catalog's bandwidths") {
  // configs/hardware/h100-sxm.yaml: NVLink 450 GB/s per direction inside a node, of which NCCL moves
  // 18 links x 20.6 GB/s = 370.8 (kNvlink), 50 GB/s (400 Gb/s InfiniBand) across nodes.
  const HardwareSpec h100 = ResolveHardware("h100-sxm");
  REQUIRE(h100.intra_node_bandwidth == 450e9);
  REQUIRE(h100.IntraNodeCollectiveBandwidth() == doctest::Approx(kNvlink));
  REQUIRE(h100.inter_node_bandwidth == 50e9);
  // Mixtral, micro-batch 1 of 4096 tokens, top-2, hidden 4096, bf16 activations: each all-to-all
  // moves 4096 · 2 · 4096 · 2 B, 7/8 of it off the device; 4 per block (dispatch, combine, forward and
  // backward), 32 blocks. tp · ep = 8 fits the 8-device node: NVLink.
  const double bytes = 4096.0 * 2 * 4096 * 2 * 7 / 8;
  const nlohmann::json intra = Time("mixtral-8x7b", {"--gpus", "8", "--ep", "8"});
  CHECK(intra["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(4 * 32 * bytes / kNvlink));
  // With 4 devices per node the group spans two nodes: of the 8 equal shares, 3 go to the node's
  // other devices over NVLink (3/8 at 370.8 GB/s) while 4 cross InfiniBand (4/8 at 50 GB/s), which
  // takes longer. A full recompute runs the forward's two again: 6 per block. Two micro-batches
  // (--grad-accum 2): twice.
  const double copies = 4096.0 * 2 * 4096 * 2;
  const nlohmann::json inter = Time("mixtral-8x7b", {"--gpus", "8", "--ep", "8", "--gpus-per-node", "4"});
  CHECK(inter["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(4 * 32 * copies * 4 / 8 / 50e9));
  // With 2 a node (--etp 2 of --tp 2 would give the same): 1 share over NVLink, 6 over InfiniBand.
  const nlohmann::json pairs = Time("mixtral-8x7b", {"--gpus", "8", "--ep", "8", "--gpus-per-node", "2"});
  CHECK(pairs["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(4 * 32 * copies * 6 / 8 / 50e9));
  const nlohmann::json full =
      Time("mixtral-8x7b", {"--gpus", "8", "--ep", "8", "--recompute", "full", "--grad-accum", "2", "--batch", "2"});
  CHECK(full["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(2 * 6 * 32 * bytes / kNvlink));
  // It is part of the exposed communication and of the step.
  const double parts = intra["breakdown"]["compute"].get<double>() + intra["breakdown"]["communication"].get<double>() +
                       intra["breakdown"]["pipeline_bubble"].get<double>();
  CHECK(intra["step_seconds"].get<double>() == doctest::Approx(parts));
  CHECK(intra["breakdown"]["communication"].get<double>() ==
        doctest::Approx(intra["comm"]["dp_exposed_seconds"].get<double>() +
                        intra["breakdown"]["ep_all_to_all"].get<double>()));
  // Without --ep: no all-to-all.
  CHECK(Time("mixtral-8x7b", {"--gpus", "8"})["breakdown"]["ep_all_to_all"].is_null());
  // The synthetic MoE: 3 MoE blocks of 4096 · 2 · 64 · 2 B, half of it off the device with --ep 2.
  const nlohmann::json tiny = Time(Tiny(), {"--gpus", "2", "--ep", "2", "--seq", "256"});
  CHECK(tiny["breakdown"]["ep_all_to_all"].get<double>() ==
        doctest::Approx(4 * 3 * 256.0 * 2 * 64 * 2 / 2 / kNvlink).scale(0));
}

TEST_CASE("ep: --ep-dispatch deepep sends a token across nodes once per other node it reaches") {
  // Balanced top-k routing over E experts spread evenly over N nodes: a node other than the token's
  // own gets it unless none of its k experts is there, C(E - E/N, k) / C(E, k). DeepSeek-V3 on 8
  // nodes (256 experts, top-8, 32 a node): 1 - C(224, 8) / C(256, 8) = 1 - 185207696947 /
  // 547678737000 per other node, 4.6328 of the 7 (NCCL's all-to-all sends 8 copies, 7 of them away).
  CHECK(RemoteNodesPerToken(256, 8, 8) == doctest::Approx(7.0 * (1 - 185'207'696'947.0 / 547'678'737'000.0)));
  CHECK(RemoteNodesPerToken(256, 8, 1) == 0);
  // Mixtral (8 experts, top-2) on 8 devices in nodes of 4, ep 8: the other node holds 4 of the 8
  // experts and gets a token unless both its experts are local, C(4, 2) / C(8, 2) = 6/28: 22/28 of a
  // token's 4096 · 2 B cross InfiniBand (NCCL's: 2 copies, half of them away, one token's worth);
  // the 3/8 of the copies for the node's peers take far less over NVLink. 4 per block, 32 blocks.
  const nlohmann::json deepep =
      Time("mixtral-8x7b", {"--gpus", "8", "--ep", "8", "--gpus-per-node", "4", "--ep-dispatch", "deepep"});
  CHECK(deepep["comm"]["ep_seconds"].get<double>() == doctest::Approx(4 * 32 * 4096.0 * 4096 * 2 * 22 / 28 / 50e9));
  // Inside one node DeepEP moves what NCCL does, and says so.
  const testing::TallyRun one =
      testing::RunTally({"time", "mixtral-8x7b", "--hardware", "h100-sxm", "--gpus", "8", "--ep", "8", "--ep-dispatch",
                         "deepep", "--tokens", "1e9", "--seq", "4096"});
  CHECK(one.err.find("--ep-dispatch deepep changes nothing here") != std::string::npos);
  CHECK(testing::RunTally({"time", "mixtral-8x7b", "--ep-dispatch", "nvshmem"}).code == 2);
}

TEST_CASE("ep: --moe-imbalance sets every MoE layer at the busiest rank's load, up to every token on it") {
  // Mixtral on 8 devices in nodes of 4, ep 8, one micro-batch of 4096 tokens. Balanced: 4 all-to-alls
  // per block, 32 blocks, each 4096 · 2 · 4096 · 2 B with 4/8 of it to the other node at 50 GB/s. The
  // busiest rank receiving 1.5 times the mean copies receives and returns 1.5 times the bytes.
  const std::vector<std::string> base = {"--gpus", "8", "--ep", "8", "--gpus-per-node", "4"};
  std::vector<std::string> hot = base;
  hot.insert(hot.end(), {"--moe-imbalance", "1.5"});
  const nlohmann::json even = Time("mixtral-8x7b", base), busy = Time("mixtral-8x7b", hot);
  const double a2a = 4 * 32 * 4096.0 * 2 * 4096 * 2 * 4 / 8 / 50e9;
  CHECK(even["comm"]["ep_seconds"].get<double>() == doctest::Approx(a2a));
  CHECK(busy["comm"]["ep_seconds"].get<double>() == doctest::Approx(1.5 * a2a));
  CHECK(busy["comm"]["moe_imbalance"].get<double>() == 1.5);
  // Its grouped GEMMs do half as many FLOPs again: the routed experts' forward and backward,
  // 6 · 4096 tokens · 2 copies · 3 · 4096 · 14336 · 32 blocks = 2.77e14 FLOPs on the device, half of
  // which take at least 1.4e14 / 989 TFLOP/s (the bf16 peak) more. The model's FLOPs do not change.
  const double routed = 6.0 * 4096 * 2 * 3 * 4096 * 14336 * 32;
  CHECK(busy["breakdown"]["compute"].get<double>() - even["breakdown"]["compute"].get<double>() >
        0.5 * routed / 989.4e12);
  CHECK(busy["compute_flops"] == even["compute_flops"]);
  // The most: a rank's one expert of 8 takes at most 1 of a token's 2 copies, the mean 2 / 8:
  // 8 · min(2, 8 / 8) / 2 = 4.
  std::vector<std::string> most = base, past = base;
  most.insert(most.end(), {"--moe-imbalance", "4"});
  past.insert(past.end(), {"--moe-imbalance", "4.01"});
  CHECK(Time("mixtral-8x7b", most)["comm"]["moe_imbalance"].get<double>() == 4);
  std::vector<std::string> args = {"time",     "mixtral-8x7b", "--hardware", "h100-sxm",
                                   "--tokens", "1e9",          "--seq",      "4096"};
  args.insert(args.end(), past.begin(), past.end());
  const testing::TallyRun refused = testing::RunTally(args);
  CHECK(refused.code == 2);
  CHECK(refused.err.find("--moe-imbalance: at most 4 with --ep 8") != std::string::npos);
  CHECK(testing::RunTally({"time", "mixtral-8x7b", "--moe-imbalance", "0.9"}).code == 2);
  // Without --ep every device computes every expert's tokens: nothing to wait for, and it says so.
  const testing::TallyRun alone = testing::RunTally(
      {"time", "mixtral-8x7b", "--hardware", "h100-sxm", "--gpus", "8", "--tokens", "1e9", "--moe-imbalance", "2"});
  CHECK(alone.err.find("--moe-imbalance changes nothing without --ep") != std::string::npos);
}

TEST_CASE("ep: --ep-overlap hides the all-to-alls under another micro-batch's compute") {
  // Mixtral on 8 devices in nodes of 4, the all-to-alls bound by InfiniBand: 4 per block, 32 blocks,
  // each 4096 · 2 · 4096 · 2 B, 4/8 of it to the other node, at 50 GB/s: 0.086 s a micro-batch; 4
  // micro-batches. The power limit apart: it changes with the share of the step the GEMMs take,
  // which the exposed all-to-alls lower (its own test).
  const std::vector<std::string> flags = {"--gpus",       "8", "--ep",    "8", "--gpus-per-node", "4",
                                          "--grad-accum", "4", "--batch", "4", "--no-power-limit"};
  std::vector<std::string> overlapped = flags;
  overlapped.push_back("--ep-overlap");
  const nlohmann::json plain = Time("mixtral-8x7b", flags);
  const nlohmann::json hidden = Time("mixtral-8x7b", overlapped);
  const double whole = 4 * (4 * 32 * 4096.0 * 2 * 4096 * 2 * 4 / 8 / 50e9);
  CHECK(plain["comm"]["ep_seconds"].get<double>() == doctest::Approx(whole));
  CHECK(hidden["comm"]["ep_seconds"].get<double>() == doctest::Approx(whole));
  CHECK(plain["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(whole));
  // Overlapped, a combined 1F1B pairs each micro-batch's forward with another's backward: each half
  // of the all-to-alls hides under its partner's compute (the forward's under a backward, which is
  // longer; the backward's under a forward, here still longer than it), but the first forward and
  // the last backward have no partner: a quarter shows, and the step is shorter by the rest.
  const double forward_compute =
      (hidden["breakdown"]["compute"].get<double>() - hidden["compute"]["optimizer"].get<double>()) / 3;
  REQUIRE(forward_compute > whole / 2);
  CHECK(hidden["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(whole / 4));
  CHECK(hidden["step_seconds"].get<double>() == doctest::Approx(plain["step_seconds"].get<double>() - 0.75 * whole));
  // One micro-batch has no other in flight to hide under: exposed whole.
  const nlohmann::json one = Time("mixtral-8x7b", {"--gpus", "8", "--ep", "8", "--gpus-per-node", "4", "--ep-overlap"});
  CHECK(one["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(whole / 4));
}

TEST_CASE("ep: the experts' gradients are reduced over the dp / ep ranks holding them") {
  // Mixtral, 16 devices (two nodes: InfiniBand, 50 GB/s a NIC, of which NCCL's collectives reach
  // 330.93 / 400: nccl-tests, github.com/aigatech/vpbenchmarking), --ep 8: bf16 gradients, the rest's
  // ring all-reduce over 16 ranks 2 · 15/16 · 2 · rest on the NICs of its 8 members a node, the
  // experts' (E / 8 per device) over 2 ranks 2 · 1/2 · 2 · E / 8, one member a node: one NIC
  // (Patarasuk & Yuan 2009).
  const double nic = 50e9 * 330.93 / 400;
  const nlohmann::json t = Time("mixtral-8x7b", {"--gpus", "16", "--ep", "8"});
  const double rest = 2.0 * static_cast<double>(kMixtralRest), experts = 2.0 * static_cast<double>(kMixtralExperts);
  // Each in 25 MiB buckets, a call of 30 ring steps (2 between the nodes) or 2 (both between them: the
  // two ranks holding the same experts sit a node apart).
  CHECK(t["comm"]["dp_seconds"].get<double>() ==
        doctest::Approx(testing::NcclRing(30, 2, testing::Buckets(rest), 2 * 15.0 / 16 * rest, 8 * nic) +
                        testing::NcclRing(2, 2, testing::Buckets(experts / 8), 2 * 1.0 / 2 * experts / 8, nic)));
  // --tp 2 leaves dp 8 = ep: each expert lives on one rank of its group, nothing to reduce for it; the
  // rest's 8 ranks sit tp = 2 apart, 4 a node: 4 NICs.
  const nlohmann::json alone = Time("mixtral-8x7b", {"--gpus", "16", "--ep", "8", "--tp", "2"});
  const double rest_tp = rest / 2;  // the step's terms take parameters / tp
  CHECK(alone["comm"]["dp_seconds"].get<double>() ==
        doctest::Approx(testing::NcclRing(14, 2, testing::Buckets(rest_tp), 2 * 7.0 / 8 * rest_tp, 4 * nic)));
}

TEST_CASE("ep with ZeRO-3: the experts' scatters and gathers run over the ranks holding them") {
  // Mixtral on 16 H100 (two nodes), --ep 8 --zero 3, one micro-batch: the rest's gradients
  // reduce-scattered over the 16 ranks (8 a node, 8 NICs at nccl-tests' share) block by block (32
  // calls, FSDP's units), its parameters gathered block by block, forward and backward (2 x 32 calls
  // of bf16); the routed experts' (E / 8 a device) over the 2 ranks holding them, a node apart (one
  // NIC), in as many calls. Each ring: n - 1 steps, one between the nodes.
  const nlohmann::json t = Time("mixtral-8x7b", {"--gpus", "16", "--ep", "8", "--zero", "3"});
  const double nic = 50e9 * 330.93 / 400;
  const double rest = 2.0 * static_cast<double>(kMixtralRest), experts = 2.0 * static_cast<double>(kMixtralExperts) / 8;
  const double scatters =
      testing::NcclRing(15, 1, 32, 15.0 / 16 * rest, 8 * nic) + testing::NcclRing(1, 1, 32, 1.0 / 2 * experts, nic);
  const double gathers = testing::NcclRing(15, 1, 64, 15.0 / 16 * 2 * rest, 8 * nic) +
                         testing::NcclRing(1, 1, 64, 1.0 / 2 * 2 * experts, nic);
  CHECK(t["comm"]["dp_seconds"].get<double>() == doctest::Approx(scatters + gathers));
}

TEST_CASE("ep with cp: a rank exchanges its s / cp tokens, and ZeRO spans dp x cp / ep for the experts") {
  // Mixtral on 16 devices, --cp 2 --ep 4: dp = 16 / 2 = 8, the dense part's gradients and ZeRO shards
  // over dp x cp = 16 ranks (Megatron-Core's data-parallel group with context parallelism), the routed
  // experts' over the 16 / 4 = 4 ranks holding the same experts. Each rank holds 4096 / 2 tokens, so
  // an all-to-all moves 2048 · 2 · 4096 · 2 B, 3/4 of it off the device; tp · ep = 4: NVLink.
  const nlohmann::json t = Time("mixtral-8x7b", {"--gpus", "16", "--cp", "2", "--ep", "4"});
  CHECK(t["breakdown"]["ep_all_to_all"].get<double>() ==
        doctest::Approx(4 * 32 * 2048.0 * 2 * 4096 * 2 * 3 / 4 / kNvlink));
  // ZeRO-1: two 4-byte states and a 4-byte master per parameter, each category's two parts rounded up.
  const nlohmann::json m = Train("mixtral-8x7b", {"--gpus", "16", "--cp", "2", "--ep", "4", "--zero", "1"});
  const uint64_t experts_local = kMixtralExperts / 4;
  CHECK(m["optimizer"] == (8 * kMixtralRest + 15) / 16 + (8 * experts_local + 3) / 4);
  CHECK(m["master_weights"] == (4 * kMixtralRest + 15) / 16 + (4 * experts_local + 3) / 4);
}

TEST_CASE("ep: refusals name --ep and exit 2") {
  const auto refuse = [](std::vector<std::string> args, const std::string& message) {
    const testing::TallyRun run = testing::RunTally(args);
    CHECK(run.code == 2);
    CHECK(run.err.find("tally: error: --ep: " + message) != std::string::npos);
  };
  // Carved from dp = gpus / (tp · pp · cp): must divide it.
  // The expert grid: ep x etp (etp defaults to tp) must divide tp x cp x dp = gpus / pp.
  refuse({"memory", "mixtral-8x7b", "--seq", "256", "--gpus", "8", "--ep", "16"},
         "ep x etp = 16 x 1 = 16 must divide the 8 devices of a pipeline stage (tp x cp x dp = 1 x 1 x 8); --etp "
         "defaults to --tp");
  refuse({"memory", "mixtral-8x7b", "--seq", "256", "--gpus", "8", "--tp", "2", "--ep", "8"},
         "ep x etp = 8 x 2 = 16 must divide the 8 devices of a pipeline stage (tp x cp x dp = 2 x 1 x 4); --etp "
         "defaults to --tp");
  // Must divide the routed experts.
  refuse({"memory", "mixtral-8x7b", "--seq", "256", "--gpus", "12", "--ep", "3"},
         "3 does not divide the 8 routed experts of 'mixtral-8x7b'");
  // A dense model has nothing to split.
  refuse({"memory", "llama-2-7b", "--seq", "256", "--gpus", "2", "--ep", "2"},
         "'llama-2-7b' has no mixture-of-experts blocks to split over 2 expert-parallel ranks");
  refuse({"memory", "mixtral-8x7b", "--seq", "256", "--ep", "0"}, "'0' is zero");
  // Inference latency does not model it.
  refuse({"time", "mixtral-8x7b", "--mode", "infer", "--gpus", "2", "--ep", "2", "--hardware", "h100-sxm"},
         "inference latency under expert parallelism is not modelled");
}

// The synthetic MoE's parameters outside the routed experts on one of 2 tensor-parallel ranks
// (Megatron: q, k, v, gate, up split by columns, out and down by rows, embedding and head by vocabulary,
// norms and router replicated).
constexpr uint64_t kTinyRestTp2 =
    4ULL * (4 * 64 * 64 / 2 + 2 * 64) + 3 * 64 * 128 / 2 + 3ULL * (64 * 4 + 3 * 64 * 64 / 2) + 2 * 1000 * 64 / 2 + 64;

TEST_CASE("etp: ep above dp, the experts' grid folded over the tensor-parallel ranks") {
  // 4 devices, --tp 2: dp 2. --ep 4 --etp 1 (MoE parallel folding, Liu et al. 2025): ep x etp = 4
  // divides tp x cp x dp = 4, so each device holds E / 4 = 1 routed expert of every MoE block, whole;
  // the dense part stays split by tp 2. Without --etp (etp = tp) the same --ep is refused.
  const std::vector<std::string> folded = {"--gpus", "4", "--tp", "2", "--sp", "--ep", "4", "--etp", "1"};
  const nlohmann::json m = Train(Tiny(), folded);
  CHECK(m["weights"] == 2 * (kTinyRestTp2 + kTinyExperts / 4));
  CHECK(m["gradients"] == 2 * (kTinyRestTp2 + kTinyExperts / 4));
  CHECK(m["optimizer"] == 8 * (kTinyRestTp2 + kTinyExperts / 4));
  // --ep 2 --etp 2 on the same devices: E / 2 experts, each split in two.
  const nlohmann::json half = Train(Tiny(), {"--gpus", "4", "--tp", "2", "--sp", "--ep", "2", "--etp", "2"});
  CHECK(half["weights"] == 2 * (kTinyRestTp2 + kTinyExperts / 2 / 2));
  // ZeRO-1 on 16 devices (dp 8), --ep 4 --etp 1: the experts' data-parallel group is tp x cp x dp /
  // (ep x etp) = 16 / 4 = 4 ranks, the rest's dp = 8; a 4-byte master and two 4-byte states.
  const nlohmann::json z1 =
      Train(Tiny(), {"--gpus", "16", "--tp", "2", "--sp", "--ep", "4", "--etp", "1", "--zero", "1"});
  CHECK(z1["weights"] == 2 * (kTinyRestTp2 + kTinyExperts / 4));
  CHECK(z1["master_weights"] == (4 * kTinyRestTp2 + 7) / 8 + 4 * (kTinyExperts / 4) / 4);
  CHECK(z1["optimizer"] == (8 * kTinyRestTp2 + 7) / 8 + 8 * (kTinyExperts / 4) / 4);
}

TEST_CASE("etp: with the default etp = tp, ep may span context-parallel ranks") {
  // 4 devices, --cp 2: dp 2, and ep 4 x etp 1 divides tp x cp x dp = 4 (Megatron-Core's expert grid
  // ignores cp); each device holds E / 4 of Mixtral's experts. Before --etp, ep had to divide dp.
  const nlohmann::json m = Train("mixtral-8x7b", {"--gpus", "4", "--cp", "2", "--ep", "4"});
  CHECK(m["weights"] == 2 * (kMixtralExperts / 4 + kMixtralRest));
  CHECK(m["weights"] == 25'759'850'496);
}

TEST_CASE("etp: the all-to-all of an expert group that spans tensor-parallel ranks") {
  // The synthetic MoE, micro-batch 1 of 256 tokens, --tp 2 --sp: a device holds 256 / 2 = 128 tokens
  // and sends their top-2 copies at hidden 64, bf16: 128 · 2 · 64 · 2 B per all-to-all, a quarter to
  // each of the ep 4 ranks; 4 per MoE block, 3 blocks. The expert group is ep x etp = 4 devices: in an
  // 8-device node 3 quarters cross NVLink (370.8 GB/s); with 2 devices a node 1 quarter crosses NVLink
  // and 2 InfiniBand (50 GB/s), the longer.
  const double bytes = 128.0 * 2 * 64 * 2;
  const std::vector<std::string> folded = {"--gpus", "4",     "--tp", "2",     "--sp", "--ep",
                                           "4",      "--etp", "1",    "--seq", "256"};
  CHECK(Time(Tiny(), folded)["breakdown"]["ep_all_to_all"].get<double>() ==
        doctest::Approx(4 * 3 * bytes * 3 / 4 / kNvlink).scale(0));
  std::vector<std::string> spread = folded;
  spread.insert(spread.end(), {"--gpus-per-node", "2"});
  CHECK(Time(Tiny(), spread)["breakdown"]["ep_all_to_all"].get<double>() ==
        doctest::Approx(4 * 3 * bytes * 2 / 4 / 50e9).scale(0));
  // Mixtral on 16 devices, --tp 2 --sp --ep 8: with --etp 1 the group is 8 devices (one node, NVLink,
  // 7 of 8 shares); with the default etp = tp it is ep x tp = 16 devices over two nodes, the ep ranks
  // 2 apart: 4 of them in each node, so 3 shares cross NVLink and 4 InfiniBand. Each device sends its
  // 4096 / 2 tokens' top-2 copies.
  const double mixtral = 2048.0 * 2 * 4096 * 2;
  const nlohmann::json one = Time("mixtral-8x7b", {"--gpus", "16", "--tp", "2", "--sp", "--ep", "8", "--etp", "1"});
  CHECK(one["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(4 * 32 * mixtral * 7 / 8 / kNvlink));
  const nlohmann::json two = Time("mixtral-8x7b", {"--gpus", "16", "--tp", "2", "--sp", "--ep", "8"});
  CHECK(two["breakdown"]["ep_all_to_all"].get<double>() == doctest::Approx(4 * 32 * mixtral * 4 / 8 / 50e9));
}

TEST_CASE("etp: the experts' tensor-parallel collective runs over etp ranks, none at etp 1") {
  // Mixtral on 8 devices, --tp 1 --ep 4 --etp 2: each device computes etp / tp = 2 micro-batches' worth
  // of routed rows (its own 4096 tokens' top-2 copies and its etp partner's), and its experts' output
  // of 2 · 4096 · 2 · 4096 bf16 values is reduced over the 2 etp ranks in each block's forward and
  // backward: 64 ring all-reduces over NVLink, 2 steps each, moving 2 (n - 1) / n = 1 times the buffer
  // (NCCL's Simple protocol, tests/unit/test_util.h).
  const double buffer = 2.0 * 4096 * 2 * 4096 * 2;
  const nlohmann::json t = Time("mixtral-8x7b", {"--gpus", "8", "--ep", "4", "--etp", "2"});
  CHECK(t["comm"]["tp_seconds"].get<double>() == doctest::Approx(testing::NcclRing(2, 0, 64, 64 * buffer, kNvlink)));
  // --tp 2 --sp --ep 8 --etp 1: the experts need no tensor-parallel collective; the dense part's
  // row-parallel all-reduce, attention's output projection of 4096 · 4096 bf16 values per block, stays.
  const nlohmann::json one = Time("mixtral-8x7b", {"--gpus", "16", "--tp", "2", "--sp", "--ep", "8", "--etp", "1"});
  const double attention = 4096.0 * 4096 * 2;
  CHECK(one["comm"]["tp_seconds"].get<double>() ==
        doctest::Approx(testing::NcclRing(2, 0, 64, 64 * attention, kNvlink)));
}

TEST_CASE("etp: --etp equal to --tp gives the answers of no --etp") {
  for (const std::vector<std::string>& grid : {std::vector<std::string>{"--gpus", "16", "--tp", "2", "--ep", "4"},
                                               std::vector<std::string>{"--gpus", "8", "--ep", "8", "--zero", "1"}}) {
    CAPTURE(grid.size());
    std::vector<std::string> given = grid;
    const std::string tp = grid[2] == "--tp" ? grid[3] : "1";
    given.insert(given.end(), {"--etp", tp});
    const nlohmann::json a = Time("mixtral-8x7b", grid), b = Time("mixtral-8x7b", given);
    CHECK(a["step_seconds"].get<double>() == b["step_seconds"].get<double>());
    CHECK(a["breakdown"] == b["breakdown"]);
    CHECK(a["comm"] == b["comm"]);
    CHECK(Train("mixtral-8x7b", grid) == Train("mixtral-8x7b", given));
  }
}

TEST_CASE("etp: refusals name --ep and --etp and exit 2") {
  const auto refuse = [](std::vector<std::string> args, const std::string& message) {
    const testing::TallyRun run = testing::RunTally(args);
    CHECK(run.code == 2);
    CHECK(run.err == "tally: error: " + message + "\n");
  };
  refuse({"memory", "mixtral-8x7b", "--seq", "256", "--gpus", "8", "--ep", "8", "--etp", "2"},
         "--ep/--etp: ep x etp = 8 x 2 = 16 must divide the 8 devices of a pipeline stage (tp x cp x dp = 1 x 1 x 8)");
  refuse({"memory", Tiny(), "--seq", "256", "--gpus", "3", "--etp", "3"},
         "--etp: 3 does not divide the routed experts' width 32 of 'moe_ep'");
  refuse({"memory", "mixtral-8x7b", "--seq", "256", "--gpus", "16", "--tp", "2", "--ep", "8", "--etp", "1"},
         "--etp: 1 differs from --tp 2, which needs --sp: without sequence parallelism every tensor-parallel rank "
         "holds the same tokens");
  refuse({"memory", "mixtral-8x7b", "--seq", "256", "--etp", "0"},
         "--etp: '0' is zero; expected a positive whole number such as 8, 4096, 1.5e3, 2k, 4Ki or 7B");
  refuse({"memory", "llama-2-7b", "--seq", "256", "--gpus", "2", "--etp", "2"},
         "--etp: 'llama-2-7b' has no mixture-of-experts blocks to split over an expert grid of ep x etp = 1 x 2 ranks");
  refuse({"time", "mixtral-8x7b", "--mode", "infer", "--gpus", "2", "--etp", "2", "--hardware", "h100-sxm"},
         "--etp: inference latency under expert parallelism is not modelled (the roofline has no all-to-all and "
         "reads every expert on each device); 'tally memory --mode infer --ep' gives its memory");
}

TEST_CASE("moe: the pipeline passes a block's [b, s, hidden], not the routed experts' top_k copies") {
  // Mixtral (no shared expert: its last row-parallel linear is the routed down projection), --pp 2:
  // each micro-batch sends its 4096 x 4096 bf16 activation forward and its gradient back across the
  // one stage boundary (Narayanan et al. 2021), over NVLink (tp x pp = 2 devices).
  const nlohmann::json t = Time("mixtral-8x7b", {"--gpus", "2", "--pp", "2"});
  CHECK(t["comm"]["pp_seconds"].get<double>() == doctest::Approx(2 * 4096.0 * 4096 * 2 / kNvlink));
}

TEST_CASE("etp: fit --solve gpus keeps ep x etp dividing tp x cp x dp") {
  // --tp 2 --ep 4 --etp 1: dp must make 2 · dp a multiple of 4.
  const nlohmann::json f = RunJson({"fit", Tiny(), "--seq", "256", "--memory", "1GiB", "--solve", "gpus", "--tp", "2",
                                    "--sp", "--ep", "4", "--etp", "1"})["fit"];
  CHECK(f["gpus"].get<uint64_t>() % 4 == 0);
}

TEST_CASE("ep: fit --solve gpus answers a multiple of ep data-parallel ranks") {
  const nlohmann::json f = RunJson({"fit", "mixtral-8x7b", "--seq", "4096", "--memory", "80GiB", "--solve", "gpus",
                                    "--ep", "4", "--zero", "3"})["fit"];
  CHECK(f["gpus"].get<uint64_t>() % 4 == 0);
}

}  // namespace
}  // namespace tally
