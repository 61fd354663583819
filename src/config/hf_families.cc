// The one table of supported Hugging Face model_type values (config/hf_families.h). A new family
// is a row here and its reader in the file of its group.
#include "config/hf_families.h"

namespace tally {

namespace {

constexpr HfFamily kFamilies[] = {
    {"bart", ReadHfTransformer<ReadBart>},
    {"bert", ReadHfTransformer<ReadBert>},
    {"bloom", ReadHfTransformer<ReadBloom>},
    {"cohere", ReadHfTransformer<ReadCohere>},
    {"cohere2", ReadHfTransformer<ReadCohere>},
    {"deepseek_v2", ReadHfTransformer<ReadDeepSeek>},
    {"deepseek_v3", ReadHfTransformer<ReadDeepSeek>},
    {"distilbert", ReadHfTransformer<ReadDistilBert>},
    {"dots1", ReadHfTransformer<ReadDots1>},
    {"falcon", ReadHfTransformer<ReadFalcon>},
    {"gemma", ReadHfTransformer<ReadLlamaLike>},
    {"gemma2", ReadHfTransformer<ReadLlamaLike>},
    {"gemma3", ReadHfTransformer<ReadGemma3>},
    {"gemma3_text", ReadHfTransformer<ReadLlamaLike>},
    {"glm4_moe", ReadHfTransformer<ReadGlm4Moe>},
    {"gpt2", ReadHfTransformer<ReadGpt2>},
    {"gpt_bigcode", ReadHfTransformer<ReadGpt2>},
    {"gpt_neox", ReadHfTransformer<ReadGptNeox>},
    {"gpt_oss", ReadHfTransformer<ReadLlamaLike>},
    {"gptj", ReadHfTransformer<ReadGptj>},
    {"granitemoe", ReadHfTransformer<ReadLlamaLike>},
    {"jamba", ReadHfJamba},
    {"llama", ReadHfTransformer<ReadLlamaLike>},
    {"llama4", ReadHfTransformer<ReadLlama4>},
    {"llama4_text", ReadHfTransformer<ReadLlamaLike>},
    {"llava", ReadHfTransformer<ReadLlava>},
    {"mamba", ReadHfMamba},
    {"mamba2", ReadHfMamba},
    {"mistral", ReadHfTransformer<ReadLlamaLike>},
    {"mixtral", ReadHfTransformer<ReadLlamaLike>},
    {"mt5", ReadHfTransformer<ReadT5>},
    {"olmo", ReadHfTransformer<ReadLlamaLike>},
    {"olmo2", ReadHfTransformer<ReadLlamaLike>},
    {"olmoe", ReadHfTransformer<ReadLlamaLike>},
    {"opt", ReadHfTransformer<ReadOpt>},
    {"phi", ReadHfTransformer<ReadPhi>},
    {"phi-msft", ReadHfTransformer<ReadPhiMsft>},
    {"phi3", ReadHfTransformer<ReadLlamaLike>},
    {"phimoe", ReadHfTransformer<ReadLlamaLike>},
    {"qwen2", ReadHfTransformer<ReadLlamaLike>},
    {"qwen2_moe", ReadHfTransformer<ReadLlamaLike>},
    {"qwen3", ReadHfTransformer<ReadLlamaLike>},
    {"qwen3_moe", ReadHfTransformer<ReadLlamaLike>},
    {"RefinedWeb", ReadHfTransformer<ReadFalcon>},
    {"RefinedWebModel", ReadHfTransformer<ReadFalcon>},
    {"roberta", ReadHfTransformer<ReadBert>},
    {"starcoder2", ReadHfTransformer<ReadStarcoder2>},
    {"t5", ReadHfTransformer<ReadT5>},
    {"umt5", ReadHfTransformer<ReadT5>},
    {"vit", ReadHfVit},
    {"whisper", ReadHfTransformer<ReadWhisper>},
    {"xlm-roberta", ReadHfTransformer<ReadBert>},
    {"zamba2", ReadHfZamba2},
};

constexpr std::string_view kLookalikes[] = {"gpt_neo", "qwen2_vl", "gemma3n", "gemma3n_text", "phi4mm"};

}  // namespace

std::span<const HfFamily> HfFamilyTable() { return kFamilies; }

const HfFamily* FindHfFamily(std::string_view model_type) {
  for (const HfFamily& f : kFamilies) {
    if (f.model_type == model_type) return &f;
  }
  return nullptr;
}

std::span<const std::string_view> HfLookalikeTypes() { return kLookalikes; }

}  // namespace tally
