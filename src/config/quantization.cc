#include "config/quantization.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "util/checked_math.h"
#include "util/error.h"

namespace tally {
namespace {

using Json = nlohmann::json;

uint64_t UIntOr(const Json& q, const char* key, uint64_t fallback, const std::string& file) {
  if (!q.contains(key) || q[key].is_null()) return fallback;
  const Json& v = q[key];
  if (v.is_number_integer() && v.get<int64_t>() == -1) return 0;  // gptq's group_size -1: one group
  if (!v.is_number_unsigned() || v.get<uint64_t>() == 0) {
    throw InputError({file, 0, 0},
                     std::string("quantization_config.") + key + " must be a positive integer, got " + v.dump());
  }
  return v.get<uint64_t>();
}

bool BoolOr(const Json& q, const char* key, bool fallback) {
  return q.contains(key) && q[key].is_boolean() ? q[key].get<bool>() : fallback;
}

std::vector<std::string> Strings(const Json& q, const char* key) {
  std::vector<std::string> out;
  if (!q.contains(key) || !q[key].is_array()) return out;
  for (const Json& s : q[key]) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

uint64_t Groups(uint64_t in, uint64_t group_size) { return group_size == 0 ? 1 : CeilDiv(in, group_size); }

// The dot-separated names of a module path ("model.layers.*.self_attn" -> model, layers, *, self_attn).
// A compressed-tensors regex entry ("re:.*mlp.gate$") is read as the names it spells (mlp, gate).
std::vector<std::string> Names(const std::string& path) {
  const bool regex = path.rfind("re:", 0) == 0;
  std::vector<std::string> out(1);
  for (char c : regex ? path.substr(3) : path) {
    if (c == '.') {
      out.emplace_back();
    } else if (!regex || (c != '^' && c != '$' && c != '*' && c != '\\')) {
      out.back() += c;
    }
  }
  if (regex) std::erase(out, std::string());
  if (out.empty()) out.emplace_back();
  return out;
}

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Whether a modules_to_not_convert entry names `module` (or a module that contains it).
bool Names(const std::string& entry, QuantModule module) {
  bool attn = false, mlp = false, experts = false, router = false;
  const std::vector<std::string> names = Names(entry);
  for (const std::string& n : names) {
    attn = attn || Contains(n, "attn") || Contains(n, "attention");
    experts = experts || Contains(n, "experts");
    router = router || Contains(n, "router");
  }
  const std::string& last = names.back();
  router = router || last == "gate";
  mlp = !experts && !router && (last == "mlp" || last == "feed_forward" || last == "ffn" || last == "block_sparse_moe");
  switch (module) {
    case QuantModule::kAttention:
      return attn;
    case QuantModule::kMlp:
      return mlp;
    case QuantModule::kExperts:
      return mlp || experts;
    case QuantModule::kRouter:
      return mlp || router;
    case QuantModule::kHead:
      return last == "lm_head";
    default:
      return false;
  }
}

}  // namespace

bool ReadQuantization(const std::string& file, const std::string& json_text, QuantizationSpec& out) {
  const Json root = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_object() || !root.contains("quantization_config") || !root["quantization_config"].is_object()) {
    return false;
  }
  const Json& q = root["quantization_config"];
  out.name = q.contains("quant_method") && q["quant_method"].is_string() ? q["quant_method"].get<std::string>() : "";
  if (out.name == "fp8") {
    // DeepSeek-V3: "weight_block_size": [128, 128]; without it, one scale per tensor.
    out.method = QuantMethod::kFp8Block;
    if (q.contains("weight_block_size")) {
      const Json& b = q["weight_block_size"];
      if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
          b[0].get<uint64_t>() == 0 || b[1].get<uint64_t>() == 0) {
        throw InputError({file, 0, 0}, "quantization_config.weight_block_size must be two positive integers");
      }
      out.block_rows = b[0].get<uint64_t>();
      out.block_cols = b[1].get<uint64_t>();
    }
  } else if (out.name == "mxfp4") {
    out.method = QuantMethod::kMxfp4;
  } else if (out.name == "bitsandbytes") {
    const bool four = BoolOr(q, "load_in_4bit", false);
    if (!four && !BoolOr(q, "load_in_8bit", false)) return false;
    out.method = four ? QuantMethod::kBnb4bit : QuantMethod::kBnb8bit;
    out.double_quant = BoolOr(q, "bnb_4bit_use_double_quant", false);
    out.quant_type = q.contains("bnb_4bit_quant_type") && q["bnb_4bit_quant_type"].is_string()
                         ? q["bnb_4bit_quant_type"].get<std::string>()
                         : "fp4";
    out.skipped = Strings(q, "llm_int8_skip_modules");
    return true;
  } else if (out.name == "compressed-tensors") {
    out.method = QuantMethod::kCompressedTensors;
    ReadCompressedTensors(file, root, q, out);
    return true;
  } else if (out.name == "gptq" || out.name == "awq") {
    out.method = out.name == "gptq" ? QuantMethod::kGptq : QuantMethod::kAwq;
    out.bits = UIntOr(q, "bits", UIntOr(q, "w_bit", 4, file), file);
    out.group_size = UIntOr(q, "group_size", UIntOr(q, "q_group_size", 128, file), file);
    if (out.bits > 8 || 32 % out.bits != 0) {
      throw InputError({file, 0, 0}, "quantization_config.bits must be 2, 4 or 8, got " + std::to_string(out.bits));
    }
  } else {
    return false;
  }
  out.skipped = Strings(q, "modules_to_not_convert");
  return true;
}

