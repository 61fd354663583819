// CPU offload (--offload, estimate/offload.h): what leaves the device for host memory and what crosses
// PCIe per step, against hand derivations for Llama-2-7B.
#include "estimate/offload.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/hardware.h"
#include "unit/run_tally.h"

namespace tally {
namespace {

using testing::RunJson;

// Llama-2-7B (Touvron et al. 2023; the published 6,738,415,616 parameters): a block holds
// 4 · 4096² (q, k, v, o) + 3 · 4096 · 11008 (gate, up, down) + 2 · 4096 (norms) = 202,383,360; the
// embedding and the untied head 32,000 · 4096 each and the final norm 4096 lie outside the blocks.
constexpr uint64_t kParams = 6'738'415'616;
constexpr uint64_t kBlock = 4ULL * 4096 * 4096 + 3ULL * 4096 * 11008 + 2 * 4096;
constexpr uint64_t kOutside = 2ULL * 32000 * 4096 + 4096;
static_assert(32 * kBlock + kOutside == kParams);

TEST_CASE("offload: --offload optimizer moves the ZeRO-2 partition's gradients, master weights and states") {
  // 8 ranks, ZeRO-2, mixed bf16 with AdamW: each rank's partition is P / 8 parameters, with 2-byte
  // gradients, a 4-byte fp32 master copy and two 4-byte states (Ren et al. 2021, §4.1: "2M" stays on
  // the device, the bf16 weights, unpartitioned under ZeRO-2).
  const std::vector<std::string> base = {"memory", "llama-2-7b", "--mode", "train",  "--seq",
                                         "4096",   "--gpus",     "8",      "--zero", "2"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--offload", "optimizer"});
  const nlohmann::json on = RunJson(args)["memory"]["train"];
  const nlohmann::json off = RunJson(base)["memory"]["train"];
  const uint64_t share = kParams / 8;
  CHECK(on["weights"] == 2 * kParams);
  CHECK(on["gradients"] == 0);
  CHECK(on["master_weights"] == 0);
  CHECK(on["optimizer"] == 0);
  CHECK(on["host"]["gradients"] == 2 * share);
  CHECK(on["host"]["master_weights"] == 4 * share);
  CHECK(on["host"]["optimizer"] == 8 * share);
  CHECK(on["host"]["total"] == 14 * share);
  CHECK(!on["host"].contains("weights"));
  // What the host holds is exactly what the device no longer does; the activations stay.
  CHECK(on["activations"] == off["activations"]);
  CHECK(on["total"].get<uint64_t>() + 14 * share == off["total"].get<uint64_t>());
}

TEST_CASE("offload: --offload params keeps on the device only the weights gathered at once") {
  // ZeRO-3, 8 ranks: the host holds the rank's P / 8 weights at 2 bytes besides the ZeRO-2 parts; the
  // device the weights outside the blocks (FSDP's root unit) and two blocks' (running, prefetched).
  const nlohmann::json m = RunJson({"memory", "llama-2-7b", "--mode", "train", "--seq", "4096", "--gpus", "8", "--zero",
                                    "3", "--offload", "params"})["memory"]["train"];
  const uint64_t share = kParams / 8;
  CHECK(m["weights"] == 2 * kOutside + 2 * (2 * kBlock));
  CHECK(m["weights"] == 1'333'829'632ULL);
  CHECK(m["host"]["weights"] == 2 * share);
  CHECK(m["host"]["total"] == 16 * share);
  CHECK(m["gradients"] == 0);
}

TEST_CASE("offload: the updated weights' upload is exposed — the gradients go down under the compute") {
  // H100 SXM, PCIe Gen5 at 50e9 B/s per direction (configs/hardware/h100-sxm.yaml). ZeRO-2 over 8
  // ranks, 2 micro-batches of 4,096 tokens: each micro-batch sends the rank's bf16 gradient
  // partition down (P / 8 · 2 bytes = 1,684,603,904 B, 33.7 ms, well under the ~0.3 s of compute a
  // micro-batch of a 7B model takes), and the step sends the updated bf16 partition up once, exposed.
  const nlohmann::json t =
      RunJson({"time", "llama-2-7b", "--hardware", "h100-sxm", "--seq", "4096", "--gpus", "8", "--zero", "2",
               "--grad-accum", "2", "--tokens", "1e9", "--offload", "optimizer"})["time"];
  const double partition = 2.0 * (kParams / 8);
  CHECK(t["offload"]["host_bandwidth"] == 50e9);
  CHECK(t["offload"]["down_bytes"] == doctest::Approx(2 * partition));
  CHECK(t["offload"]["up_bytes"] == doctest::Approx(partition));
  CHECK(t["breakdown"]["offload"] == doctest::Approx(partition / 50e9));
  CHECK(t["offload"]["transfer_seconds"] == doctest::Approx(3 * partition / 50e9));
  // 8 devices a node, each with its partition's 14 bytes a parameter in host memory.
  CHECK(t["offload"]["host_bytes_per_node"] == 8 * 14 * (kParams / 8));
}

TEST_CASE("offload: streamed weights outlast a short micro-batch's compute") {
  // ZeRO-3 with the weights offloaded, 128-token micro-batches: each pulls the rank's bf16 weight
  // partition twice (forward, backward) = 2 · 1,684,603,904 B at 50e9 B/s = 67.4 ms, far more than
  // its compute; the rest is exposed: 2 micro-batches · 67.4 ms - the compute.
  const nlohmann::json t =
      RunJson({"time", "llama-2-7b", "--hardware", "h100-sxm", "--seq", "128", "--gpus", "8", "--zero", "3",
               "--grad-accum", "2", "--tokens", "1e9", "--offload", "params"})["time"];
  const double partition = 2.0 * (kParams / 8);
  CHECK(t["offload"]["up_bytes"] == doctest::Approx(2 * 2 * partition));
  CHECK(t["offload"]["down_bytes"] == doctest::Approx(2 * partition));
  const double compute = t["breakdown"]["compute"].get<double>();
  REQUIRE(compute < 2 * 2 * partition / 50e9);
  CHECK(t["breakdown"]["offload"] == doctest::Approx(2 * 2 * partition / 50e9 - compute));
  CHECK(t["step_seconds"] ==
        doctest::Approx(compute + t["breakdown"]["communication"].get<double>() +
                        t["breakdown"]["pipeline_bubble"].get<double>() + t["breakdown"]["offload"].get<double>()));
}

TEST_CASE("offload: the catalog's host links, PCIe Gen4 and Gen5 x16 at about 80% of raw") {
  // Gen4: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction raw; Gen5 twice that (PCI-SIG).
  for (const char* gen4 : {"a100-40gb", "a100-80gb"}) CHECK(ResolveHardware(gen4).host_bandwidth == 25e9);
  for (const char* gen5 : {"h100-sxm", "h100-pcie", "h200"}) CHECK(ResolveHardware(gen5).host_bandwidth == 50e9);
  CHECK(ResolveHardware("l4").host_bandwidth == 0);  // not given: --offload refuses it
}

TEST_CASE("offload: refused where it cannot be modelled") {
  const auto err = [](std::vector<std::string> args) {
    const testing::TallyRun run = testing::RunTally(args);
    CHECK(run.code == 2);
    return run.err;
  };
  CHECK(err({"memory", "llama-2-7b", "--offload", "optimizer"}) ==
        "tally: error: --offload: optimizer offload moves each rank's ZeRO partition; give --zero 2 or 3\n");
  CHECK(err({"memory", "llama-2-7b", "--zero", "2", "--offload", "params"}) ==
        "tally: error: --offload: params offload moves each rank's ZeRO partition; give --zero 3\n");
  CHECK(err({"memory", "llama-2-7b", "--zero", "2", "--offload", "cpu"}).starts_with("tally: error: --offload:"));
  // The transfers are timed in the modelled step only.
  CHECK(err({"time", "llama-2-7b", "--hardware", "h100-sxm", "--zero", "2", "--offload", "optimizer", "--mfu", "0.5",
             "--tokens", "1e9"})
            .starts_with("tally: error: --offload: its transfers are timed in the modelled step, which --mfu"));
  CHECK(err({"time", "llama-2-7b", "--hardware", "mi355x", "--zero", "2", "--offload", "optimizer", "--precision",
             "fp32", "--tokens", "1e9"}) ==
        "tally: error: --offload: its transfers are timed in the modelled step, and mi355x lists no "
        "gemm_efficiency for fp32 to model it\n");
}

}  // namespace
}  // namespace tally
