// quantization_config: reading the methods, and the exact bytes of one quantized Linear, each
// derived from the tensors the method stores (shapes in the comments).
#include "config/quantization.h"

#include <doctest/doctest.h>

#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/roofline.h"
#include "graph/build_graph.h"
#include "sections/estimate_report.h"
#include "unit/test_util.h"
#include "weights_test_util.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using testing::Message;
using testing::ResolvedGraph;
using testing::TempDir;
using testing::WriteFile;

QuantizationSpec Read(const std::string& json) {
  QuantizationSpec q;
  REQUIRE(ReadQuantization("config.json", json, q));
  return q;
}

TEST_CASE("quantization: fp8 with 128 x 128 blocks, as DeepSeek-V3 ships") {
  const QuantizationSpec q = Read(R"({"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                                      "quant_method": "fp8", "weight_block_size": [128, 128]}})");
  CHECK(q.block_rows == 128);
  // An expert's gate_proj, 2048 x 7168: weight 2048·7168 e4m3 bytes, weight_scale_inv [16, 56] fp32.
  CHECK(QuantizedLinearBytes(q, 2048, 7168) == 2048 * 7168 + 16 * 56 * 4);
  // Ragged edges round up: 1000 x 1000 has 8 x 8 blocks.
  CHECK(QuantizedLinearBytes(q, 1000, 1000) == 1'000'000 + 64 * 4);
}

TEST_CASE("quantization: mxfp4, as gpt-oss stores its experts") {
  const QuantizationSpec q = Read(R"({"quantization_config": {"quant_method": "mxfp4",
                                      "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}})");
  CHECK(q.skipped.size() == 2);
  // gpt-oss-20b gate_up_proj per expert: out 5760, in 2880 -> _blocks [5760, 90, 16] + _scales [5760, 90].
  CHECK(QuantizedLinearBytes(q, 5760, 2880) == 5760 * 90 * 16 + 5760 * 90);
  // 4.25 bits per weight (the issue's figure; OCP MX: 32 x 4 bits + 8 bits per block).
  CHECK(QuantizedLinearBytes(q, 1, 32) * 8 == 136);
}

TEST_CASE("quantization: bitsandbytes nf4 with and without double quantization, and int8") {
  QuantizationSpec q = Read(R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true,
                                "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true}})");
  CHECK(q.method == QuantMethod::kBnb4bit);
  CHECK(q.quant_type == "nf4");
  const uint64_t n = 4096ULL * 4096;
  // QLoRA §3: absmax per 64 weights costs 32/64 = 0.5 bits; double quantization 8/64 + 32/(64·256)
  // = 0.127 bits. 4096² weights: 262,144 blocks, 1,024 second-level constants (+ one offset).
  CHECK(QuantizedLinearBytes(q, 4096, 4096) == n / 2 + 262'144 + 4 * 1'024 + 4);
  q.double_quant = false;
  CHECK(QuantizedLinearBytes(q, 4096, 4096) == n / 2 + 4 * 262'144);
  const QuantizationSpec int8 =
      Read(R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": true}})");
  // LLM.int8(): int8 weights, one fp32 scale (SCB) per output row.
  CHECK(QuantizedLinearBytes(int8, 4096, 4096) == n + 4 * 4096);
}

TEST_CASE("quantization: GPTQ and AWQ 4-bit, group 128, on a 4096 x 4096 projection") {
  const QuantizationSpec gptq = Read(R"({"quantization_config": {"bits": 4, "group_size": 128, "desc_act": false,
                                         "quant_method": "gptq", "sym": true}})");
  // AutoGPTQ: qweight [512, 4096] int32, qzeros [32, 512] int32, scales [32, 4096] fp16, g_idx [4096] int32.
  CHECK(QuantizedLinearBytes(gptq, 4096, 4096) == 512 * 4096 * 4 + 32 * 512 * 4 + 32 * 4096 * 2 + 4096 * 4);
  const QuantizationSpec awq = Read(R"({"quantization_config": {"bits": 4, "group_size": 128, "quant_method": "awq",
                                        "version": "gemm", "zero_point": true}})");
  // AutoAWQ GEMM: qweight [4096, 512] int32, qzeros [32, 512] int32, scales [32, 4096] fp16.
  CHECK(QuantizedLinearBytes(awq, 4096, 4096) == 4096 * 512 * 4 + 32 * 512 * 4 + 32 * 4096 * 2);
  const QuantizationSpec one_group =
      Read(R"({"quantization_config": {"bits": 8, "group_size": -1, "quant_method": "gptq"}})");
  CHECK(QuantizedLinearBytes(one_group, 8, 64) == 8 * 64 + 8 + 8 * 2 + 64 * 4);
  QuantizationSpec q;
  CHECK(Message([&] {
          ReadQuantization("c.json", R"({"quantization_config": {"quant_method": "gptq", "bits": 3}})", q);
        }) == "c.json: error: quantization_config.bits must be 2, 4 or 8, got 3");
}

