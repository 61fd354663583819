// A Hugging Face config's `quantization_config`: which method stores the weights, and the exact
// bytes one quantized Linear takes under it (packed values plus their scales and zeros). Which
// modules stay unquantized is the config's list; the caller decides which graph nodes it names.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "config/settings.h"

namespace tally {

enum class QuantMethod { kFp8Block, kMxfp4, kBnb4bit, kBnb8bit, kGptq, kAwq, kCompressedTensors };

// compressed-tensors (neuralmagic/compressed-tensors, as llm-compressor saves it): the weights
// scheme of the config's one config group, and what else each quantized Linear stores.
struct CompressedTensorsArgs {
  std::string format;                // pack-quantized, naive-quantized, int-quantized or float-quantized
  bool is_float = false;             // type float (8-bit: fp8 e4m3) rather than int
  std::string strategy;              // tensor, channel, group or block
  bool symmetric = true;             // false: zero points are stored
  bool g_idx = false;                // actorder "group": an int32 weight_g_idx per input
  std::string scale_dtype = "bf16";  // the scales' dtype: the model's (torch_dtype), bf16 when it has none
  uint64_t scale_bytes = 2;
  uint64_t activation_bytes = 0;   // static (not dynamic) input/output activation scales and zeros
  bool kv_cache_scheme = false;    // a kv_cache_scheme is given (not applied: --kv-dtype says the cache)
  bool input_activations = false;  // input_activations quantized (W8A8, W4A8): not weight-only
};

struct QuantizationSpec {
  QuantMethod method = QuantMethod::kFp8Block;
  std::string name;                         // as the config names it: "fp8", "mxfp4", "bitsandbytes", ...
  uint64_t bits = 0;                        // gptq/awq: bits per value
  uint64_t group_size = 0;                  // gptq/awq: input rows per scale (0 = the whole column)
  uint64_t block_rows = 0, block_cols = 0;  // fp8: weight_block_size
  bool double_quant = false;                // bitsandbytes 4-bit: bnb_4bit_use_double_quant
  std::string quant_type;                   // bitsandbytes 4-bit: nf4 or fp4
  std::vector<std::string> skipped;         // modules_to_not_convert / llm_int8_skip_modules / ignore
  CompressedTensorsArgs ct;                 // compressed-tensors: bits, group_size, block_* above too
};

// Reads `quantization_config` from a config.json's text; false when it has none. An unknown or
// malformed method is an InputError naming `file`.
bool ReadQuantization(const std::string& file, const std::string& json_text, QuantizationSpec& out);

// Bytes of a Linear of `out_features` x `in_features` weights under `q` (its bias excluded).
uint64_t QuantizedLinearBytes(const QuantizationSpec& q, uint64_t out_features, uint64_t in_features);

// compressed-tensors (config/compressed_tensors.cc): reads `quantization_config` (`q`) of a
// config whose top level is `root` into `out`; what tally cannot store exactly is an InputError.
void ReadCompressedTensors(const std::string& file, const nlohmann::json& root, const nlohmann::json& q,
                           QuantizationSpec& out);
uint64_t CompressedTensorsLinearBytes(const QuantizationSpec& q, uint64_t out_features, uint64_t in_features);
std::string CompressedTensorsPhrase(const QuantizationSpec& q);

// The --quant values as the method each names, so that a flag and a config share one rule set:
// int8 bitsandbytes LLM.int8; int4 GPTQ 4-bit, group 128 (with g_idx); fp8 e4m3 in 128 x 128 blocks
// (DeepSeek-V3); nf4 bitsandbytes 4-bit NF4 with double quantization (QLoRA); mxfp4 (gpt-oss).
// Quant::kNone is a logic error.
QuantizationSpec QuantFlagSpec(Quant q);

// What a weight belongs to, as far as the methods tell modules apart.
enum class QuantModule { kAttention, kMlp, kExperts, kRouter, kEmbedding, kHead, kOther };

// Whether `q` stores a weight matrix of `module` quantized. Each method's own targets, as the
// transformers integrations replace modules: bitsandbytes every nn.Linear in the blocks, the MoE
// router included; fp8, gptq and awq the attention and MLP projections and the experts (not the
// router); mxfp4 the experts only (gpt-oss); compressed-tensors (targets "Linear") every Linear,
// the router and the head included. Embeddings, norms and biases never, nor anything else outside
// the blocks. Then modules_to_not_convert (compressed-tensors: ignore): an entry naming attention
// ("attn", "attention"), the MLP ("mlp", "feed_forward", "ffn": its experts and router too), the
// experts ("experts"), the router ("router", "gate" as the last name), the head ("lm_head") keeps
// that module unquantized in every block (a layer index in the entry is not honoured: the graph
// holds identical blocks once; compressed-tensors refuses such an entry).
bool Quantizes(const QuantizationSpec& q, QuantModule module);

// Whether `q` stores weights only, to be dequantized to the activation dtype inside each GEMM
// (W8A16, W4A16): bitsandbytes, GPTQ, AWQ, mxfp4 and compressed-tensors' integer schemes without
// quantized input activations. fp8 blocks and compressed-tensors' fp8 run W8A8 on fp8 tensor cores.
bool WeightOnly(const QuantizationSpec& q);

// Bits of one stored weight value under `q`: bitsandbytes 8-bit 8, 4-bit (nf4, fp4) and mxfp4 4,
// GPTQ, AWQ and compressed-tensors their `bits`, fp8 8.
uint64_t WeightBits(const QuantizationSpec& q);

// A short phrase for reports: "mxfp4 (experts)", "nf4 (bitsandbytes, double quant)".
std::string QuantizationPhrase(const QuantizationSpec& q);

}  // namespace tally
