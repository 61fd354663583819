// The multimodal wrappers of a Hugging Face config.json (gemma3, llama4, llava, and issue 30's that
// config/hf_families.h lists): a language model in `text_config` (or, in Qwen2-VL's and Qwen2.5-VL's
// first configs, at the top level), read as its own type, and a vision tower with its projector
// (config/hf_vision.h).
#include <optional>
#include <string>
#include <vector>

#include "config/hf_families.h"
#include "config/hf_reader.h"
#include "config/hf_vision.h"

namespace tally {
namespace {

// The language model is counted from text_config (of type `inner` when it does not say); the top
// level keeps the head tying and, with a vision_config, gives the tower that `vision` reads.
void Unwrap(HfReader& r, const std::string& type, const std::string& inner,
            VisionSpec (*vision)(const YAML::Node& root, const std::string& file)) {
  const YAML::Node text = r.m.Get("text_config");
  r.outer_tied =
      r.m.Has("tie_word_embeddings") ? std::optional<bool>(r.m.Bool("tie_word_embeddings", false)) : std::nullopt;
  if (!r.t.dtype) r.t.dtype = r.Dtype();
  const bool has_vision = r.m.Has("vision_config");
  if (has_vision) r.t.vision = vision(r.root, r.m.file());
  r.root = text;
  r.m = HfReader::Map(text, r.m.file(), "text_config");
  std::string text_type = r.m.String("model_type", inner);
  if (text_type != "gemma3_text" && text_type != "llama4_text") text_type = inner;  // the wrapper's own
  if (!r.t.dtype) r.t.dtype = r.Dtype();
  if (!has_vision) {
    r.spec.notes.push_back("the vision parameters of this " + type +
                           " checkpoint are not included: tally counts its language model (text_config)");
  }
  ReadLlamaLike(r, text_type);
}

// A wrapper of issue 30: the tower `vision` reads from the whole config (first: unwrapping
// text_config rebinds the nodes the reader shares), then the language model from text_config when
// there is one (else from the top level) as `text_type`.
template <class Vision>
void UnwrapWithVision(HfReader& r, const std::string& type, const std::string& text_type, Vision vision) {
  const std::string file = r.m.file();
  r.outer_tied =
      r.m.Has("tie_word_embeddings") ? std::optional<bool>(r.m.Bool("tie_word_embeddings", false)) : std::nullopt;
  if (!r.t.dtype) r.t.dtype = r.Dtype();
  if (r.m.Has("vision_config")) {
    r.t.vision = vision(r.root, file);
  } else {
    r.spec.notes.push_back("the vision parameters of this " + type +
                           " checkpoint are not included: tally counts its language model");
  }
  if (r.m.Has("text_config")) {
    const YAML::Node text = r.m.Get("text_config");
    r.root = text;
    r.m = HfReader::Map(text, file, "text_config");
    if (!r.t.dtype) r.t.dtype = r.Dtype();
  }
  ReadLlamaLike(r, text_type);
}

}  // namespace

// Qwen2-VL's and Qwen2.5-VL's language model is Qwen2's (q, k and v biases), Qwen3-VL's Qwen3's
// (q/k norms), Qwen3-VL-MoE's Qwen3-MoE's; M-RoPE has no parameters. Their towers and patch mergers:
// config/hf_vision_recent.cc.
void ReadQwenVl(HfReader& r, const std::string& type) {
  const std::string text = type == "qwen3_vl" ? "qwen3" : type == "qwen3_vl_moe" ? "qwen3_moe" : "qwen2";
  SourceLoc width_loc;
  UnwrapWithVision(r, type, text, [&](const YAML::Node& root, const std::string& file) {
    return ReadQwenVision(root, file, type, width_loc);
  });
  if (r.t.vision && r.t.vision->out_width != r.t.d_model) {
    throw InputError(width_loc, "the merger's output (" + std::to_string(r.t.vision->out_width) +
                                    ") is not the language model's width (" + std::to_string(r.t.d_model) + ")");
  }
}

// Mistral 3's language model is a Mistral (Mistral Small 3.1: head_dim 128 under a 5120 width);
// its tower is Pixtral's with Mistral3MultiModalProjector.
void ReadMistral3(HfReader& r, const std::string& type) { UnwrapWithVision(r, type, "mistral", ReadPixtralVision); }

// Idefics3's and SmolVLM's language model is a Llama (LlamaConfig's defaults apply to the keys
// text_config leaves out); their tower is SigLIP's with the pixel-shuffle connector.
void ReadIdefics3(HfReader& r, const std::string& type) {
  r.llama_defaults = true;
  UnwrapWithVision(r, type, "llama", [&type](const YAML::Node& root, const std::string& file) {
    return ReadIdefics3Vision(root, file, type);
  });
}

// InternVL's language model is whatever text_config names (InternVL2.5 and 3: Qwen2.5 or Qwen3,
// InternLM's are refused); its tower InternViT with the pixel-shuffle projector.
void ReadInternVl(HfReader& r, const std::string& type) {
  std::string text = "qwen2";
  if (r.m.Has("text_config") && r.m.Get("text_config").IsMap()) {
    const ConfigMap inner = HfReader::Map(r.m.Get("text_config"), r.m.file(), "text_config");
    text = inner.String("model_type", "qwen2");
    if (text != "qwen2" && text != "qwen3" && text != "llama" && text != "qwen3_moe") {
      throw InputError(inner.Loc("model_type"), "unsupported text_config model_type '" + text +
                                                    "' for internvl; tally reads qwen2, qwen3, qwen3_moe and llama");
    }
  }
  UnwrapWithVision(r, type, text, ReadInternVision);
}

// Mllama's language model (MllamaTextModel): a Llama whose embedding has 8 rows past the
// vocabulary and whose cross_attention_layers (ReadHfMllama) are gated cross-attention layers.
void ReadMllamaText(HfReader& r, const std::string& type) {
  UnwrapWithVision(r, type, "llama", ReadMllamaVision);
  r.t.extra_embedding_rows = 8;
}

// Gemma 3's SigLIP tower and projector; its language model is gemma3_text.
void ReadGemma3(HfReader& r, const std::string& type) { Unwrap(r, type, "gemma3_text", ReadGemma3Vision); }

// Llama 4's vision model and projector; its language model is llama4_text.
void ReadLlama4(HfReader& r, const std::string& type) { Unwrap(r, type, "llama4_text", ReadLlama4Vision); }

// LLaVA's CLIP tower and MLP projector; its language model is a llama with LlamaConfig's defaults.
void ReadLlava(HfReader& r, const std::string& type) {
  r.llama_defaults = true;
  Unwrap(r, type, "llama", ReadLlavaVision);
}

// configuration_mllama.py: cross_attention_layers (default 3, 8, ..., 38) of text_config.
ModelSpec ReadHfMllama(const YAML::Node& root, const std::string& file, const std::string& type) {
  // Read before the reader unwraps text_config (which rebinds the shared nodes).
  std::vector<uint64_t> cross = {3, 8, 13, 18, 23, 28, 33, 38};
  SourceLoc cross_loc = LocOf(root, file);
  const YAML::Node text = root["text_config"];
  uint64_t layers = 40;
  if (text && text.IsMap()) {
    HfReader inner(text, file);
    layers = inner.m.PositiveInt("num_hidden_layers", 40);
    if (inner.m.Has("cross_attention_layers")) {
      cross_loc = inner.m.Loc("cross_attention_layers");
      cross = inner.IntList("cross_attention_layers", layers);
    }
  }
  ModelSpec spec = HfReader(root, file).Read(type, ReadMllamaText);
  TransformerSpec& t = spec.transformer;
  if (t.n_layers > kMaxLayerSpecs) {
    throw InputError(cross_loc, "layers that differ are read for at most " + std::to_string(kMaxLayerSpecs) +
                                    " layers, got " + std::to_string(t.n_layers));
  }
  if (t.layer_specs.empty()) {
    for (const auto& [layer, count] : LayerRuns(t)) t.layer_specs.insert(t.layer_specs.end(), count, layer);
  }
  for (uint64_t i : cross) {
    if (i >= t.layer_specs.size()) {
      throw InputError(cross_loc, "a cross-attention layer past the " + std::to_string(t.n_layers) + " layers");
    }
    t.layer_specs[i].gated_cross = true;
  }
  return spec;
}

}  // namespace tally
