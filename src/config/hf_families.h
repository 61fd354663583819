// The model_type values tally reads in a Hugging Face config.json, each with its reader: the one
// table (config/hf_families.cc) from which every list of supported types is derived, and the
// readers it names, by the file that holds them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <span>
#include <string>
#include <string_view>

#include "config/hf_reader.h"
#include "config/model_spec.h"

namespace tally {

// Reads the whole config.json `root` (named `file` in errors) whose model_type is `type`.
using HfConfigReader = ModelSpec (*)(const YAML::Node& root, const std::string& file, const std::string& type);

struct HfFamily {
  std::string_view model_type;
  HfConfigReader read;
};

// Every supported model_type, in case-insensitive alphabetical order, each once.
std::span<const HfFamily> HfFamilyTable();

// The row of `model_type`, or nullptr.
const HfFamily* FindHfFamily(std::string_view model_type);

// Real model types a letter or two from a supported one, each a different architecture: never
// offered as a "did you mean".
std::span<const std::string_view> HfLookalikeTypes();

// A transformers model class named in a config's `architectures`, and the row that reads it.
struct HfArchitecture {
  std::string_view architecture;
  std::string_view model_type;
};

// Every class the table knows, for a config whose model_type is missing or not a row.
std::span<const HfArchitecture> HfArchitectureTable();

// The row of the model class `architecture` (HfArchitectureTable), or nullptr.
const HfFamily* FindHfFamilyByArchitecture(std::string_view architecture);

// Transformer families (HfFamilyRead; the table reads them through ReadHfTransformer).
// config/hf_encoders.cc: bert, roberta, xlm-roberta; distilbert.
void ReadBert(HfReader& r, const std::string& type);
void ReadDistilBert(HfReader& r, const std::string& type);
// config/hf_encoder_decoders.cc: t5, mt5, umt5; bart; whisper.
void ReadT5(HfReader& r, const std::string& type);
void ReadBart(HfReader& r, const std::string& type);
void ReadWhisper(HfReader& r, const std::string& type);
// config/hf_gpt.cc.
void ReadGpt2(HfReader& r, const std::string& type);  // gpt2, gpt_bigcode
void ReadPhi(HfReader& r, const std::string& type);
void ReadPhiMsft(HfReader& r, const std::string& type);
void ReadGptj(HfReader& r, const std::string& type);
void ReadStarcoder2(HfReader& r, const std::string& type);
void ReadFalcon(HfReader& r, const std::string& type);  // falcon, RefinedWeb, RefinedWebModel
void ReadOpt(HfReader& r, const std::string& type);
void ReadGptNeox(HfReader& r, const std::string& type);
void ReadBloom(HfReader& r, const std::string& type);
// config/hf_llama.cc: llama and its descendants (mistral, mixtral, qwen*, gemma*, llama4_text,
// gpt_oss, olmo*, phi3, phimoe, granitemoe); cohere, cohere2; deepseek_v2, deepseek_v3, kimi_k2.
void ReadLlamaLike(HfReader& r, const std::string& type);
// A model_type no row names whose keys are the standard decoder set (config/hf_config.cc): read
// as ReadLlamaLike reads a Llama, with the common MoE keys.
void ReadGenericDecoder(HfReader& r, const std::string& type);
void ReadCohere(HfReader& r, const std::string& type);
void ReadDeepSeek(HfReader& r, const std::string& type);
// config/hf_moe.cc: glm4_moe; dots1 (a Llama-like block with DeepSeek-V3's experts); dbrx;
// ernie4_5_moe; hunyuan_v1_moe; bailing_moe_v2 (Ling 2.0); minimax_m2.
void ReadGlm4Moe(HfReader& r, const std::string& type);
void ReadDots1(HfReader& r, const std::string& type);
void ReadDbrx(HfReader& r, const std::string& type);
void ReadErnie45Moe(HfReader& r, const std::string& type);
void ReadHunyuanMoe(HfReader& r, const std::string& type);
void ReadBailingMoeV2(HfReader& r, const std::string& type);
void ReadMiniMaxM2(HfReader& r, const std::string& type);
// config/hf_llama_kin.cc: dense decoders of Llama's kin under their own names, norms or MLPs.
void ReadApertus(HfReader& r, const std::string& type);
void ReadExaone(HfReader& r, const std::string& type);
void ReadInternLm2(HfReader& r, const std::string& type);
void ReadMiniCpm(HfReader& r, const std::string& type);
void ReadNemotron(HfReader& r, const std::string& type);
void ReadStableLm(HfReader& r, const std::string& type);
// config/hf_llama_recent.cc: the Llama descendants of 2024–25 (exaone4, ernie4_5, glm, glm4, granite,
// hunyuan_v1_dense, olmo3, seed_oss, smollm3).
void ReadRecentLlama(HfReader& r, const std::string& type);
// config/hf_hybrids.cc: decoders whose blocks mix attention with a recurrent mixer (the mixers in
// graph/build_ssm.cc).
void ReadRecurrentGemma(HfReader& r, const std::string& type);    // RG-LRU
void ReadQwen3Next(HfReader& r, const std::string& type);         // Gated DeltaNet
void ReadGraniteMoeHybrid(HfReader& r, const std::string& type);  // Mamba-2
void ReadNemotronH(HfReader& r, const std::string& type);         // Mamba-2
void ReadLfm2(HfReader& r, const std::string& type);              // short convolutions
void ReadFalconH1(HfReader& r, const std::string& type);          // attention and Mamba-2 side by side
void ReadKimiLinear(HfReader& r, const std::string& type);        // Kimi Delta Attention and MLA
void ReadMiniMax(HfReader& r, const std::string& type);           // lightning attention (minimax, minimax_m1)
// config/hf_multimodal.cc: a language model in text_config and a vision tower.
void ReadGemma3(HfReader& r, const std::string& type);
void ReadLlama4(HfReader& r, const std::string& type);
void ReadLlava(HfReader& r, const std::string& type);
void ReadQwenVl(HfReader& r, const std::string& type);  // qwen2_vl, qwen2_5_vl, qwen3_vl, qwen3_vl_moe
void ReadMistral3(HfReader& r, const std::string& type);
void ReadIdefics3(HfReader& r, const std::string& type);  // idefics3, smolvlm
void ReadInternVl(HfReader& r, const std::string& type);

// Other readers (HfConfigReader).
// config/hf_encoders.cc: modernbert and deberta-v2 (their first block differs from the rest).
ModelSpec ReadHfEncoder(const YAML::Node& root, const std::string& file, const std::string& type);
// config/hf_multimodal.cc: mllama (Llama 3.2 Vision), whose cross-attention layers differ.
ModelSpec ReadHfMllama(const YAML::Node& root, const std::string& file, const std::string& type);
// config/hf_gemma3n.cc: gemma3n (Gemma3nForConditionalGeneration) and gemma3n_text
// (Gemma3nForCausalLM): per-layer embeddings, AltUp, LAuReL, KV sharing, MatFormer widths
// (Gemma3nSpec in config/model_spec.h).
ModelSpec ReadHfGemma3n(const YAML::Node& root, const std::string& file, const std::string& type);
// config/hf_vit.cc: ViT as a sequential model.
ModelSpec ReadHfVit(const YAML::Node& root, const std::string& file, const std::string& type);
// config/hf_ssm.cc: mamba (MambaForCausalLM), falcon_mamba (FalconMambaForCausalLM: Mamba's with
// weightless norms on Δ, B and C) and mamba2 (Mamba2ForCausalLM); the hybrid jamba (JambaForCausalLM).
ModelSpec ReadHfMamba(const YAML::Node& root, const std::string& file, const std::string& type);
ModelSpec ReadHfJamba(const YAML::Node& root, const std::string& file, const std::string& type);
// config/hf_zamba2.cc: Zamba2 (Zamba2ForCausalLM; configuration_zamba2.py, modeling_zamba2.py).
// Every block is a Mamba-2 block (Zamba2MambaDecoderLayer); the hybrid ones (layers_block_type
// "hybrid") first run a shared transformer block and their own linear, whose output joins the
// Mamba-2 block's input (ZambaSpec in config/model_spec.h). Anything tally does not model exactly
// is an InputError at its key.
ModelSpec ReadHfZamba2(const YAML::Node& root, const std::string& file, const std::string& type);

}  // namespace tally
