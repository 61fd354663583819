// A Hugging Face config's `quantization_config`: which method stores the weights, and the exact
// bytes one quantized Linear takes under it (packed values plus their scales and zeros). Which
// modules stay unquantized is the config's list; the caller decides which graph nodes it names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tally {

enum class QuantMethod { kFp8Block, kMxfp4, kBnb4bit, kBnb8bit, kGptq, kAwq };

struct QuantizationSpec {
  QuantMethod method = QuantMethod::kFp8Block;
  std::string name;                  // as the config names it: "fp8", "mxfp4", "bitsandbytes", ...
  uint64_t bits = 0;                 // gptq/awq: bits per value
  uint64_t group_size = 0;           // gptq/awq: input rows per scale (0 = the whole column)
  uint64_t block_rows = 0, block_cols = 0;  // fp8: weight_block_size
  bool double_quant = false;         // bitsandbytes 4-bit: bnb_4bit_use_double_quant
  std::string quant_type;            // bitsandbytes 4-bit: nf4 or fp4
  std::vector<std::string> skipped;  // modules_to_not_convert / llm_int8_skip_modules
};

// Reads `quantization_config` from a config.json's text; false when it has none. An unknown or
// malformed method is an InputError naming `file`.
bool ReadQuantization(const std::string& file, const std::string& json_text, QuantizationSpec& out);

// Bytes of a Linear of `out_features` x `in_features` weights under `q` (its bias excluded).
uint64_t QuantizedLinearBytes(const QuantizationSpec& q, uint64_t out_features, uint64_t in_features);

}  // namespace tally
