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
    {"deberta-v2", ReadHfEncoder},
    {"deepseek_v2", ReadHfTransformer<ReadDeepSeek>},
    {"deepseek_v3", ReadHfTransformer<ReadDeepSeek>},
    {"distilbert", ReadHfTransformer<ReadDistilBert>},
    {"dots1", ReadHfTransformer<ReadDots1>},
    {"ernie4_5", ReadHfTransformer<ReadRecentLlama>},
    {"exaone4", ReadHfTransformer<ReadRecentLlama>},
    {"falcon", ReadHfTransformer<ReadFalcon>},
    {"gemma", ReadHfTransformer<ReadLlamaLike>},
    {"gemma2", ReadHfTransformer<ReadLlamaLike>},
    {"gemma3", ReadHfTransformer<ReadGemma3>},
    {"gemma3_text", ReadHfTransformer<ReadLlamaLike>},
    {"glm", ReadHfTransformer<ReadRecentLlama>},
    {"glm4", ReadHfTransformer<ReadRecentLlama>},
    {"glm4_moe", ReadHfTransformer<ReadGlm4Moe>},
    {"gpt2", ReadHfTransformer<ReadGpt2>},
    {"gpt_bigcode", ReadHfTransformer<ReadGpt2>},
    {"gpt_neox", ReadHfTransformer<ReadGptNeox>},
    {"gpt_oss", ReadHfTransformer<ReadLlamaLike>},
    {"gptj", ReadHfTransformer<ReadGptj>},
    {"granite", ReadHfTransformer<ReadRecentLlama>},
    {"granitemoe", ReadHfTransformer<ReadLlamaLike>},
    {"hunyuan_v1_dense", ReadHfTransformer<ReadRecentLlama>},
    {"idefics3", ReadHfTransformer<ReadIdefics3>},
    {"internvl", ReadHfTransformer<ReadInternVl>},
    {"jamba", ReadHfJamba},
    {"kimi_k2", ReadHfTransformer<ReadDeepSeek>},
    {"llama", ReadHfTransformer<ReadLlamaLike>},
    {"llama4", ReadHfTransformer<ReadLlama4>},
    {"llama4_text", ReadHfTransformer<ReadLlamaLike>},
    {"llava", ReadHfTransformer<ReadLlava>},
    {"mamba", ReadHfMamba},
    {"mamba2", ReadHfMamba},
    {"mistral", ReadHfTransformer<ReadLlamaLike>},
    {"mistral3", ReadHfTransformer<ReadMistral3>},
    {"mixtral", ReadHfTransformer<ReadLlamaLike>},
    {"mllama", ReadHfMllama},
    {"modernbert", ReadHfEncoder},
    {"mt5", ReadHfTransformer<ReadT5>},
    {"olmo", ReadHfTransformer<ReadLlamaLike>},
    {"olmo2", ReadHfTransformer<ReadLlamaLike>},
    {"olmo3", ReadHfTransformer<ReadRecentLlama>},
    {"olmoe", ReadHfTransformer<ReadLlamaLike>},
    {"opt", ReadHfTransformer<ReadOpt>},
    {"phi", ReadHfTransformer<ReadPhi>},
    {"phi-msft", ReadHfTransformer<ReadPhiMsft>},
    {"phi3", ReadHfTransformer<ReadLlamaLike>},
    {"phimoe", ReadHfTransformer<ReadLlamaLike>},
    {"qwen2", ReadHfTransformer<ReadLlamaLike>},
    {"qwen2_5_vl", ReadHfTransformer<ReadQwenVl>},
    {"qwen2_moe", ReadHfTransformer<ReadLlamaLike>},
    {"qwen2_vl", ReadHfTransformer<ReadQwenVl>},
    {"qwen3", ReadHfTransformer<ReadLlamaLike>},
    {"qwen3_moe", ReadHfTransformer<ReadLlamaLike>},
    {"qwen3_vl", ReadHfTransformer<ReadQwenVl>},
    {"qwen3_vl_moe", ReadHfTransformer<ReadQwenVl>},
    {"RefinedWeb", ReadHfTransformer<ReadFalcon>},
    {"RefinedWebModel", ReadHfTransformer<ReadFalcon>},
    {"roberta", ReadHfTransformer<ReadBert>},
    {"seed_oss", ReadHfTransformer<ReadRecentLlama>},
    {"smollm3", ReadHfTransformer<ReadRecentLlama>},
    {"smolvlm", ReadHfTransformer<ReadIdefics3>},
    {"starcoder2", ReadHfTransformer<ReadStarcoder2>},
    {"t5", ReadHfTransformer<ReadT5>},
    {"umt5", ReadHfTransformer<ReadT5>},
    {"vit", ReadHfVit},
    {"whisper", ReadHfTransformer<ReadWhisper>},
    {"xlm-roberta", ReadHfTransformer<ReadBert>},
    {"zamba2", ReadHfZamba2},
};

constexpr std::string_view kLookalikes[] = {"gpt_neo", "gemma3n", "gemma3n_text", "phi4mm"};