QuantizationSpec QuantFlagSpec(Quant q) {
  QuantizationSpec s;
  switch (q) {
    case Quant::kInt8:
      s.method = QuantMethod::kBnb8bit;
      s.name = "bitsandbytes";
      break;
    case Quant::kInt4:
      s.method = QuantMethod::kGptq;
      s.name = "gptq";
      s.bits = 4;
      s.group_size = 128;
      break;
    case Quant::kFp8:
      s.method = QuantMethod::kFp8Block;
      s.name = "fp8";
      s.block_rows = s.block_cols = 128;
      break;
    case Quant::kNf4:
      s.method = QuantMethod::kBnb4bit;
      s.name = "bitsandbytes";
      s.quant_type = "nf4";
      s.double_quant = true;
      break;
    case Quant::kMxfp4:
      s.method = QuantMethod::kMxfp4;
      s.name = "mxfp4";
      break;
    case Quant::kNone:
      throw std::logic_error("QuantFlagSpec(Quant::kNone)");
  }
  return s;
}

bool WeightOnly(const QuantizationSpec& q) {
  switch (q.method) {
    case QuantMethod::kFp8Block:
      return false;
    case QuantMethod::kCompressedTensors:
      return !q.ct.is_float && !q.ct.input_activations;
    case QuantMethod::kMxfp4:
    case QuantMethod::kBnb4bit:
    case QuantMethod::kBnb8bit:
    case QuantMethod::kGptq:
    case QuantMethod::kAwq:
      return true;
  }
  return false;
}

uint64_t WeightBits(const QuantizationSpec& q) {
  switch (q.method) {
    case QuantMethod::kFp8Block:
    case QuantMethod::kBnb8bit:
      return 8;
    case QuantMethod::kMxfp4:
    case QuantMethod::kBnb4bit:
      return 4;
    case QuantMethod::kGptq:
    case QuantMethod::kAwq:
    case QuantMethod::kCompressedTensors:
      return q.bits;
  }
  return q.bits;
}

bool Quantizes(const QuantizationSpec& q, QuantModule module) {
  bool target = false;
  switch (module) {
    case QuantModule::kAttention:
    case QuantModule::kMlp:
      target = q.method != QuantMethod::kMxfp4;
      break;
    case QuantModule::kExperts:
      target = true;
      break;
    case QuantModule::kRouter:
      target = q.method == QuantMethod::kBnb4bit || q.method == QuantMethod::kBnb8bit ||
               q.method == QuantMethod::kCompressedTensors;
      break;
    case QuantModule::kHead:
      target = q.method == QuantMethod::kCompressedTensors;
      break;
    default:
      return false;
  }
  if (!target) return false;
  for (const std::string& entry : q.skipped) {
    if (Names(entry, module)) return false;
  }
  return true;
}

