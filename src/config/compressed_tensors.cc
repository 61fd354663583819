// compressed-tensors quantization_config (neuralmagic/compressed-tensors, the format llm-compressor
// saves): one weights scheme for every Linear, read strictly, and the exact bytes each quantized
// Linear stores. What tally cannot store exactly (several schemes, per-layer exceptions, sparse or
// fp4 formats) is refused.
#include <nlohmann/json.hpp>
#include <string>

#include "config/quantization.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace tally {
namespace {

using Json = nlohmann::json;

[[noreturn]] void Refuse(const std::string& file, const std::string& message) {
  throw InputError({file, 0, 0}, "quantization_config (compressed-tensors): " + message);
}

std::string Text(const Json& j, const char* key, const std::string& fallback) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

bool IsFormat(const std::string& f) {
  return f == "pack-quantized" || f == "naive-quantized" || f == "int-quantized" || f == "float-quantized";
}

// The scales' dtype is the weight's when quantized (compressed-tensors lifecycle/initialize.py,
// initialize_qparams: observed dtype, bf16 unless a float type): the config's torch_dtype.
void ReadScaleDtype(const Json& root, CompressedTensorsArgs& a) {
  const std::string dtype = Text(root, "torch_dtype", Text(root, "dtype", "bfloat16"));
  a.scale_dtype = dtype == "float32" ? "fp32" : dtype == "float64" ? "fp64" : dtype == "float16" ? "fp16" : "bf16";
  a.scale_bytes = dtype == "float32" ? 4 : dtype == "float64" ? 8 : 2;
}

// Static (not dynamic) activation quantization stores a scale (and, asymmetric, a zero point) per
// Linear: input_scale / output_scale of shape (1,) for the tensor strategy.
uint64_t ActivationBytes(const std::string& file, const Json& args, const char* which, uint64_t scale_bytes) {
  if (args.is_null()) return 0;
  if (!args.is_object()) Refuse(file, std::string(which) + " must be an object or null");
  if (args.contains("dynamic") && args["dynamic"].is_boolean() && args["dynamic"].get<bool>()) return 0;
  const std::string strategy = Text(args, "strategy", "tensor");
  if (strategy != "tensor") {
    Refuse(file, std::string(which) + ": static '" + strategy + "' activation scales are not modelled (tensor only)");
  }
  const bool symmetric =
      !args.contains("symmetric") || !args["symmetric"].is_boolean() || args["symmetric"].get<bool>();
  return scale_bytes + (symmetric ? 0 : 1);
}

// A projection's own name: an ignore entry naming one would keep part of a module unquantized,
// which the per-module rule cannot say.
bool IsProjection(const std::string& name) {
  static const char* const kNames[] = {
      "qkv", "c_attn", "c_proj", "c_fc", "dense",           "fc1",           "fc2",           "wq",          "wk", "wv",
      "wo",  "w1",     "w2",     "w3",   "query_key_value", "dense_h_to_4h", "dense_4h_to_h", "gate_up_proj"};
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_proj") == 0) return true;
  for (const char* n : kNames) {
    if (name == n) return true;
  }
  return false;
}

// Each ignore entry must name whole modules of every block: lm_head, attention, the MLP, experts,
// the router, or something tally does not build (a vision tower).
void CheckIgnore(const std::string& file, const std::string& entry) {
  const bool regex = entry.rfind("re:", 0) == 0;
  std::string names = regex ? entry.substr(3) : entry;
  std::string last, part;
  for (size_t i = 0; i <= names.size(); ++i) {
    if (i < names.size() && names[i] != '.') {
      if (!regex || (names[i] != '^' && names[i] != '$' && names[i] != '*' && names[i] != '\\')) part += names[i];
      continue;
    }
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) {
      Refuse(file, "ignore entry '" + entry +
                       "' names one layer; tally holds identical blocks once and applies "
                       "one rule to every block");
    }
    if (!part.empty()) last = part;
    part.clear();
  }
  if (IsProjection(last)) {
    Refuse(file, "ignore entry '" + entry +
                     "' names one projection; tally quantizes whole modules (attention, "
                     "mlp, experts, router, lm_head)");
  }
}

