// ViT's config.json (google/vit-*), read as a sequential model: the layers of the vit-b-16 preset.
#include <string>

#include "config/hf_common.h"
#include "config/hf_families.h"
#include "config/hf_reader.h"

namespace tally {

// modeling_vit.py: ViTForImageClassification is ViTModel without its pooler, a final LayerNorm and a
// classifier on the class token; ViTModel keeps the pooler (a dense and tanh on the class token).
// The layers are torchvision's vit_b_16's (the vit-b-16 preset), so both build the same graph:
// a 16x16 patch convolution with a bias, a class token, learned positions, pre-norm encoder layers
// with q/k/v biases and a GELU MLP.
ModelSpec ReadHfVit(const YAML::Node& root, const std::string& file, const std::string& /*type*/) {
  const ConfigMap m = HfReader::Map(root, file, "config.json");
  ModelSpec spec = HfModelSpec(m, Family::kSequential, "vit");
  if (!m.Bool("qkv_bias", true)) throw InputError(m.Loc("qkv_bias"), "'qkv_bias: false' is not supported yet");
  const std::string act = m.String("hidden_act", "gelu");
  if (act != "gelu") {
    throw InputError(m.Loc("hidden_act"), "unsupported hidden_act '" + act + "'; tally reads gelu");
  }
  const uint64_t h = m.PositiveInt("hidden_size"), image = m.PositiveInt("image_size", 224);
  const uint64_t patch = m.PositiveInt("patch_size", 16);
  if (image % patch != 0) {
    throw InputError(m.Loc("patch_size"), "the image size (" + std::to_string(image) + ") is not a multiple of " +
                                              "the patch size (" + std::to_string(patch) + ")");
  }
  SequentialSpec& s = spec.sequential;
  s.input = {m.PositiveInt("num_channels", 3), image, image};
  const SourceLoc loc = m.MapLoc();
  auto layer = [&](SeqOp op) {
    SeqLayerSpec l;
    l.op = op;
    l.loc = loc;
    return l;
  };
  SeqLayerSpec embed = layer(SeqOp::kPatchEmbed);
  embed.kernel_h = embed.kernel_w = patch;
  embed.out = h;
  s.layers.push_back(embed);
  SeqLayerSpec encoder = layer(SeqOp::kEncoder);
  encoder.heads = m.PositiveInt("num_attention_heads");
  encoder.mlp_dim = m.PositiveInt("intermediate_size");
  if (h % encoder.heads != 0) {
    throw InputError(m.Loc("num_attention_heads"), "the hidden size (" + std::to_string(h) +
                                                       ") is not divisible by the number of heads (" +
                                                       std::to_string(encoder.heads) + ")");
  }
  const uint64_t n_layers = m.PositiveInt("num_hidden_layers");
  if (n_layers > 100'000) throw InputError(m.Loc("num_hidden_layers"), "more than 100000 layers");
  s.layers.insert(s.layers.end(), n_layers, encoder);
  s.layers.push_back(layer(SeqOp::kLayerNorm));
  s.layers.push_back(layer(SeqOp::kClassToken));
  std::string arch;
  if (m.Has("architectures") && m.Get("architectures").IsSequence() && m.Get("architectures").size() > 0 &&
      m.Get("architectures")[0].IsScalar()) {
    arch = m.Get("architectures")[0].Scalar();
  }
  SeqLayerSpec head = layer(SeqOp::kLinear);
  if (arch == "ViTForImageClassification") {
    // PretrainedConfig: the classes are id2label's entries, else num_labels (default 2).
    const bool labels = m.Has("id2label") && m.Get("id2label").IsMap() && m.Get("id2label").size() > 0;
    head.out = labels ? m.Get("id2label").size() : m.PositiveInt("num_labels", 2);
    s.layers.push_back(head);
  } else if (arch.empty() || arch == "ViTModel") {
    head.out = h;  // ViTPooler
    s.layers.push_back(head);
    SeqLayerSpec tanh = layer(SeqOp::kActivation);
    tanh.activation = ActivationKind::kTanh;
    s.layers.push_back(tanh);
    s.loss = LossKind::kNone;
  } else {
    throw InputError(m.Loc("architectures"),
                     "unsupported architecture '" + arch + "'; tally reads ViTModel and ViTForImageClassification");
  }
  return spec;
}

}  // namespace tally
