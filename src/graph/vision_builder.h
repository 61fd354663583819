// The builder of a multimodal model's vision tower and projector (graph/build_vision.h): the tower's
// nodes in graph/build_vision.cc, the projectors' in graph/build_projectors.cc.
#pragma once

#include <string>
#include <vector>

#include "config/model_spec.h"
#include "graph/build_graph.h"
#include "graph/layer.h"

namespace tally {

class VisionBuilder {
 public:
  VisionBuilder(const VisionSpec& v, uint64_t text_width, const GraphSettings& settings, std::vector<Layer>& layers);

  void Build();

 private:
  // The tower's hidden states of `width`: every token of every image (tile) of the batch, one row each.
  std::vector<uint64_t> Hidden(uint64_t width) const;
  // Appends `l` with output `shape`; the next node reads its output, or `output_id` when given.
  void Push(Layer l, std::vector<uint64_t> shape, const std::string& output_id = "");
  void Linear(const std::string& path, uint64_t rows, uint64_t in, uint64_t out, bool bias, Component c,
              std::vector<uint64_t> shape);
  // Which norm: the tower's (LayerNorm, or RMSNorm under rms_norm), or one of them whatever the tower's.
  enum class NormType { kTower, kRms, kLayer };
  // A norm over `rows` rows of `width` (the tower's rows and width unless given), in component `c`.
  void Norm(const std::string& path, uint64_t rows = 0, uint64_t width = 0, Component c = Component::kVision,
            NormType type = NormType::kTower);
  // GELU or SiLU over `rows` x `width`, saving its input.
  void Activation(const std::string& path, uint64_t rows, uint64_t width, Component c, std::vector<uint64_t> shape);
  void Residual(const std::string& path);
  // A learned per-channel (or scalar) multiplier: layer scale, Mllama's tanh gates.
  void Scale(const std::string& path, uint64_t params);

  void Embeddings();
  void EncoderLayer(const std::string& p, bool gated = false);
  void Attention(const std::string& p);
  void Mlp(const std::string& p);

  // graph/build_projectors.cc.
  void Projector();
  void Llama4Projector();
  void ClipHead(const std::string& features);
  void QwenMerger();
  void Mistral3Projector();
  void ShuffleProjector();
  void MllamaGlobalLayers();
  void MllamaProjector();
  // `merge`² neighbouring patches of `width` as one row of merge²·width: `input`'s rows in a new
  // order (a copy the next linear keeps), `merged` rows per image.
  uint64_t MergedRows() const;

  const VisionSpec& v_;
  const uint64_t text_width_;
  const bool flash_;
  const uint64_t b_, side_, patches_;
  const bool llama4_, clip_;
  bool dead_ = false;    // building a layer whose output no loss reads
  bool window_ = false;  // building a layer that attends within windows (Qwen2.5-VL)
  const uint64_t tokens_, images_, rows_;
  std::vector<Layer>& layers_;
  std::string cur_ = std::string(kInputTensor);
  std::vector<std::string> outputs_;  // each layer's output id
};

}  // namespace tally
