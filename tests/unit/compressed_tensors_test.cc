// compressed-tensors quantization_config: the scheme read strictly, and the exact bytes of each
// quantized Linear from the tensors neuralmagic/compressed-tensors stores (commit 52792be):
// PackedQuantizationCompressor (pack-quantized) writes weight_packed int32 [out, ⌈in / (32/bits)⌉],
// weight_shape int64 [2] (torch.tensor(weight.shape)) and, asymmetric group/channel, a
// weight_zero_point packed along the outputs; NaiveQuantizationCompressor (naive-, int-,
// float-quantized) the weight at one int8/fp8 byte each; initialize_qparams the weight_scale at the
// model's dtype, shaped per strategy, and weight_g_idx int32 [in] under actorder "group".
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "config/quantization.h"
#include "run_tally.h"
#include "weights_test_util.h"

namespace tally {
namespace {

using testing::Message;
using testing::RunTally;
using testing::TempDir;
using testing::WriteFile;

// A config with one compressed-tensors config group of these weights (and these top-level extras).
std::string Config(const std::string& weights, const std::string& format = "pack-quantized",
                   const std::string& dtype = "bfloat16") {
  return R"({"torch_dtype": ")" + dtype + R"(", "quantization_config": {"quant_method": "compressed-tensors",
      "format": ")" +
         format + R"(", "ignore": ["lm_head"],
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": )" +
         weights + "}}}}";
}

QuantizationSpec Read(const std::string& json) {
  QuantizationSpec q;
  REQUIRE(ReadQuantization("config.json", json, q));
  REQUIRE(q.method == QuantMethod::kCompressedTensors);
  return q;
}

std::string Refusal(const std::string& json) {
  return Message([&] {
    QuantizationSpec q;
    ReadQuantization("c.json", json, q);
  });
}

TEST_CASE("compressed-tensors: W4A16, pack-quantized int4 per group of 128, symmetric") {
  const QuantizationSpec q =
      Read(Config(R"({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": true,
                      "actorder": null, "dynamic": false})"));
  CHECK(q.skipped == std::vector<std::string>{"lm_head"});
  // Llama-3.1-8B's k_proj, out 1024, in 4096: weight_packed [1024, 512] int32, weight_shape [2] int64,
  // weight_scale [1024, 32] bf16; no zero point (symmetric).
  CHECK(QuantizedLinearBytes(q, 1024, 4096) == 1024 * 512 * 4 + 2 * 8 + 1024 * 32 * 2);
  // A ragged input: 100 inputs pack into ⌈100/8⌉ = 13 int32, scales ⌈100/128⌉ = 1 group.
  CHECK(QuantizedLinearBytes(q, 3, 100) == 3 * 13 * 4 + 16 + 3 * 1 * 2);
  CHECK(QuantizationPhrase(q) == "compressed-tensors pack-quantized, int4 with a bf16 scale per group of 128");
  CHECK(Quantizes(q, QuantModule::kAttention));
  CHECK(Quantizes(q, QuantModule::kRouter));      // targets Linear: the router is one
  CHECK_FALSE(Quantizes(q, QuantModule::kHead));  // ignored
  CHECK_FALSE(Quantizes(q, QuantModule::kEmbedding));
}

TEST_CASE("compressed-tensors: asymmetric zero points, actorder group, fp32 scales") {
  const QuantizationSpec q =
      Read(Config(R"({"num_bits": 4, "strategy": "group", "group_size": 128, "symmetric": false, "actorder": "group"})",
                  "pack-quantized", "float32"));
  // out 4096, in 4096: weight_packed [4096, 512] int32; weight_shape 16 B; weight_scale [4096, 32]
  // fp32; weight_zero_point packed along the outputs: [4096/8, 32] int32; weight_g_idx [4096] int32.
  CHECK(QuantizedLinearBytes(q, 4096, 4096) == 4096 * 512 * 4 + 16 + 4096 * 32 * 4 + 512 * 32 * 4 + 4096 * 4);
  // Channel strategy (group_size -1 infers it): scale [out, 1], zero point [⌈out/8⌉, 1] int32.
  const QuantizationSpec ch = Read(Config(R"({"num_bits": 4, "group_size": -1, "symmetric": false})"));
  CHECK(ch.ct.strategy == "channel");
  CHECK(QuantizedLinearBytes(ch, 10, 64) == 10 * 8 * 4 + 16 + 10 * 2 + 2 * 1 * 4);
}

TEST_CASE("compressed-tensors: FP8 dynamic (float-quantized, per channel) and W8A8 int8 with static input scales") {
  const QuantizationSpec fp8 = Read(R"({"torch_dtype": "bfloat16", "quantization_config": {
      "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
      "config_groups": {"group_0": {"targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true, "dynamic": false},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}}}})");
  // FP8_DYNAMIC: weight [out, in] fp8 e4m3, weight_scale [out, 1] bf16; dynamic inputs store nothing.
  CHECK(QuantizedLinearBytes(fp8, 14336, 4096) == 14336ULL * 4096 + 14336 * 2);
  CHECK(QuantizationPhrase(fp8) == "compressed-tensors float-quantized, fp8 e4m3 with a bf16 scale per output channel");
  const QuantizationSpec int8 = Read(R"({"torch_dtype": "float16", "quantization_config": {
      "quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "int", "strategy": "tensor", "symmetric": false},
        "input_activations": {"num_bits": 8, "type": "int", "strategy": "tensor", "dynamic": false,
                              "symmetric": false}}}}})");
  // weight int8 [out, in], weight_scale (1,) fp16, weight_zero_point (1,) int8, input_scale (1,) fp16,
  // input_zero_point (1,) int8.
  CHECK(QuantizedLinearBytes(int8, 8, 16) == 8 * 16 + 2 + 1 + 2 + 1);
  CHECK(Quantizes(int8, QuantModule::kHead));  // no ignore list: the head is a Linear too
  // Block strategy: scales [⌈out/128⌉, ⌈in/128⌉].
  const QuantizationSpec block = Read(Config(
      R"({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]})", "float-quantized"));
  CHECK(QuantizedLinearBytes(block, 2048, 7168) == 2048ULL * 7168 + 16 * 56 * 2);
}