// transformers' model classes (the `architectures` a config names) of the rows above: how a config
// whose model_type is missing or is no row is read (config/hf_config.cc says so in a note).
constexpr HfArchitecture kArchitectures[] = {
    {"BartForConditionalGeneration", "bart"},
    {"BartModel", "bart"},
    {"BertForMaskedLM", "bert"},
    {"BertForSequenceClassification", "bert"},
    {"BertModel", "bert"},
    {"BloomForCausalLM", "bloom"},
    {"Cohere2ForCausalLM", "cohere2"},
    {"CohereForCausalLM", "cohere"},
    {"DebertaV2ForMaskedLM", "deberta-v2"},
    {"DebertaV2ForSequenceClassification", "deberta-v2"},
    {"DebertaV2Model", "deberta-v2"},
    {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"DistilBertForMaskedLM", "distilbert"},
    {"DistilBertForSequenceClassification", "distilbert"},
    {"DistilBertModel", "distilbert"},
    {"Dots1ForCausalLM", "dots1"},
    {"Ernie4_5ForCausalLM", "ernie4_5"},
    {"Exaone4ForCausalLM", "exaone4"},
    {"FalconForCausalLM", "falcon"},
    {"Gemma2ForCausalLM", "gemma2"},
    {"Gemma3ForCausalLM", "gemma3_text"},
    {"Gemma3ForConditionalGeneration", "gemma3"},
    {"GemmaForCausalLM", "gemma"},
    {"Glm4ForCausalLM", "glm4"},
    {"Glm4MoeForCausalLM", "glm4_moe"},
    {"GlmForCausalLM", "glm"},
    {"GPT2LMHeadModel", "gpt2"},
    {"GPTBigCodeForCausalLM", "gpt_bigcode"},
    {"GPTJForCausalLM", "gptj"},
    {"GPTNeoXForCausalLM", "gpt_neox"},
    {"GptOssForCausalLM", "gpt_oss"},
    {"GraniteForCausalLM", "granite"},
    {"GraniteMoeForCausalLM", "granitemoe"},
    {"HunYuanDenseV1ForCausalLM", "hunyuan_v1_dense"},
    {"Idefics3ForConditionalGeneration", "idefics3"},
    {"InternVLForConditionalGeneration", "internvl"},
    {"JambaForCausalLM", "jamba"},
    {"Llama4ForCausalLM", "llama4_text"},
    {"Llama4ForConditionalGeneration", "llama4"},
    {"LlamaForCausalLM", "llama"},
    {"LlavaForConditionalGeneration", "llava"},
    {"Mamba2ForCausalLM", "mamba2"},
    {"MambaForCausalLM", "mamba"},
    {"Mistral3ForConditionalGeneration", "mistral3"},
    {"MistralForCausalLM", "mistral"},
    {"MixtralForCausalLM", "mixtral"},
    {"MllamaForConditionalGeneration", "mllama"},
    {"ModernBertForMaskedLM", "modernbert"},
    {"ModernBertForSequenceClassification", "modernbert"},
    {"ModernBertModel", "modernbert"},
    {"MT5ForConditionalGeneration", "mt5"},
    {"Olmo2ForCausalLM", "olmo2"},
    {"Olmo3ForCausalLM", "olmo3"},
    {"OlmoeForCausalLM", "olmoe"},
    {"OlmoForCausalLM", "olmo"},
    {"OPTForCausalLM", "opt"},
    {"Phi3ForCausalLM", "phi3"},
    {"PhiForCausalLM", "phi"},
    {"PhiMoEForCausalLM", "phimoe"},  // the hub's spelling (remote code)
    {"PhimoeForCausalLM", "phimoe"},
    {"Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen2VLForConditionalGeneration", "qwen2_vl"},
    {"Qwen3ForCausalLM", "qwen3"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
    {"Qwen3VLForConditionalGeneration", "qwen3_vl"},
    {"Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe"},
    {"RobertaForMaskedLM", "roberta"},
    {"RobertaForSequenceClassification", "roberta"},
    {"RobertaModel", "roberta"},
    {"SeedOssForCausalLM", "seed_oss"},
    {"SmolLM3ForCausalLM", "smollm3"},
    {"SmolVLMForConditionalGeneration", "smolvlm"},
    {"Starcoder2ForCausalLM", "starcoder2"},
    {"T5ForConditionalGeneration", "t5"},
    {"UMT5ForConditionalGeneration", "umt5"},
    {"ViTForImageClassification", "vit"},
    {"ViTModel", "vit"},
    {"WhisperForConditionalGeneration", "whisper"},
    {"XLMRobertaForMaskedLM", "xlm-roberta"},
    {"XLMRobertaForSequenceClassification", "xlm-roberta"},
    {"XLMRobertaModel", "xlm-roberta"},
    {"Zamba2ForCausalLM", "zamba2"},
};

}  // namespace

std::span<const HfFamily> HfFamilyTable() { return kFamilies; }

std::span<const HfArchitecture> HfArchitectureTable() { return kArchitectures; }

const HfFamily* FindHfFamilyByArchitecture(std::string_view architecture) {
  for (const HfArchitecture& a : kArchitectures) {
    if (a.architecture == architecture) return FindHfFamily(a.model_type);
  }
  return nullptr;
}

const HfFamily* FindHfFamily(std::string_view model_type) {
  for (const HfFamily& f : kFamilies) {
    if (f.model_type == model_type) return &f;
  }
  return nullptr;
}

std::span<const std::string_view> HfLookalikeTypes() { return kLookalikes; }

}  // namespace tally