void ReadWeights(const std::string& file, const Json& w, QuantizationSpec& out) {
  CompressedTensorsArgs& a = out.ct;
  if (!w.is_object()) Refuse(file, "the config group quantizes no weights");
  const Json bits = w.value("num_bits", Json(8));
  if (!bits.is_number_unsigned() || bits.get<uint64_t>() == 0 || bits.get<uint64_t>() > 8) {
    Refuse(file, "weights.num_bits must be 1 to 8, got " + bits.dump());
  }
  out.bits = bits.get<uint64_t>();
  const std::string type = Text(w, "type", "int");
  if (type != "int" && type != "float") Refuse(file, "weights.type must be int or float, got '" + type + "'");
  a.is_float = type == "float";
  if (a.is_float && (out.bits != 8 || a.format == "pack-quantized")) {
    Refuse(file, "float weights are modelled at 8 bits (fp8 e4m3), unpacked; fp4 formats are not");
  }
  const Json group = w.value("group_size", Json());
  if (!group.is_null() && !group.is_number_integer()) Refuse(file, "weights.group_size must be an integer");
  const int64_t g = group.is_null() ? 0 : group.get<int64_t>();
  // QuantizationArgs.validate_model_after: no strategy means group (group_size > 0), channel
  // (group_size -1) or tensor (none).
  a.strategy = Text(w, "strategy", g > 0 ? "group" : g == -1 ? "channel" : "tensor");
  if (a.strategy == "group") {
    if (g <= 0) Refuse(file, "weights.strategy group needs a positive group_size");
    out.group_size = static_cast<uint64_t>(g);
  } else if (a.strategy == "block") {
    const Json b = w.value("block_structure", Json());
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
        b[0].get<uint64_t>() == 0 || b[1].get<uint64_t>() == 0) {
      Refuse(file, "weights.block_structure must be two positive integers");
    }
    out.block_rows = b[0].get<uint64_t>();
    out.block_cols = b[1].get<uint64_t>();
  } else if (a.strategy != "tensor" && a.strategy != "channel") {
    Refuse(file, "weights.strategy '" + a.strategy + "' is not modelled (tensor, channel, group, block)");
  }
  if (w.contains("dynamic") && !(w["dynamic"].is_boolean() && !w["dynamic"].get<bool>())) {
    Refuse(file, "dynamic weight quantization stores no scales tally can count");
  }
  a.symmetric = !w.contains("symmetric") || !w["symmetric"].is_boolean() || w["symmetric"].get<bool>();
  const Json order = w.value("actorder", Json());
  a.g_idx = a.strategy == "group" && ((order.is_boolean() && order.get<bool>()) || order == "group");
}

}  // namespace

void ReadCompressedTensors(const std::string& file, const Json& root, const Json& q, QuantizationSpec& out) {
  CompressedTensorsArgs& a = out.ct;
  a.format = Text(q, "format", "");
  if (q.contains("sparsity_config") && q["sparsity_config"].is_object() &&
      Text(q["sparsity_config"], "format", "dense") != "dense") {
    Refuse(file, "sparse formats (sparsity_config) are not modelled");
  }
  // A model saved before compression (status initialized, calibration or frozen) keeps its weights
  // unpacked at the model's dtype beside the scales: not the format's bytes.
  const std::string status = Text(q, "quantization_status", "compressed");
  if (status != "compressed") {
    Refuse(file, "quantization_status '" + status + "': only compressed checkpoints are modelled");
  }
  const Json groups = q.value("config_groups", Json());
  if (!groups.is_object() || groups.size() != 1) {
    Refuse(file, "tally reads exactly one config group (one scheme for every Linear), got " +
                     std::to_string(groups.is_object() ? groups.size() : 0));
  }
  const Json& group = groups.begin().value();
  if (!group.is_object()) Refuse(file, "config group '" + groups.begin().key() + "' must be an object");
  if (group.contains("format") && group["format"].is_string()) a.format = group["format"].get<std::string>();
  if (!IsFormat(a.format)) {
    Refuse(file, "format '" + a.format +
                     "' is not one tally stores exactly (pack-quantized, naive-quantized, int-quantized, "
                     "float-quantized)");
  }
  const Json targets = group.value("targets", Json());
  if (targets != Json::array({"Linear"})) {
    Refuse(file, "targets " + targets.dump() + ": tally models the targets [\"Linear\"] (every Linear layer)");
  }
  ReadWeights(file, group.value("weights", Json()), out);
  ReadScaleDtype(root, a);
  a.kv_cache_scheme = q.contains("kv_cache_scheme") && !q["kv_cache_scheme"].is_null();
  a.input_activations = group.contains("input_activations") && !group["input_activations"].is_null();
  a.activation_bytes =
      CheckedAdd(ActivationBytes(file, group.value("input_activations", Json()), "input_activations", a.scale_bytes),
                 ActivationBytes(file, group.value("output_activations", Json()), "output_activations", a.scale_bytes),
                 "activation scales");
  if (q.contains("ignore") && q["ignore"].is_array()) {
    for (const Json& entry : q["ignore"]) {
      if (!entry.is_string()) continue;
      CheckIgnore(file, entry.get<std::string>());
      out.skipped.push_back(entry.get<std::string>());
    }
  }
}

