// time --mode infer of encoder–decoders: the encoder once over the source, the decoder's prefill,
// then decode steps that read the decoder's weights, its self-attention KV cache and the fixed
// cross-attention KV of the source. Each decode step is derived by hand from the configs
// (tests/data/hf/t5-small.json, whisper-large-v3.json) and modeling_t5.py / modeling_whisper.py.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "unit/run_tally.h"

namespace tally {
namespace {

std::string Hf(const std::string& name) { return std::string(TALLY_TEST_DATA) + "/hf/" + name; }

struct Step {
  double flops = 0, bytes = 0;
  nlohmann::json time;
};

// The decode step's FLOPs and bytes (the --layers table, summed) and the time section.
Step Infer(const std::vector<std::string>& extra) {
  // --mfu 0.4: every op at one compute rate, as the hand derivations below take it (without it the
  // weight GEMMs run at their shape's share of the catalog's efficiency, estimate/gemm_shape.h).
  std::vector<std::string> args = {"time",  "--mode", "infer",    "--hardware", "h100-sxm",
                                   "--mfu", "0.4",    "--layers", "--format",   "json"};
  args.insert(args.begin() + 1, extra.begin(), extra.end());
  const testing::TallyRun run = testing::RunTally(args);
  REQUIRE(run.code == 0);
  const nlohmann::json j = nlohmann::json::parse(run.out);
  Step s;
  for (const auto& row : j["layers"]) {
    s.flops += row["decode"]["flops"].get<double>();
    s.bytes += row["decode"]["bytes"].get<double>();
  }
  s.time = j["time"];
  return s;
}

// h100-sxm in the catalog: bf16 peak 989.5 TFLOP/s, 3.35 TB/s at its decode_bandwidth_efficiency
// 0.887 (a copy's 2.97 of 3.35 TB/s); inference's default MFU 0.4.
constexpr double kCompute = 989.5e12 * 0.4, kMemory = 3.35e12 * 0.887;
// A GPU kernel's fixed time as measured on an H200 (docs/data/h200-decode-sweep.json): a weight
// GEMM, an elementwise kernel, a flash attention kernel (its softmax and AV run inside it).
constexpr double kGemm = 3.85e-6, kElementwise = 1.27e-6, kAttention = 4.41e-6;

TEST_CASE("time --mode infer: a t5-small decode step by hand") {
  // t5-small: d 512, 8 heads of d_kv 64, d_ff 2048 (relu), 6 decoder blocks, vocabulary 32,128,
  // tied head scaled by d^-0.5; bf16, batch 1, --seq 512 (source), the default prompt of 1 start
  // token and --generate 128: the step's self-attention sees 1 + 128 / 2 = 65 cached tokens, its
  // cross-attention the 512 source tokens. No encoder and no cross K/V projection run.
  // Per decoder block, FLOPs: 3 RMSNorms 3·4·512; qkv 2·512·1536; scores 2·8·65·64 + 8·65 (T5's
  // bias add); softmax 8·65; AV 2·8·65·64; self out, cross q, cross out 3·2·512²; cross scores
  // 2·8·512·64 + 8·512, softmax 8·512, AV 2·8·512·64; wi and wo 2·2·512·2048; relu 2048; 3 adds of 512.
  const double block_flops = 3 * 4 * 512 + 2.0 * 512 * 1536 + (2 * 8 * 65 * 64 + 8 * 65) + 8 * 65 + 2 * 8 * 65 * 64 +
                             3 * 2.0 * 512 * 512 + (2 * 8 * 512 * 64 + 8 * 512) + 8 * 512 + 2 * 8 * 512 * 64 +
                             2 * 2.0 * 512 * 2048 + 2048 + 3 * 512;
  // + the final norm 4·512, the head's scale 512 and the head 2·512·32128 over the one token.
  const double flops = 6 * block_flops + 4 * 512 + 512 + 2.0 * 512 * 32128;
  // Bytes at 2 each: a linear reads its weights and input and writes its output; an elementwise op
  // reads and writes 512 (the norms also their 512 weights); flash attention reads q (8·64) and
  // 512 K (or V) elements per cached token and writes nothing more.
  const double block_bytes = 2 * (3 * (2 * 512 + 512)              // norms
                                  + (512 * 1536 + 512 + 1536)      // qkv
                                  + 2 * (8 * 64 + 512 * 65)        // self scores, AV
                                  + 3 * (512 * 512 + 512 + 512)    // self out, cross q, cross out
                                  + 2 * (8 * 64 + 512 * 512)       // cross scores, AV
                                  + 2 * (512 * 2048 + 512 + 2048)  // wi, wo
                                  + 2 * 2048 + 3 * 2 * 512);       // relu, adds
  const double bytes = 6 * block_bytes + 2 * (512 + 512)           // the target token's lookup
                       + 2 * (8 * 65 + 8 * 65)                     // the first block's relative bias
                       + 2 * (2 * 512 + 512) + 2 * 2 * 512         // final norm, head scale
                       + 2 * (32128.0 * 512 + 512 + 32128);        // the head (the tied table)
  const Step s = Infer({Hf("t5-small.json"), "--seq", "512", "--generate", "128"});
  CHECK(s.flops == flops);  // 84,145,760
  CHECK(s.bytes == bytes);  // 84,392,736
  // Every op with bytes is memory-bound and one kernel: per block 6 GEMMs (qkv, self out, cross q,
  // cross out, wi, wo), 2 attention kernels and 7 elementwise (3 norms, relu, 3 adds); besides, the
  // lookup, the relative bias, the final norm and the head's scale, and the head's GEMM. The
  // softmaxes (inside flash attention: no bytes, no kernel) cost their FLOPs.
  const double floors = 6 * (6 * kGemm + 2 * kAttention + 7 * kElementwise) + 4 * kElementwise + kGemm;
  CHECK(s.time["tpot_seconds"].get<double>() ==
        doctest::Approx(bytes / kMemory + floors + 6 * (8 * 65 + 8 * 512) / kCompute).epsilon(1e-12));
  // The time to first token runs the encoder over the 512 source tokens as well as a decoder step:
  // longer than a decode step (at this size both are mostly the kernels' fixed time).
  CHECK(s.time["ttft_seconds"].get<double>() > 1.5 * s.time["tpot_seconds"].get<double>());
}

TEST_CASE("time --mode infer: a whisper-large-v3 decode step by hand") {
  // whisper-large-v3: d 1280, 20 heads of 64, ffn 5120 (GELU), 32 decoder layers, vocabulary 51,866,
  // LayerNorms with biases, k_proj without bias, tied proj_out; the source is its fixed 1500
  // positions (3000 mel frames); prompt 1, --generate 128: 65 cached tokens.
  // Per layer, FLOPs: 3 LayerNorms 3·5·1280; qkv 2·1280·3840 + 2·1280 (q and v biases); scores
  // 2·20·65·64 + 20·65, softmax 20·65, AV 2·20·65·64; self out, cross q, cross out 3·(2·1280² + 1280);
  // cross scores 2·20·1500·64 + 20·1500, softmax 20·1500, AV 2·20·1500·64; fc1 2·1280·5120 + 5120,
  // fc2 2·5120·1280 + 1280; GELU 5120; 3 adds of 1280.
  const double layer_flops = 3 * 5 * 1280 + (2.0 * 1280 * 3840 + 2 * 1280) + (2 * 20 * 65 * 64 + 20 * 65) + 20 * 65 +
                             2 * 20 * 65 * 64 + 3 * (2.0 * 1280 * 1280 + 1280) + (2 * 20 * 1500 * 64 + 20 * 1500) +
                             20 * 1500 + 2 * 20 * 1500 * 64 + (2.0 * 1280 * 5120 + 5120) + (2.0 * 5120 * 1280 + 1280) +
                             5120 + 3 * 1280;
  // + the learned position (an add of 1280), the final LayerNorm and the head 2·1280·51866.
  const double flops = 32 * layer_flops + 1280 + 5 * 1280 + 2.0 * 1280 * 51866;
  const double layer_bytes = 2 * (3 * (2 * 1280 + 2 * 1280)                 // LayerNorms (weight, bias)
                                  + (1280 * 3840 + 2 * 1280 + 1280 + 3840)  // qkv
                                  + 2 * (20 * 64 + 1280 * 65)               // self scores, AV
                                  + 3 * (1280 * 1280 + 1280 + 1280 + 1280)  // self out, cross q, cross out
                                  + 2 * (20 * 64 + 1280 * 1500)             // cross scores, AV
                                  + (1280 * 5120 + 5120 + 1280 + 5120)      // fc1
                                  + (5120 * 1280 + 1280 + 5120 + 1280)      // fc2
                                  + 2 * 5120 + 3 * 2 * 1280);               // GELU, adds
  const double bytes = 32 * layer_bytes + 2 * (1280 + 1280)                 // the token's lookup
                       + 2 * (1280 + 1280)                                  // its position's row
                       + 2 * (2 * 1280 + 2 * 1280)                          // final LayerNorm
                       + 2 * (51866.0 * 1280 + 1280 + 51866);               // proj_out (the tied table)
  const Step s = Infer({Hf("whisper-large-v3.json")});
  CHECK(s.flops == flops);  // 1,860,514,560
  CHECK(s.bytes == bytes);  // 1,862,234,932
  // Kernels as for t5-small: per layer 6 GEMMs, 2 attention, 7 elementwise (3 LayerNorms, GELU, 3
  // adds); besides, the lookup, the position's row and the final LayerNorm, and the head's GEMM.
  const double floors = 32 * (6 * kGemm + 2 * kAttention + 7 * kElementwise) + 3 * kElementwise + kGemm;
  CHECK(s.time["tpot_seconds"].get<double>() ==
        doctest::Approx(bytes / kMemory + floors + 32 * (20 * 65 + 20 * 1500) / kCompute).epsilon(1e-12));
}

TEST_CASE("time --mode infer: an encoder-decoder's inputs are checked") {
  // Whisper's decoder has 448 learned positions; --target-seq belongs to training.
  const testing::TallyRun whisper =
      testing::RunTally({"time", Hf("whisper-large-v3.json"), "--mode", "infer", "--hardware", "h100-sxm", "--prompt",
                         "400", "--generate", "100"});
  CHECK(whisper.code == 2);
  CHECK(whisper.err ==
        "tally: error: --generate: prompt + generated tokens (500) exceed the 448 learned positions of the decoder of "
        "'whisper-large-v3'\n");
  CHECK(testing::RunTally(
            {"time", Hf("t5-small.json"), "--mode", "infer", "--hardware", "h100-sxm", "--target-seq", "16"})
            .code == 2);
}

}  // namespace
}  // namespace tally