std::string QuantizationPhrase(const QuantizationSpec& q) {
  switch (q.method) {
    case QuantMethod::kFp8Block:
      return q.block_rows == 0 ? "fp8 e4m3, one scale per tensor"
                               : "fp8 e4m3, an fp32 scale per " + std::to_string(q.block_rows) + " x " +
                                     std::to_string(q.block_cols) + " block";
    case QuantMethod::kMxfp4:
      return "mxfp4 experts (4.25 bits)";
    case QuantMethod::kBnb4bit:
      return "bitsandbytes " + q.quant_type + (q.double_quant ? " with double quantization" : "");
    case QuantMethod::kBnb8bit:
      return "bitsandbytes int8, an fp32 scale per row";
    case QuantMethod::kGptq:
    case QuantMethod::kAwq:
      return q.name + " " + std::to_string(q.bits) + "-bit, " +
             (q.group_size == 0 ? std::string("one group") : "group " + std::to_string(q.group_size));
    case QuantMethod::kCompressedTensors:
      return CompressedTensorsPhrase(q);
  }
  return q.name;
}

uint64_t QuantizedLinearBytes(const QuantizationSpec& q, uint64_t out_features, uint64_t in_features) {
  const std::string what = "a quantized layer's bytes";
  const uint64_t n = CheckedMul(out_features, in_features, what);
  switch (q.method) {
    case QuantMethod::kFp8Block: {
      // One e4m3 byte per weight and one fp32 scale (weight_scale_inv) per block of
      // weight_block_size (transformers integrations/finegrained_fp8.py; DeepSeek-V3).
      const uint64_t blocks =
          q.block_rows == 0 ? 1
                            : CheckedMul(CeilDiv(out_features, q.block_rows), CeilDiv(in_features, q.block_cols), what);
      return CheckedAdd(n, CheckedMul(4, blocks, what), what);
    }
    case QuantMethod::kMxfp4:
      // OCP Microscaling Formats (MX) v1.0: blocks of 32 E2M1 values (16 bytes) sharing one E8M0
      // scale byte, 4.25 bits per weight; gpt-oss stores *_blocks and *_scales per row.
      return CheckedMul(17, CheckedMul(out_features, CeilDiv(in_features, 32), what), what);
    case QuantMethod::kBnb4bit: {
      // Dettmers et al. 2023 (QLoRA) §3: two 4-bit values per byte, an absmax per block of 64;
      // double quantization stores those as 8 bits with an fp32 constant per 256 blocks (+ an
      // fp32 offset), 0.127 bits per weight instead of 0.5.
      const uint64_t blocks = CeilDiv(n, 64);
      const uint64_t absmax = q.double_quant ? CheckedAdd(blocks, 4 * CeilDiv(blocks, 256) + 4, what) : 4 * blocks;
      return CheckedAdd(CeilDiv(n, 2), absmax, what);
    }
    case QuantMethod::kBnb8bit:
      // Dettmers et al. 2022 (LLM.int8()) §3: int8 weights with one fp32 scale per output row.
      return CheckedAdd(n, CheckedMul(4, out_features, what), what);
    case QuantMethod::kGptq:
    case QuantMethod::kAwq: {
      // AutoGPTQ QuantLinear / AutoAWQ WQLinear_GEMM buffers: qweight packs `bits`-bit values into
      // int32, qzeros likewise per group and output, fp16 scales per group and output; GPTQ adds an
      // int32 g_idx per input row.
      const uint64_t groups = Groups(in_features, q.group_size);
      const uint64_t per_group = CheckedMul(groups, out_features, what);
      uint64_t bytes = CheckedMul(n, q.bits, what) / 8;
      bytes = CheckedAdd(bytes, CheckedMul(per_group, q.bits, what) / 8, what);
      bytes = CheckedAdd(bytes, CheckedMul(per_group, 2, what), what);
      if (q.method == QuantMethod::kGptq) bytes = CheckedAdd(bytes, CheckedMul(in_features, 4, what), what);
      return bytes;
    }
    case QuantMethod::kCompressedTensors:
      return CompressedTensorsLinearBytes(q, out_features, in_features);
  }
  return n;
}

}  // namespace tally
