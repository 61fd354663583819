// The state the parts of the transformer builder share (graph/build_transformer.cc owns it; the
// embedding, attention, MLP and head builders add to it): the spec and settings, the nodes so far,
// where the next node goes, and the helpers that add the nodes every part uses.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "config/model_spec.h"
#include "graph/build_graph.h"
#include "graph/layer.h"

namespace tally {

struct TransformerContext {
  // `seq` and `target` are resolved lengths (an encoder–decoder's source and target; else both the seq).
  TransformerContext(const TransformerSpec& spec, const GraphSettings& graph_settings, uint64_t seq, uint64_t target);

  std::vector<uint64_t> Hidden() const { return {batch, seq, t.d_model}; }
  uint64_t EmbedDim() const { return t.embed_dim == 0 ? t.d_model : t.embed_dim; }
  // `name` under the block being built ("blocks.3.attn"), or as it is outside the blocks.
  std::string P(const std::string& name) const;

  // Appends `l` with output `shape` to the block being built; the next node reads its output, or
  // `output_id` when given (a node that updates a tensor in place).
  void Add(Layer l, std::vector<uint64_t> shape, const std::string& output_id = "");
  // A norm over `width` features of `rows` rows (the hidden size unless given). Its parameters
  // follow t.norm_params; `params` overrides their width (Qwen3's q_norm: head_dim over a·d), and
  // `weight_only` drops a LayerNorm's bias (the q/k norms: QkNorm in config/model_spec.h).
  Layer Norm(const std::string& path, uint64_t width = 0, uint64_t params = 0, std::string input = "",
             bool weight_only = false) const;
  // A saved dropout mask: CUDA's 1-byte bool, or on the CPU the noise tensor of the activation dtype.
  SavedClass MaskClass() const;
  // A dropout over `elements` values keeping the previous node's shape; nothing without dropout.
  // `tp_split`: on dimensions tensor parallelism splits (Layer::tp_split), else the residual stream.
  void Dropout(const std::string& path, uint64_t elements, Component c, bool tp_split = false);
  // Adds `branches` tensors to the residual stream: one add per branch and element.
  void Residual(const std::string& path, uint64_t branches);
  // Adds a linear and, when `target` is a LoRA target, its adapter: one, or one per module the
  // checkpoint stores the linear as (`parts`: each module's name and output width).
  void AddLinear(Layer l, std::vector<uint64_t> shape, const std::string& target,
                 const std::vector<std::pair<std::string, uint64_t>>& parts = {});
  // An encoder–decoder's blocks run over the target (the decoder) or the source (the encoder).
  void Stack(bool decoder);

  const TransformerSpec& t;
  const GraphSettings& settings;
  const uint64_t batch;
  uint64_t seq;                  // the sequence of the nodes being built (an encoder–decoder's source or target)
  const uint64_t context;        // tokens the queries follow: seq, or the cache length of a decode step
  const bool flash;              // flash attention
  uint64_t rows;                 // batch x seq: the m of every token-wise GEMM
  const uint64_t src_seq;        // an encoder–decoder's source length ...
  const uint64_t tgt_seq;        // ... and target length (else both the seq)
  std::string target_embedding;  // an encoder–decoder: ids of the decoder's embedded input ...
  std::string encoder_output;    // ... and of the encoder's output, which cross-attention reads
  // Mllama: the image tokens of one sequence its gated cross-attention layers read (every tile's
  // patches and class token), and the id of their features (the projector's output).
  uint64_t image_tokens = 0;
  std::string image_features;
  bool source_side;            // the nodes being added run over the source (Layer::source_side)
  bool bidirectional = false;  // the block being built attends both ways and caches nothing
  int block = -1;
  int block_type = -1;
  LayerSpec layer;      // the block being built
  uint64_t kv = 0;      // its keys per query
  bool causal = false;  // its attention kernel skips the masked half
  std::string cur;      // id of the tensor the next node consumes
  std::vector<Layer> layers;
};

}  // namespace tally
