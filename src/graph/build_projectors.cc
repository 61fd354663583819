// The projectors of graph/vision_builder.h: from the vision tower's features to image tokens of
// the language model's width (component projector; Llama 4's adapter and the Mllama global layers
// are the tower's): Gemma 3's (modeling_gemma3.py), Llama 4's (modeling_llama4.py), LLaVA's
// (modeling_llava.py), and issue 30's Qwen-VL patch mergers (modeling_qwen2_vl.py,
// modeling_qwen2_5_vl.py, modeling_qwen3_vl.py), Mistral 3's (modeling_mistral3.py), Idefics3's and
// InternVL's pixel-shuffle connectors (modeling_idefics3.py, modeling_internvl.py) and Mllama's
// (modeling_mllama.py). Saved tensors follow graph/build_vision.cc.
#include "graph/node_costs.h"
#include "graph/vision_builder.h"

namespace tally {

// Gemma3MultiModalProjector: the patch grid (a contiguous [d, side, side] copy per image) averaged
// over kernel = stride = side / sqrt(tokens_per_image), Gemma3RMSNorm over d (computed in fp32:
// it keeps the fp32 input, the rstd per row and the normalized x it scales by 1 + weight;
// graph/node_costs.h), then a d x text_width matmul without a bias.
void VisionBuilder::Projector() {
  const uint64_t d = v_.d_model, t = v_.tokens_per_image;
  const uint64_t tokens = Count("projector", {images_, t}), elements = Count("projector", {tokens, d});
  const std::vector<uint64_t> shape = {b_, Count("projector", {v_.images, t}), d};
  // DeepSpeed's profiler counts pooling as one FLOP per input element.
  Layer pool = MakeElementwise("projector.pool", LayerKind::kPool, Component::kProjector,
                               Count("projector", {rows_, d}), kFlopsPerElementwise);
  pool.saved.push_back({.id = pool.path + ":input", .elements = Count("projector", {rows_, d})});
  Push(std::move(pool), shape);
  Layer norm =
      MakeElementwise("projector.norm", LayerKind::kNorm, Component::kProjector, elements, kFlopsPerRmsNormElement);
  AddParamTensor(norm, {d}, false);
  SaveRmsNorm(norm, cur_, elements, tokens, true, SavedClass::kFp32);
  Push(std::move(norm), shape);
  Linear("projector.proj", tokens, d, text_width_, false, Component::kProjector,
         {b_, Count("projector", {v_.images, t}), text_width_});
}

// Llama 4: layernorm_post's output without the class token, pixel-shuffled (reshapes and a permute:
// a copy that fc1 keeps) into tokens_per_image tokens of d·shuffle² features;
// Llama4VisionPixelShuffleMLP's fc1 and fc2 without biases, each followed by GELU (which saves its
// input); then Llama4MultiModalProjector's linear_1 to the text width without a bias.
void VisionBuilder::Llama4Projector() {
  const uint64_t t = v_.tokens_per_image, a = v_.adapter_width;
  const uint64_t rows = Count("vision.adapter", {images_, t});
  const uint64_t wide = Count("vision.adapter", {v_.d_model, v_.shuffle, v_.shuffle});
  auto shape = [&](uint64_t width) {
    return std::vector<uint64_t>{b_, Count("vision.adapter", {v_.images, t}), width};
  };
  cur_ = "vision.adapter.shuffle";
  Linear("vision.adapter.fc1", rows, wide, a, false, Component::kVision, shape(a));
  for (const char* name : {"vision.adapter.act1", "vision.adapter.act2"}) {
    Layer act =
        MakeElementwise(name, LayerKind::kActivation, Component::kVision, Count(name, {rows, a}), kFlopsPerElementwise);
    act.saved.push_back({.id = cur_, .elements = Count(name, {rows, a})});
    Push(std::move(act), shape(a));
    if (name == std::string("vision.adapter.act1")) {
      Linear("vision.adapter.fc2", rows, a, a, false, Component::kVision, shape(a));
    }
  }
  Linear("projector.proj", rows, a, text_width_, false, Component::kProjector, shape(text_width_));
}

// CLIPVisionTransformer's post_layernorm over the class token of the last layer (its pooled output,
// which LLaVA does not use), then LlavaMultiModalProjector over the features of layer
// vision_feature_layer: the patches (class token dropped unless the strategy is "full"; the slice
// is copied for linear_1), linear_1, GELU, linear_2, with biases.
void VisionBuilder::ClipHead(const std::string& features) {
  const uint64_t d = v_.d_model, t = v_.tokens_per_image;
  dead_ = true;
  Layer post = MakeElementwise("vision.post_norm", LayerKind::kNorm, Component::kVision, Count("vision", {images_, d}),
                               kFlopsPerLayerNormElement);
  AddParamTensor(post, {d}, false);
  AddParamTensor(post, {d}, false);
  Push(std::move(post), {b_, v_.images, d});
  dead_ = false;
  const uint64_t rows = Count("projector", {images_, t});
  auto shape = [&](uint64_t width) { return std::vector<uint64_t>{b_, Count("projector", {v_.images, t}), width}; };
  cur_ = t == tokens_ ? features : "projector.select";
  Linear("projector.linear_1", rows, d, text_width_, true, Component::kProjector, shape(text_width_));
  Layer act = MakeElementwise("projector.act", LayerKind::kActivation, Component::kProjector,
                              Count("projector", {rows, text_width_}), kFlopsPerElementwise);
  act.saved.push_back({.id = cur_, .elements = Count("projector", {rows, text_width_})});
  Push(std::move(act), shape(text_width_));
  Linear("projector.linear_2", rows, text_width_, text_width_, true, Component::kProjector, shape(text_width_));
}

uint64_t VisionBuilder::MergedRows() const { return Count("projector", {images_, patches_ / (v_.merge * v_.merge)}); }

// PatchMerger (Qwen2-VL, Qwen2.5-VL; Qwen3VLVisionPatchMerger): ln_q over the tower width (an
// RMSNorm in Qwen2.5-VL), the merge x merge neighbours of each image token concatenated (the tower
// orders the patches so this is a view), fc1 (merge²·d square), GELU, fc2 to the text width, with
// biases. Qwen3-VL's deepstack mergers read their layers' outputs the same way, their LayerNorm after
// the concatenation (over merge²·d).
void VisionBuilder::QwenMerger() {
  const uint64_t wide = Count("projector", {v_.d_model, v_.merge, v_.merge}), rows = MergedRows();
  auto shape = [&](uint64_t width) {
    return std::vector<uint64_t>{b_, Count("projector", {v_.images, patches_ / (v_.merge * v_.merge)}), width};
  };
  auto mlp = [&](const std::string& p) {
    Linear(p + ".fc1", rows, wide, wide, true, Component::kProjector, shape(wide));
    Activation(p + ".act", rows, wide, Component::kProjector, shape(wide));
    Linear(p + ".fc2", rows, wide, text_width_, true, Component::kProjector, shape(text_width_));
  };
  Norm("projector.norm", rows_, v_.d_model, Component::kProjector);
  mlp("projector");
  for (size_t i = 0; i < v_.deepstack.size(); ++i) {
    const std::string p = "projector.deepstack." + std::to_string(i);
    cur_ = outputs_[v_.deepstack[i]];
    Norm(p + ".norm", rows, wide, Component::kProjector);
    mlp(p);
  }
}

// Mistral3MultiModalProjector over the last layer's output: an RMSNorm over d; Mistral3PatchMerger
// unfolds each merge x merge block of the patch grid (a copy the merging layer keeps) into a row of
// merge²·d and merges it to d without a bias; linear_1 to the text width, GELU, linear_2 (biases with
// multimodal_projector_bias).
void VisionBuilder::Mistral3Projector() {
  const uint64_t d = v_.d_model, wide = Count("projector", {d, v_.merge, v_.merge}), rows = MergedRows();
  auto shape = [&](uint64_t width) {
    return std::vector<uint64_t>{b_, Count("projector", {v_.images, patches_ / (v_.merge * v_.merge)}), width};
  };
  Norm("projector.norm", rows_, d, Component::kProjector, NormType::kRms);
  cur_ = "projector.unfold";
  Linear("projector.merge", rows, wide, d, false, Component::kProjector, shape(d));
  Linear("projector.linear_1", rows, d, text_width_, v_.projector_bias, Component::kProjector, shape(text_width_));
  Activation("projector.act", rows, text_width_, Component::kProjector, shape(text_width_));
  Linear("projector.linear_2", rows, text_width_, text_width_, v_.projector_bias, Component::kProjector,
         shape(text_width_));
}

// The pixel shuffle (reshapes and a permute of the patch grid, the class token dropped: a copy the
// next node keeps) of merge x merge patches into one token of merge²·d features; then Idefics3's
// modality projection (one linear to the text width without a bias) or InternVL's projector
// (LayerNorm over merge²·d, linear_1, GELU, linear_2, with biases).
void VisionBuilder::ShuffleProjector() {
  const uint64_t wide = Count("projector", {v_.d_model, v_.merge, v_.merge}), rows = MergedRows();
  auto shape = [&](uint64_t width) {
    return std::vector<uint64_t>{b_, Count("projector", {v_.images, patches_ / (v_.merge * v_.merge)}), width};
  };
  cur_ = "projector.shuffle";
  if (v_.kind == VisionKind::kIdefics3) {
    Linear("projector.proj", rows, wide, text_width_, false, Component::kProjector, shape(text_width_));
    return;
  }
  Norm("projector.norm", rows, wide, Component::kProjector, NormType::kLayer);
  Linear("projector.linear_1", rows, wide, text_width_, true, Component::kProjector, shape(text_width_));
  Activation("projector.act", rows, text_width_, Component::kProjector, shape(text_width_));
  Linear("projector.linear_2", rows, text_width_, text_width_, true, Component::kProjector, shape(text_width_));
}

// MllamaVisionModel after layernorm_post: the post-tile aspect-ratio embedding (a tiles·d row per
// aspect-ratio id and its gate), then the global layers, each branch scaled by the tanh of its gate.
void VisionBuilder::MllamaGlobalLayers() {
  Layer tile = MakeElementwise("vision.embed.post_tile", LayerKind::kEmbedding, Component::kVision,
                               Count("vision", {rows_, v_.d_model}), kFlopsPerElementwise);
  AddParamTensor(tile, {v_.aspect_ratios, Count("vision", {v_.tiles, v_.d_model})}, false);
  AddParamTensor(tile, {1}, false);
  Push(std::move(tile), Hidden(v_.d_model));
  for (uint64_t i = 0; i < v_.global_layers; ++i) EncoderLayer("vision.global." + std::to_string(i) + ".", true);
}

// The last global layer's output and the feature_layers' outputs concatenated (a copy the
// projector keeps, the padding dropped) into multi_modal_projector, one linear with a bias to the
// text width over every tile's patches and class token.
void VisionBuilder::MllamaProjector() {
  const uint64_t wide = Count("projector", {v_.d_model, 1 + v_.feature_layers.size()});
  const uint64_t per_image = Count("projector", {v_.tiles, v_.position_rows});
  const uint64_t rows = Count("projector", {b_, v_.images, per_image});
  cur_ = "projector.concat";
  Linear("projector.proj", rows, wide, text_width_, true, Component::kProjector,
         {b_, Count("projector", {v_.images, per_image}), text_width_});
}

}  // namespace tally
