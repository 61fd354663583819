// ModelSpec and Settings: the validated description of a model and of the run it is costed for.
// Parsing ends here; nothing downstream sees YAML or JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "util/error.h"

namespace tally {

enum class Family { kTransformer, kSequential };
enum class MlpKind { kGelu, kRelu, kSwiglu, kGeglu };
enum class NormKind { kLayerNorm, kRmsNorm };
enum class PositionKind { kLearned, kRope, kNone, kAlibi };
enum class ActivationKind { kRelu, kGelu, kSilu, kTanh, kSigmoid, kRelu6, kHardswish, kHardsigmoid };

struct TransformerSpec {
  uint64_t vocab_size = 0;
  uint64_t context_length = 0;
  uint64_t d_model = 0;
  uint64_t n_layers = 0;
  uint64_t n_heads = 0;
  uint64_t n_kv_heads = 0;  // == n_heads for multi-head attention
  uint64_t d_ff = 0;
  uint64_t head_dim = 0;  // d_model / n_heads unless the config gives it
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  // Biases per projection; the config's `bias` sets all three, and each can be overridden
  // (Qwen2 has q/k/v biases only).
  bool qkv_bias = true;
  bool out_bias = true;
  bool mlp_bias = true;
  bool lm_head_bias = false;  // Phi-2's head has one
  PositionKind position = PositionKind::kLearned;
  uint64_t position_offset = 0;  // extra learned position rows: OPT keeps 2
  uint64_t rotary_dim = 0;       // dimensions of each head that RoPE rotates (partial rotary); 0 = head_dim
  bool tied_embeddings = true;
  uint64_t embed_dim = 0;     // token embedding width when not d_model: project_in/out linears (OPT-350m)
  bool embedding_norm = false;  // a norm right after the token embedding (BLOOM)
  bool final_norm = true;
  // Parallel blocks (GPT-J, GPT-NeoX, Falcon, Phi): attention and MLP both read the block input
  // and are added to it together; with one norm per block both branches share it.
  bool parallel_block = false;
  uint64_t norms_per_block = 2;
  uint64_t n_experts = 0;  // mixture of experts: MLPs per block (0 = dense) ...
  uint64_t top_k = 0;      // ... and how many each token is routed to
  uint64_t sliding_window = 0;  // attention window in tokens (0 = none); caps the KV cache
  std::string dtype;            // default weight dtype, e.g. "bfloat16" (empty = unstated)
  double dropout = 0;  // probability; > 0 adds dropout nodes (they save masks for backward)
};

enum class SeqOp {
  kLinear, kConv2d, kPool, kAdaptivePool, kFlatten, kActivation, kLayerNorm, kDropout,
  kBatchNorm,  // BatchNorm2d over channels (or BatchNorm1d over features)
  kParallel,   // branches over the same input, joined (a residual block is branches [body, shortcut])
  kPatchEmbed,  // ViT: a patch conv to tokens, a class token and learned positions
  kEncoder,     // a pre-norm transformer encoder layer: nn.MultiheadAttention and a GELU MLP
  kClassToken,  // x[:, 0]: the class token's vector (a view)
};
enum class JoinKind { kAdd, kConcat, kMul };
// The loss a sequential model's training step ends in.
enum class LossKind { kAuto, kNone, kCrossEntropy };
enum class PoolKind { kMax, kAvg };

// One layer of a sequential model. Only the fields of its `op` are meaningful.
struct SeqLayerSpec {
  SeqOp op = SeqOp::kLinear;
  SourceLoc loc;
  uint64_t out = 0;  // linear: output features; conv2d: output channels
  bool bias = true;
  uint64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  uint64_t groups = 1;
  PoolKind pool = PoolKind::kMax;
  uint64_t out_h = 1, out_w = 1;  // adaptive pooling output size
  ActivationKind activation = ActivationKind::kRelu;
  double p = 0;  // dropout probability
  uint64_t expected_in = 0;  // linear/conv2d `in`, when written: checked against the incoming shape
  SourceLoc expected_in_loc;
  uint64_t dilation_h = 1, dilation_w = 1;  // conv2d and max pool
  bool ceil_mode = false;                   // pool: round the output size up (PyTorch's ceil_mode)
  JoinKind join = JoinKind::kAdd;           // parallel: how the branches' outputs are combined
  std::vector<std::vector<SeqLayerSpec>> branches;  // parallel: an empty branch is the identity
  uint64_t heads = 0;    // encoder: attention heads
  uint64_t mlp_dim = 0;  // encoder: the MLP's hidden width
  bool post_norm = false;  // encoder: LayerNorm after each residual add (the 2017 Transformer) instead of before
  uint64_t nodes = 1;  // graph nodes this layer expands to: 1 + its branches' (bounds a config's size)
};

struct SequentialSpec {
  std::vector<uint64_t> input;  // one sample's shape: [features] or [channels, height, width]
  std::vector<SeqLayerSpec> layers;
  LossKind loss = LossKind::kAuto;  // auto: cross_entropy when one sample's output is a vector of >= 2 classes
  SourceLoc loss_loc;
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::string source;  // the file it came from, as shown to the user
  Family family = Family::kTransformer;
  TransformerSpec transformer;  // when family == kTransformer
  SequentialSpec sequential;    // when family == kSequential
  std::vector<std::string> notes;         // assumptions the reader made (defaults a file left out)
};

const char* FamilyName(Family f);
const char* MlpName(MlpKind k);
const char* NormName(NormKind k);
const char* PositionName(PositionKind k);
const char* ActivationName(ActivationKind k);

}  // namespace tally