TEST_CASE("quantization: a config's method reaches the report — others are a note") {
  CHECK_FALSE([] {
    QuantizationSpec q;
    return ReadQuantization("c.json", R"({"quantization_config": {"quant_method": "hqq"}})", q);
  }());
  TempDir tmp;
  std::string config = R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
                           "n_layer": 12, "n_head": 12, "quantization_config": {"quant_method": "QUANT", "bits": 4}})";
  config.replace(config.find("QUANT"), 5, "awq");
  WriteFile(tmp.path() / "config.json", config);
  const std::string path = (tmp.path() / "config.json").string();
  const ModelSpec spec = ResolveModel(path);
  REQUIRE(spec.quantization.has_value());
  CHECK(spec.quantization->method == QuantMethod::kAwq);
  Evaluation evaluation(spec);
  const Report r = EstimateReport(evaluation, ResolveSettings({}, evaluation.spec()), {});
  CHECK(std::get<std::string>(r.Find("model.quantization")->value) == "awq");
  config.replace(config.find("awq"), 3, "hqq");
  WriteFile(tmp.path() / "config.json", config);
  const ModelSpec other = ResolveModel(path);
  CHECK_FALSE(other.quantization.has_value());
  REQUIRE(other.notes.size() == 1);
  CHECK(other.notes[0] == path +
                              ": this quantization_config is not one tally reads (fp8, mxfp4, bitsandbytes, gptq, "
                              "awq, compressed-tensors)");
}

TEST_CASE("quantization: a decode step reads the quantized weights (the roofline's bytes)") {
  // Llama-3.1-8B, batch 1, one token against 128: the step reads every block matrix once, so nf4
  // saves exactly Σ (2·n − nf4(n)) bytes over the 32 blocks' matrices (q, o 4096²; k, v 4096·1024;
  // gate, up, down 4096·14336), nf4(n) as QLoRA §3: n/2 + n/64 + 4·⌈n/64/256⌉ + 4.
  auto nf4 = [](uint64_t n) { return n / 2 + n / 64 + 4 * ((n / 64 + 255) / 256) + 4; };
  auto saved = [&](uint64_t n) { return 2 * n - nf4(n); };
  const uint64_t expected = 32 * (2 * saved(4096ULL * 4096) + 2 * saved(4096ULL * 1024) + 3 * saved(4096ULL * 14336));
  const ModelSpec spec = ResolveModel("llama-3.1-8b");
  auto bytes = [&](Quant q) {
    Settings s;
    s.dtypes = PolicyDtypes(Precision::kMixedBf16);
    s.seq = 1;
    s.context = 128;
    s.quant = q;
    return ForwardRoofline(ResolvedGraph(spec, s), spec, s,
                           {.peak = 1e18, .mfu = 1, .bandwidth = 1e12, .mbu = 1, .interconnect = 1e12})
        .bytes;
  };
  CHECK(bytes(Quant::kNone) - bytes(Quant::kNf4) == static_cast<double>(expected));
}

}  // namespace
}  // namespace tally
