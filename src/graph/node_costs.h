// Non-matmul FLOP conventions and node constructors shared by the graph builders.
// Matmul FLOPs are exact (2·m·n·k); non-matmul FLOPs are a convention, reported apart. tally uses the
// per-element costs of DeepSpeed's flops profiler (deepspeed/profiling/flops_profiler/profiler.py):
// one FLOP per element for activations, bias and residual adds, softmax, scaling and dropout;
// 5 per element for LayerNorm with affine weights (mean, subtract, variance, normalize, scale-shift).
#pragma once

#include <string>

#include "graph/layer.h"
#include "util/checked_math.h"

namespace tally {

inline constexpr uint64_t kFlopsPerElementwise = 1;
inline constexpr uint64_t kFlopsPerLayerNormElement = 5;
// RMSNorm: square, accumulate, scale by the reciprocal root, multiply by the weight.
inline constexpr uint64_t kFlopsPerRmsNormElement = 4;
// Rotary embedding: two multiplies and one add per element of q and k (Su et al. 2021, Eq. 34).
inline constexpr uint64_t kFlopsPerRopeElement = 3;

// Multiplies counts for the node at `path`; overflow is an InputError naming the node.
inline uint64_t Count(const std::string& path, std::initializer_list<uint64_t> factors) {
  return CheckedProduct(factors, "a count of '" + path + "'");
}

// Adds a parameter tensor to `l`, keeping `l.params` its exact sum.
inline void AddParamTensor(Layer& l, std::vector<uint64_t> shape, bool tp_sharded, uint64_t tp_max_shards = 0) {
  uint64_t n = 1;
  for (uint64_t d : shape) n = CheckedMul(n, d, "parameters of '" + l.path + "'");
  l.params = CheckedAdd(l.params, n, "parameters of '" + l.path + "'");
  l.param_tensors.push_back({std::move(shape), tp_sharded, tp_max_shards});
}

// Megatron-LM's tensor-parallel split (Shoeybi et al. 2019, §3): a column-parallel linear splits its
// output (and bias) and takes a replicated input; a row-parallel one splits its input and keeps its
// bias whole.
enum class TpSplit { kNone, kColumn, kRow };

// Y = X·W (+ b) over `rows` rows: W is in x out. Saves X for dW.
inline Layer MakeLinear(const std::string& path, Component c, uint64_t rows, uint64_t in, uint64_t out, bool bias,
                        const std::string& input_id, bool input_needs_grad, TpSplit split = TpSplit::kNone) {
  Layer l;
  l.path = path;
  l.kind = LayerKind::kLinear;
  l.component = c;
  AddParamTensor(l, {in, out}, split != TpSplit::kNone);
  if (bias) AddParamTensor(l, {out}, split == TpSplit::kColumn);
  l.gemms.push_back({.m = rows, .n = out, .k = in, .grad_a = input_needs_grad});
  l.non_matmul_flops = bias ? Count(path, {rows, out}) : 0;
  // PyTorch keeps a linear's input only to compute dW: a frozen weight keeps nothing.
  l.saved.push_back(
      {.id = input_id, .elements = Count(path, {rows, in}), .tp_sharded = split == TpSplit::kRow, .dw_only = true});
  return l;
}

// The tensors an RMSNorm composed of ops as transformers writes it (LlamaRMSNorm: x.to(fp32),
// pow(2), mean(-1), rsqrt(+eps), x·rstd, cast back, times the weight) saves for backward: the fp32 x
// (pow and mul; x itself at fp32 activations), the fp32 rstd per normalized group (`groups`), and,
// with a weight, the normalized x it multiplies, in `normed`'s class (the input's dtype: fp32 in
// autocast's fp32 residual stream). PyTorch 2's mean saves only
// its input's sizes: x² is not kept (measured on an H100 with PyTorch 2.11, docs/validation.md;
// torch 1.13's mean kept it, which scripts/conformance states as a convention).
inline void SaveRmsNorm(Layer& l, const std::string& input, uint64_t elements, uint64_t groups, bool weight,
                        SavedClass normed = SavedClass::kAutocastFp32) {
  l.saved.push_back({.id = input, .elements = elements, .cls = SavedClass::kFp32});
  l.saved.push_back({.id = l.path + ":rstd", .elements = groups, .cls = SavedClass::kFp32});
  if (weight) l.saved.push_back({.id = l.path + ":normed", .elements = elements, .cls = normed});
}

// An elementwise node over `elements` values that saves `saved` (possibly none).
inline Layer MakeElementwise(const std::string& path, LayerKind kind, Component c, uint64_t elements,
                             uint64_t flops_per_element) {
  Layer l;
  l.path = path;
  l.kind = kind;
  l.component = c;
  l.non_matmul_flops = Count(path, {elements, flops_per_element});
  return l;
}

// Marks `l` as working on dimensions tensor parallelism splits (Layer::tp_split), and the tensors it
// saves with it: a rank holds 1/tp of them, K and V heads over at most `tp_max_shards` ranks.
inline void SplitOverTp(Layer& l, uint64_t tp_max_shards = 0) {
  l.tp_split = true;
  l.tp_max_shards = tp_max_shards;
  for (SavedTensor& t : l.saved) {
    t.tp_sharded = true;
    t.tp_max_shards = tp_max_shards;
  }
}

}  // namespace tally