uint64_t CompressedTensorsLinearBytes(const QuantizationSpec& q, uint64_t out_features, uint64_t in_features) {
  const CompressedTensorsArgs& a = q.ct;
  const std::string what = "a quantized layer's bytes";
  // Scales per strategy (lifecycle/initialize.py): tensor (1,), channel (out, 1), group
  // (out, ⌈in/group⌉), block (⌈out/rows⌉, ⌈in/cols⌉).
  uint64_t per_row = 1, rows = out_features;
  if (a.strategy == "tensor") {
    rows = 1;
  } else if (a.strategy == "group") {
    per_row = CeilDiv(in_features, q.group_size);
  } else if (a.strategy == "block") {
    rows = CeilDiv(out_features, q.block_rows);
    per_row = CeilDiv(in_features, q.block_cols);
  }
  const uint64_t scales = CheckedMul(rows, per_row, what);
  const bool packed = a.format == "pack-quantized";
  const uint64_t pack = 32 / q.bits;
  // pack-quantized (PackedQuantizationCompressor): weight_packed int32 [out, ⌈in / (32/bits)⌉] and
  // weight_shape, torch.tensor(weight.shape): int64 [2]. The other formats (naive, int, float;
  // NaiveQuantizationCompressor) store the weight at QuantizationArgs.pytorch_dtype: int8 or fp8
  // e4m3, one byte each.
  uint64_t bytes =
      packed ? CheckedAdd(CheckedMul(CheckedMul(out_features, CeilDiv(in_features, pack), what), 4, what), 16, what)
             : CheckedMul(out_features, in_features, what);
  bytes = CheckedAdd(bytes, CheckedMul(scales, a.scale_bytes, what), what);
  if (!a.symmetric) {
    // Zero points (BaseQuantizationCompressor._skip_zp keeps them when asymmetric): packed along the
    // output dimension into int32 for pack-quantized group/channel, else one int8/fp8 byte per scale.
    const bool pack_zp = packed && (a.strategy == "group" || a.strategy == "channel");
    bytes = CheckedAdd(
        bytes, pack_zp ? CheckedMul(CheckedMul(CeilDiv(out_features, pack), per_row, what), 4, what) : scales, what);
  }
  if (a.g_idx) bytes = CheckedAdd(bytes, CheckedMul(in_features, 4, what), what);  // weight_g_idx int32 [in]
  return CheckedAdd(bytes, a.activation_bytes, what);
}

std::string CompressedTensorsPhrase(const QuantizationSpec& q) {
  const CompressedTensorsArgs& a = q.ct;
  std::string scope = a.strategy == "tensor"    ? "per tensor"
                      : a.strategy == "channel" ? "per output channel"
                      : a.strategy == "group"
                          ? "per group of " + std::to_string(q.group_size)
                          : "per " + std::to_string(q.block_rows) + " x " + std::to_string(q.block_cols) + " block";
  return "compressed-tensors " + a.format + ", " + (a.is_float ? "fp8 e4m3" : "int" + std::to_string(q.bits)) +
         " with a " + a.scale_dtype + " scale " + scope + (a.symmetric ? "" : " and a zero point") +
         (a.g_idx ? ", g_idx" : "");
}

}  // namespace tally