TEST_CASE("compressed-tensors: what cannot be stored exactly is refused") {
  const std::string prefix = "c.json: error: quantization_config (compressed-tensors): ";
  const std::string w4 = R"({"num_bits": 4, "strategy": "group", "group_size": 128})";
  CHECK(Refusal(Config(w4, "nvfp4-pack-quantized")) ==
        prefix +
            "format 'nvfp4-pack-quantized' is not one tally stores exactly (pack-quantized, naive-quantized, "
            "int-quantized, float-quantized)");
  std::string two = Config(w4);
  two.replace(two.find("\"group_0\""), 9, R"("group_1": {"targets": ["Linear"]}, "group_0")");
  CHECK(Refusal(two) == prefix + "tally reads exactly one config group (one scheme for every Linear), got 2");
  std::string regex = Config(w4);
  regex.replace(regex.find("[\"Linear\"]"), 10, R"(["re:.*down_proj"])");
  CHECK(Refusal(regex) ==
        prefix + "targets [\"re:.*down_proj\"]: tally models the targets [\"Linear\"] (every Linear layer)");
  std::string layer = Config(w4);
  layer.replace(layer.find("[\"lm_head\"]"), 11, R"(["lm_head", "model.layers.0.mlp"])");
  CHECK(Refusal(layer) == prefix +
                              "ignore entry 'model.layers.0.mlp' names one layer; tally holds identical blocks once "
                              "and applies one rule to every block");
  std::string projection = Config(w4);
  projection.replace(projection.find("[\"lm_head\"]"), 11, R"(["re:.*self_attn.kv_b_proj$"])");
  CHECK(Refusal(projection) == prefix +
                                   "ignore entry 're:.*self_attn.kv_b_proj$' names one projection; tally quantizes "
                                   "whole modules (attention, mlp, experts, router, lm_head)");
  std::string frozen = Config(w4);
  frozen.replace(frozen.find("\"format\""), 8, R"("quantization_status": "frozen", "format")");
  CHECK(Refusal(frozen) == prefix + "quantization_status 'frozen': only compressed checkpoints are modelled");
  CHECK(Refusal(Config(R"({"num_bits": 4, "type": "float"})")) ==
        prefix + "float weights are modelled at 8 bits (fp8 e4m3), unpacked; fp4 formats are not");
  CHECK(Refusal(Config(R"({"num_bits": 4, "strategy": "tensor_group", "group_size": 16})")) ==
        prefix + "weights.strategy 'tensor_group' is not modelled (tensor, channel, group, block)");
}

TEST_CASE("compressed-tensors: an ignore regex keeps the router unquantized — a tied head must be ignored") {
  std::string config = Config(R"({"num_bits": 4, "strategy": "group", "group_size": 128})");
  config.replace(config.find("[\"lm_head\"]"), 11, R"(["lm_head", "re:.*mlp.gate$"])");
  const QuantizationSpec q = Read(config);
  CHECK_FALSE(Quantizes(q, QuantModule::kRouter));
  CHECK(Quantizes(q, QuantModule::kExperts));
  TempDir tmp;
  WriteFile(tmp.path() / "config.json",
            R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12,
                "n_head": 12, "quantization_config": {"quant_method": "compressed-tensors",
                "format": "pack-quantized", "config_groups": {"group_0": {"targets": ["Linear"],
                "weights": {"num_bits": 4, "strategy": "group", "group_size": 128}}}}})");
  const std::string path = (tmp.path() / "config.json").string();
  CHECK(Message([&] { ResolveModel(path); }) ==
        path +
            ": error: quantization_config (compressed-tensors): the head is tied to the embedding and not in "
            "'ignore'; tally cannot tell how the tied head is stored (add \"lm_head\" to ignore)");
}

TEST_CASE("compressed-tensors: Llama-3.1-8B W4A16 inference weights, derived by hand") {
  // Per block (HF [out, in]): q, o 4096 x 4096; k, v 1024 x 4096; gate, up 14336 x 4096; down
  // 4096 x 14336. Each Linear: out·in/8 int32 packs ·4 B, 16 B weight_shape, out·in/128 bf16 scales.
  auto w4 = [](uint64_t out, uint64_t in) { return out * (in / 8) * 4 + 16 + out * (in / 128) * 2; };
  const uint64_t block = 2 * w4(4096, 4096) + 2 * w4(1024, 4096) + 2 * w4(14336, 4096) + w4(4096, 14336) +
                         2 * 4096 * 2;  // + two RMSNorm weights, bf16
  CHECK(block == 112'476'272);
  // 32 blocks + embedding and head (lm_head ignored) 128256 x 4096 bf16 each + the final norm.
  const uint64_t expected = 32 * block + 2 * 128256ULL * 4096 * 2 + 4096 * 2;
  CHECK(expected == 5'700'595'200);
  const std::string config = std::string(TALLY_TEST_DATA) + "/hf/llama-3.1-8b-w4a16.json";
  const testing::TallyRun r = RunTally({"memory", config, "--get", "memory.infer.weights"});
  CHECK(r.code == 0);
  CHECK(r.out == std::to_string(expected) + "\n");
  const testing::TallyRun model = RunTally({"estimate", config, "--get", "model.quantization"});
  CHECK(model.out == "compressed-tensors\n");
}

}  // namespace
}  // namespace tally
