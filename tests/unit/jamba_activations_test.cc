// Jamba's training activations through the unfused path transformers runs (JambaMambaMixer.
// cuda_kernels_forward in modeling_jamba.py: in_proj, causal_conv1d_fn, x_proj, the Δ/B/C
// RMSNorms, dt_proj, selective_scan_fn with z, out_proj), derived by hand for Jamba-v0.1's first
// block (tests/data/hf/jamba-v0.1.json: a Mamba mixer and a dense SwiGLU MLP).
#include <doctest/doctest.h>

#include <string>

#include "unit/run_tally.h"

namespace tally {
namespace {

std::string Jamba() { return std::string(TALLY_TEST_DATA) + "/hf/jamba-v0.1.json"; }

TEST_CASE("jamba: the training activations of its first block by hand") {
  // h 4096, d_inner 8192, N 16, dt rank 256 (ceil(4096 / 16)), d_ff 14336; bf16 (fp32: 4 bytes).
  const uint64_t h = 4096, di = 8192, n = 16, r = 256, f = 14336, s = 2048;
  // Each RMSNorm over w columns with a weight (JambaRMSNorm, the house convention): fp32 x,
  // an fp32 rstd per row, the normed x: 6·w + 4 bytes a token (graph/node_costs.h: PyTorch 2 keeps no x²).
  const auto rms = [](uint64_t w, uint64_t rows) { return 4 * w + 4 * rows + 2 * w; };
  const uint64_t mixer = 2 * h                // in_proj's input
                         + 2 * 2 * di         // xz, whole: causal_conv1d_fn saves a view of it
                         + 2 * di             // u, conv1d + SiLU's output (x_proj's input, the scan's u)
                         + rms(r + 2 * n, 3)  // dt_layernorm, b_layernorm, c_layernorm over r + 2N
                         + 2 * r              // dt_proj's input, the dt norm's output
                         + 2 * di             // Δ, a contiguous copy of dt_proj's transposed output
                         + 2 * 2 * n          // B and C, contiguous copies
                         + 2 * di             // z, a contiguous copy of the gate half
                         + 2 * di             // out, the scan's output before the gate
                         + 2 * di;            // out·SiLU(z), out_proj's input
  // The dense MLP: its input and, eager, gate output, SiLU(gate), up and their product (4 of d_ff).
  const uint64_t mlp = 2 * h + 4 * 2 * f;
  const uint64_t per_token = rms(h, 1) + mixer + rms(h, 1) + mlp;  // 297,236
  // Per sequence: the scan's fp32 chunk states [d_inner, ceil(2048 / 2048), 2N].
  const uint64_t states = di * 1 * 2 * n * 4;
  const auto run = testing::RunTally(
      {"memory", Jamba(), "--seq", std::to_string(s), "--mode", "train", "--get", "activations.per_layer"});
  REQUIRE(run.code == 0);
  CHECK(run.out == std::to_string(per_token * s + states) + "\n");  // 609,787,904
}

TEST_CASE("jamba: training commands run") {
  for (const char* command : {"memory", "estimate"}) {
    CAPTURE(command);
    CHECK(testing::RunTally({command, Jamba(), "--seq", "256"}).code == 0);
  }
  // 52 B parameters train on 14 H100s under ZeRO-3 at --seq 256: 16 bytes a parameter of model
  // states (bf16 weights and gradients, fp32 master and Adam's two states) and, in the optimizer
  // step, foreach AdamW's fp32 sqrt of every parameter (4 more): 20 · 52e9 / 14 = 74 GB a device.
  const auto fit = testing::RunTally({"fit", Jamba(), "--hardware", "h100-sxm", "--seq", "256", "--solve", "gpus",
                                      "--zero", "3", "--get", "fit.gpus"});
  CHECK(fit.code == 0);
  CHECK(fit.out == "14\n");
}

}  // namespace
}  // namespace tally
