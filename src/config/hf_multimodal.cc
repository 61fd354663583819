// The multimodal wrappers of a Hugging Face config.json (gemma3, llama4, llava): a language model
// in `text_config`, read as its own type, and a vision tower with its projector (config/hf_vision.h).
#include <string>

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

}  // namespace

// Gemma 3's SigLIP tower and projector; its language model is gemma3_text.
void ReadGemma3(HfReader& r, const std::string& type) { Unwrap(r, type, "gemma3_text", ReadGemma3Vision); }

// Llama 4's vision model and projector; its language model is llama4_text.
void ReadLlama4(HfReader& r, const std::string& type) { Unwrap(r, type, "llama4_text", ReadLlama4Vision); }

// LLaVA's CLIP tower and MLP projector; its language model is a llama with LlamaConfig's defaults.
void ReadLlava(HfReader& r, const std::string& type) {
  r.llama_defaults = true;
  Unwrap(r, type, "llama", ReadLlavaVision);
}

}  // namespace tally
