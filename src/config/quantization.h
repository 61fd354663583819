// A Hugging Face config's `quantization_config`: which method stores the weights, and the exact
// bytes one quantized Linear takes under it (packed values plus their scales and zeros). Which
// modules stay unquantized is the config's list; the caller decides which graph nodes it names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/settings.h"

namespace tally {

enum class QuantMethod { kFp8Block, kMxfp4, kBnb4bit, kBnb8bit, kGptq, kAwq };

struct QuantizationSpec {
  QuantMethod method = QuantMethod::kFp8Block;
  std::string name;                         // as the config names it: "fp8", "mxfp4", "bitsandbytes", ...
  uint64_t bits = 0;                        // gptq/awq: bits per value
  uint64_t group_size = 0;                  // gptq/awq: input rows per scale (0 = the whole column)
  uint64_t block_rows = 0, block_cols = 0;  // fp8: weight_block_size
  bool double_quant = false;                // bitsandbytes 4-bit: bnb_4bit_use_double_quant
  std::string quant_type;                   // bitsandbytes 4-bit: nf4 or fp4
  std::vector<std::string> skipped;         // modules_to_not_convert / llm_int8_skip_modules
};

// Reads `quantization_config` from a config.json's text; false when it has none. An unknown or
// malformed method is an InputError naming `file`.
bool ReadQuantization(const std::string& file, const std::string& json_text, QuantizationSpec& out);

// Bytes of a Linear of `out_features` x `in_features` weights under `q` (its bias excluded).
uint64_t QuantizedLinearBytes(const QuantizationSpec& q, uint64_t out_features, uint64_t in_features);

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
// router); mxfp4 the experts only (gpt-oss). Embeddings, the head, norms and biases never, nor
// anything outside the blocks. Then modules_to_not_convert: an entry naming attention ("attn",
// "attention"), the MLP ("mlp", "feed_forward", "ffn": its experts and router too), the experts
// ("experts"), the router ("router", "gate" as the last name) keeps that module unquantized in
// every block (a layer index in the entry is not honoured: the graph holds identical blocks once).
bool Quantizes(const QuantizationSpec& q, QuantModule module);

// A short phrase for reports: "mxfp4 (experts)", "nf4 (bitsandbytes, double quant)".
std::string QuantizationPhrase(const QuantizationSpec& q);

}  // namespace tally
