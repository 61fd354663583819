// ModelSpec and Settings: the validated description of a model and of the run it is costed for.
// Parsing ends here; nothing downstream sees YAML or JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/quantization.h"
#include "config/settings.h"
#include "util/error.h"

namespace tally {

enum class Family { kTransformer, kSequential };
// The feed-forward: GELU or ReLU (up, down), SwiGLU or GeGLU (gate, up, down), ReLU² (Nemotron:
// relu(x)², up and down; Primer, So et al. 2021) or xIELU (Apertus: up and down, and two learnable
// scalars per MLP; Huang et al. 2024, arXiv:2411.13010).
enum class MlpKind { kGelu, kRelu, kSwiglu, kGeglu, kRelu2, kXielu };
enum class NormKind { kLayerNorm, kRmsNorm };
enum class PositionKind { kLearned, kRope, kNone, kAlibi };
enum class ActivationKind { kRelu, kGelu, kSilu, kTanh, kSigmoid, kRelu6, kHardswish, kHardsigmoid };
// Where a block's norms sit: before each branch (pre-norm, GPT-2 onwards), after each branch and
// before its residual add (post-norm: OLMo-2), both (Gemma 2/3's four norms per block), or over
// the sum after each residual add, LayerNorm(x + branch(x)) (the 2017 Transformer, BERT).
enum class NormPlacement { kPre, kPost, kSandwich, kAfterAdd };
// What an encoder ends in (transformers' BertModel, BertForMaskedLM, BertForSequenceClassification):
// the last hidden states (and the pooler, when it has one), a masked-LM head (a dense transform,
// its activation and LayerNorm, then the decoder tied to the embedding with a bias of V), or a
// classifier over the first token.
enum class EncoderHead { kNone, kMaskedLm, kClassifier };
// A norm's parameters: LayerNorm has a weight and a bias, RMSNorm a weight (kAffine); Cohere's
// LayerNorm only a weight; OLMo-1's none.
enum class NormParams { kAffine, kWeightOnly, kNone };
// RMSNorms on the queries and keys before RoPE: one weight of head_dim shared by every head (Qwen3,
// Gemma 3), or one weight per element of the whole projection, a·d and g·d (OLMo-2, Cohere, and
// StableLM 2's LayerNorm per head). A weight only: a LayerNorm model's q/k norms have no bias.
enum class QkNorm { kNone, kPerHead, kProjection };

// Which keys an attention layer's queries see, and so what its KV cache holds per sequence:
// every earlier token (full); the last `span` tokens (sliding window: Beltagy et al. 2020, Mistral);
// the tokens of the current `span`-token chunk (Llama 4's chunked attention); or, for multi-head
// latent attention (DeepSeek-V2 §2.1), every token as one compressed latent vector; or an
// encoder–decoder's cross-attention, whose keys are the `span` source tokens the encoder read,
// cached once whatever the number of generated tokens.
enum class AttentionKind { kFull, kSliding, kChunked, kLatent, kCross };

// What mixes the tokens of a block: attention, or a recurrent mixer whose shapes are
// TransformerSpec::ssm: a selective state-space model (Mamba: Gu & Dao 2023; Mamba-2: Dao & Gu
// 2024), the gated delta rule (Gated DeltaNet: Yang et al. 2024, Qwen3-Next), its channel-wise
// gated form (Kimi Delta Attention: Kimi Team 2025, Kimi Linear), lightning attention (MiniMax
// 2025, MiniMax-01), or Griffin's RG-LRU (De et al. 2024, RecurrentGemma), or LFM2's gated short
// convolution; or none, a block of its norm and MLP alone (Nemotron-H's "-").
enum class MixerKind { kAttention, kMamba, kMamba2, kGatedDeltaNet, kKimiDelta, kLightning, kRgLru, kShortConv, kNone };

// What sets one transformer block apart from another: its mixer, its attention and whether its MLP
// is a mixture of experts. Blocks with equal LayerSpecs are built once (graph/layer_graph.h).
struct LayerSpec {
  AttentionKind attention = AttentionKind::kFull;
  uint64_t span = 0;  // window (sliding) or chunk (chunked) in tokens; 0 otherwise
  bool moe = false;   // a mixture-of-experts MLP (width moe_d_ff), else the dense MLP (width d_ff)
  MixerKind mixer = MixerKind::kAttention;
  bool mlp = true;  // false: the block is its norm and mixer alone (Mamba's MambaBlock, Nemotron-H's)
  // Encoder–decoders (TransformerSpec::encoder_layers): a decoder block, with cross-attention over
  // the encoder's output after its self-attention; whether the block holds a relative-position
  // bias table (T5: the first block of each stack; UMT5: every block); and, for the first decoder
  // block, that it applies the encoder stack's final norm to the encoder's output it reads.
  bool cross_attention = false;
  bool relative_bias = false;
  bool encoder_output = false;
  // Zamba2 (TransformerSpec::zamba): 1 + the block's place among the hybrid blocks, whose shared
  // transformer block and adapters it runs before its Mamba-2 mixer; 0: none.
  uint64_t hybrid = 0;
  // false: the block's attention reads its input unnormalized (modeling_modernbert.py: layer 0's
  // attn_norm is nn.Identity).
  bool attn_norm = true;
  // Mllama (modeling_mllama.py, MllamaCrossAttentionDecoderLayer): the block is a cross-attention
  // layer over the image tokens in place of self-attention, each branch scaled by a learned tanh gate.
  bool gated_cross = false;
  // DeBERTa-v2's ConvLayer (DisentangledSpec::conv_kernel) runs after this block: block 0.
  bool conv = false;
  // Gemma 3n (Gemma3nSpec): the block reads the K and V of an earlier layer of its kind and caches
  // none of its own (num_kv_shared_layers); its MLP's width when not d_ff (MatFormer's per-layer
  // intermediate_size; 0: d_ff); and a Gaussian top-k over the gate (activation_sparsity_pattern > 0).
  bool kv_shared = false;
  uint64_t d_ff = 0;
  bool sparse_gate = false;
  auto operator<=>(const LayerSpec&) const = default;
};

// A recurrent mixer (modeling_mamba.py, modeling_mamba2.py in transformers). The gated delta rule
// reads its shapes as Mamba-2's, the analogy of Yang et al. 2024 (§3): its value heads are n_heads
// of d_inner / n_heads channels (linear_value_head_dim), its key heads are the n_groups that share
// q and k (Mamba-2's C and B) of d_state each (linear_key_head_dim); the state per head is
// [d_state, head_dim]. Kimi Delta Attention: n_heads (= n_groups) heads of d_state for q, k and v
// alike, d_inner = n_heads · d_state. Lightning attention: n_heads heads of d_state, d_inner =
// n_heads · d_state, computed in blocks of `block` tokens. RG-LRU: d_inner is lru_width, n_heads the
// blocks of its block-diagonal gates.
struct SsmSpec {
  MixerKind kind = MixerKind::kAttention;  // kMamba / kMamba2: every block's mixer, unless layer_specs say
  uint64_t d_inner = 0;                    // expand · d_model
  uint64_t d_state = 0;                    // N, the state per channel (Mamba) or per head (Mamba-2)
  uint64_t conv_kernel = 0;                // the causal depthwise convolution's width
  uint64_t dt_rank = 0;                    // Mamba: time_step_rank
  bool proj_bias = false;                  // in_proj and out_proj (use_bias)
  bool conv_bias = true;                   // use_conv_bias
  uint64_t n_heads = 0;                    // Mamba-2: num_heads (head_dim = d_inner / n_heads)
  uint64_t n_groups = 0;                   // Mamba-2: groups sharing B and C
  // Jamba (modeling_jamba.py, JambaMambaMixer): RMSNorms with weights over Δ (dt_rank), B and C (N)
  // after x_proj; transformers then cannot train with mamba_ssm's fused MambaInnerFn.
  bool inner_norms = false;
  // FalconMamba (modular_falcon_mamba.py, FalconMambaMixer): the same three RMSNorms without weights,
  // inside the fused kernel transformers trains with (kernels/falcon_mamba's mamba_inner_fn).
  bool unit_inner_norms = false;
  // Mamba-2: the gated RMSNorm before out_proj (Falcon-H1 has it only with mamba_rms_norm), and a
  // bias on out_proj alone (Falcon-H1's projectors_bias).
  bool gated_norm = true;
  bool out_bias = false;
  uint64_t block = 0;  // lightning attention: block_size, the tokens of one intra-block product
  auto operator<=>(const SsmSpec&) const = default;
};

// Multi-head latent attention (DeepSeek-V2 §2.1; modeling_deepseek_v3.py): queries through a
// low-rank pair (q_a_proj, q_a_layernorm, q_b_proj) or one q_proj when q_lora_rank is 0; keys and
// values from one latent of kv_lora_rank plus a shared RoPE key of qk_rope_head_dim
// (kv_a_proj_with_mqa, kv_a_layernorm), expanded per head by kv_b_proj.
struct MlaSpec {
  uint64_t q_lora_rank = 0;
  uint64_t kv_lora_rank = 0;  // 0: not MLA
  uint64_t qk_nope_head_dim = 0;
  uint64_t qk_rope_head_dim = 0;
  uint64_t v_head_dim = 0;
  // The cache as Hugging Face's eager code keeps it: full K and V per head, a·(nope + rope + v)
  // per token, instead of the latent engines with weight absorption keep.
  bool full_kv_cache = false;
  auto operator<=>(const MlaSpec&) const = default;
};

// Zamba2 (modeling_zamba2.py; Glorioso et al. 2024): `shared_blocks` transformer blocks
// (num_mem_blocks) used in turn at the hybrid blocks (LayerSpec::hybrid), whose attention reads the
// concatenation [hidden, embedding] of width 2·d_model (heads of head_dim = 2·d_model / n_heads);
// each hybrid block adds its own LoRA-style adapters of `adapter_rank` (on gate_up always, on q, k
// and v with `attention_adapters`) and its own linear d_model x d_model. 0 shared blocks: not Zamba2.
struct ZambaSpec {
  uint64_t shared_blocks = 0;
  uint64_t adapter_rank = 0;
  bool attention_adapters = false;
  bool rope = false;  // use_mem_rope: RoPE on the shared attention's q and k
  auto operator<=>(const ZambaSpec&) const = default;
};

// DeBERTa's disentangled attention (He et al. 2021, §3.1; modeling_deberta_v2.py): one table of
// `rel_rows` relative-position embeddings (rel_embeddings, 2·position_buckets rows, else
// 2·max_relative_positions) shared by every layer, LayerNorm'd once (norm_rel_ebd "layer_norm");
// each layer projects the table to position keys (c2p) and position queries (p2c), with its own
// key and query projections when share_att_key, else with pos_key_proj and pos_query_proj (biases),
// and adds q·pos_kᵀ and k·pos_qᵀ, gathered to the query–key pairs, to its scores. `conv_kernel` > 0:
// ConvLayer after the first layer, a Conv1d h -> h of that kernel over the sequence (`conv_groups`
// groups, a bias), then a LayerNorm over the residual sum. rel_rows 0: not DeBERTa.
struct DisentangledSpec {
  uint64_t rel_rows = 0;
  bool rel_norm = false;
  bool share_att_key = false;
  bool c2p = false;
  bool p2c = false;
  uint64_t conv_kernel = 0;
  uint64_t conv_groups = 1;
  auto operator<=>(const DisentangledSpec&) const = default;
};

// Gemma 3n (transformers modeling_gemma3n.py, Gemma3nTextModel; configuration_gemma3n.py): the
// hidden state is `altup_inputs` streams (AltUp, Baykal et al. 2023) of which each block computes
// one; each block has a LAuReL residual of rank `laurel_rank` (Menghani et al. 2024) and reads its
// slice of width `per_layer_width` of the per-layer embedding (a table of `per_layer_vocab` rows
// and n_layers·per_layer_width columns, plus a projection of the token embedding). The multimodal
// wrapper's audio tower (Gemma3nAudioEncoder), its vision tower (timm's mobilenetv5_300m_enc, when
// vision_tower_counted) and the two embedders that map the audio and vision soft tokens into the
// text width (Gemma3nMultimodalEmbedder) are counted. altup_inputs 0: not Gemma 3n.
struct Gemma3nSpec {
  uint64_t altup_inputs = 0;
  uint64_t laurel_rank = 0;
  uint64_t per_layer_width = 0;
  uint64_t per_layer_vocab = 0;
  // Gemma3nAudioConfig: hidden_size, conf_num_hidden_layers, input_feat_size, conf_conv_kernel_size,
  // sscp_conv_channel_size and the two convolutions' kernels and strides, vocab_size; 0 width: none.
  uint64_t audio_width = 0;
  uint64_t audio_layers = 0;
  uint64_t audio_mel_bins = 0;
  uint64_t audio_conv_kernel = 0;
  uint64_t audio_heads = 0;
  std::vector<uint64_t> sscp_channels;              // two
  std::vector<std::vector<uint64_t>> sscp_kernels;  // two (time, frequency) pairs
  std::vector<std::vector<uint64_t>> sscp_strides;
  uint64_t audio_vocab = 0;
  // Gemma3nVisionConfig: hidden_size and vocab_size, which embed_vision reads; 0 width: none.
  uint64_t vision_width = 0;
  uint64_t vision_vocab = 0;
  // Gemma3nVisionConfig.architecture, the timm model the tower is; counted (vision_tower_counted)
  // when it is one graph/build_mobilenetv5.h derives and model_args passes timm nothing.
  std::string vision_architecture;
  bool vision_tower_counted = false;
};

// The most blocks a per-block pattern may spell out (uniform models have no such limit).
inline constexpr uint64_t kMaxLayerSpecs = 1'000'000;

// A multimodal checkpoint's vision tower and its projector into the language model
// (graph/build_vision.cc). Both towers are ViTs of pre-norm layers (LayerNorm with bias, q/k/v/out
// and fc1/fc2 with biases, GELU) ending in a LayerNorm.
//  - kSiglip: Gemma 3's. SiglipVisionModel without its attention-pooling head (modeling_siglip.py):
//    a patch_size x patch_size convolution with a bias and one learned position per patch, no class
//    token. Gemma3MultiModalProjector (modeling_gemma3.py): an average pool of the patch grid to
//    tokens_per_image tokens, an RMSNorm of the vision width, a projection to the text width.
//  - kLlama4: Llama4VisionModel (modeling_llama4.py): the patches unfolded through a linear without a
//    bias, a class token appended and learned positions, a LayerNorm before the layers, 2D RoPE on q
//    and k; the class token dropped, a pixel shuffle of 1/shuffle (4 patches into one token of 4·d),
//    the vision adapter (fc1 to adapter_width, GELU, fc2, GELU, no biases); Llama4MultiModalProjector
//    projects adapter_width to the text width without a bias.
//  - kClip: LLaVA's. CLIPVisionModel (modeling_clip.py): a patch convolution without a bias, a class
//    token in front and learned positions, pre_layrnorm, the layers, post_layernorm over the class
//    token only. LlavaMultiModalProjector (modeling_llava.py): from the patches' features (class
//    token dropped) linear_1 to the text width, GELU, linear_2, with biases. Layers past
//    vision_feature_layer still run forward (transformers runs the whole tower) but get no gradient.
// Issue 30's towers share those layers, with the differences VisionSpec's flags name:
//  - kQwenMerger: Qwen2-VL's and Qwen2.5-VL's (modeling_qwen2_vl.py, modeling_qwen2_5_vl.py): a
//    Conv3d over temporal_patch frames of patch x patch pixels (an image is its frames repeated),
//    2D RoPE, no learned positions and no final norm; PatchMerger: a norm over the tower width
//    (ln_q), `merge`² neighbouring patches concatenated, fc1 (4·d -> 4·d), GELU, fc2 to the text
//    width, with biases. Qwen2.5-VL's norms are RMSNorms, its MLP gated (SiLU) with biases, and its
//    layers but `full_layers` attend within windows of `window_tokens` patches.
//  - kQwen3Merger: Qwen3-VL's (modeling_qwen3_vl.py): as kQwenMerger with a Conv3d bias and a
//    learned table of `position_rows` positions (interpolated to the grid), and `deepstack` more
//    mergers whose norm follows the concatenation (over 4·d), one over each `deepstack` layer's
//    output, added to the language model's first layers' hidden states.
//  - kMistral3: Pixtral's (modeling_pixtral.py) with Mistral3MultiModalProjector
//    (modeling_mistral3.py): a patch convolution without a bias, ln_pre, RMSNorms, a gated SiLU MLP
//    and q/k/v/o without biases, 2D RoPE; the projector's RMSNorm over d, the patch merger (merge² x
//    d -> d, no bias), linear_1 to the text width, GELU, linear_2 (biases: projector_bias).
//  - kIdefics3: Idefics3's and SmolVLM's SigLIP (modeling_idefics3.py): SigLIP's layers with
//    post_layernorm; the connector's pixel shuffle of `merge` x `merge` patches and one linear to the
//    text width without a bias.
//  - kInternVl: InternViT (modeling_internvl.py): a patch convolution with a bias, a class token and
//    learned positions, LayerNorms (RMSNorms with rms_norm), q/k/v biases (qkv_bias), optional
//    RMSNorms over q and k (qk_norm), layer scale (lambda_1, lambda_2), a final LayerNorm unless
//    mean pooling; InternVLMultiModalProjector: the class token dropped, a pixel shuffle of `merge`
//    x `merge`, LayerNorm over merge²·d, linear_1 to the text width, GELU, linear_2, with biases.
//  - kMllama: Llama 3.2 Vision's (modeling_mllama.py): `tiles` tiles per image, each a patch
//    convolution without a bias, a class token and gated positional and tile embeddings (over
//    `aspect_ratios` aspect-ratio ids), layernorm_pre, n_layers layers without attention biases,
//    layernorm_post, then `global_layers` gated layers (a tanh gate on each branch); the final output
//    and those of the `feature_layers` concatenated into the projector, one linear with a bias.
enum class VisionKind { kSiglip, kLlama4, kClip, kQwenMerger, kQwen3Merger, kMistral3, kIdefics3, kInternVl, kMllama };

struct VisionSpec {
  VisionKind kind = VisionKind::kSiglip;
  uint64_t shuffle = 1;        // Llama 4: the pixel shuffle's 1 / pixel_shuffle_ratio per side
  uint64_t adapter_width = 0;  // Llama 4: projector_input_dim (= projector_output_dim, vision_output_dim)
  uint64_t live_layers = 0;    // CLIP: layers up to vision_feature_layer, whose output is used (0: all)
  // The layout flags of issue 30's towers; the defaults are SigLIP's.
  bool patch_bias = true;       // the patch convolution's bias
  uint64_t temporal_patch = 1;  // frames one patch spans (Qwen-VL's Conv3d)
  bool class_token = false;     // a learned token beside the patches (CLIP, Llama 4, InternViT, Mllama)
  bool learned_positions = true;
  uint64_t position_rows = 0;  // rows of the learned position table; 0: one per token
  bool pre_norm = false;       // a norm before the first layer
  bool post_norm = true;       // a norm after the last layer
  bool rms_norm = false;       // RMSNorms (weight only) instead of LayerNorms
  bool qkv_bias = true;
  bool out_bias = true;
  bool mlp_bias = true;
  bool gated_mlp = false;  // gate, up and down with SiLU instead of fc1, GELU, fc2
  bool rope = false;       // 2D rotary positions on q and k
  bool qk_norm = false;    // RMSNorms over the whole q and k projections
  bool layer_scale = false;
  bool projector_bias = true;
  uint64_t merge = 1;                    // patches merged per side into one image token
  uint64_t window_tokens = 0;            // Qwen2.5-VL: patches each window holds (0: every layer global)
  std::vector<uint64_t> full_layers;     // Qwen2.5-VL: the layers that attend globally
  std::vector<uint64_t> deepstack;       // Qwen3-VL: the layers whose outputs deepstack mergers read
  uint64_t out_width = 0;                // the merger's output width (the text width)
  uint64_t tiles = 1;                    // Mllama: tiles per image
  uint64_t aspect_ratios = 0;            // Mllama: max_aspect_ratio_id + 1
  uint64_t global_layers = 0;            // Mllama: num_global_layers
  std::vector<uint64_t> feature_layers;  // Mllama: intermediate_layers_indices, concatenated to the output
  uint64_t image_size = 0;               // pixels per side
  uint64_t patch_size = 0;
  uint64_t channels = 3;
  uint64_t d_model = 0;
  uint64_t n_layers = 0;
  uint64_t n_heads = 0;
  uint64_t d_ff = 0;
  uint64_t tokens_per_image = 0;  // image tokens each image puts in the language model's sequence
  uint64_t images = 1;            // images per sequence that the tower runs over in a forward pass
};

struct TransformerSpec {
  uint64_t vocab_size = 0;
  uint64_t context_length = 0;
  // The context the model was pre-trained at, when it was later extended (Llama 3.1's
  // rope_scaling.original_max_position_embeddings); 0: context_length.
  uint64_t pretrain_context = 0;
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
  // The checkpoint stores q, k and v as one linear (GPT-2's c_attn, NeoX's query_key_value, Phi-3's
  // qkv_proj) rather than three (Llama's q_proj, k_proj, v_proj): LoRA adapts each module it holds.
  bool qkv_fused = false;
  // A gated MLP whose checkpoint stores gate and up as one linear (Phi-3's and GLM's gate_up_proj)
  // rather than two: one matmul call (--recompute op counts calls: graph/op_checkpoint.h).
  bool gate_up_fused = false;
  PositionKind position = PositionKind::kLearned;
  uint64_t position_offset = 0;  // extra learned position rows: OPT keeps 2
  uint64_t rotary_dim = 0;       // dimensions of each head that RoPE rotates (partial rotary); 0 = head_dim
  bool tied_embeddings = true;
  uint64_t embed_dim = 0;       // token embedding width when not d_model: project_in/out linears (OPT-350m)
  bool embedding_norm = false;  // a norm right after the token embedding (BLOOM)
  bool final_norm = true;
  // Parallel blocks (GPT-J, GPT-NeoX, Falcon, Phi): attention and MLP both read the block input
  // and are added to it together; with one norm per block both branches share it.
  bool parallel_block = false;
  uint64_t norms_per_block = 2;
  NormPlacement norm_placement = NormPlacement::kPre;
  NormParams norm_params = NormParams::kAffine;
  QkNorm qk_norm = QkNorm::kNone;
  bool v_norm = false;           // Gemma 3n: an RMSNorm without a weight over each value head (v_norm)
  bool attention_sinks = false;  // one learned logit per head that joins every softmax (gpt-oss)
  // Qwen3-Next's gated attention (modeling_qwen3_next.py, Qwen3NextAttention): q_proj also makes a
  // gate of a·d, and the attention's output is multiplied by its sigmoid before o_proj.
  bool attention_output_gate = false;
  // Falcon-H1 (modeling_falcon_h1.py, FalconH1DecoderLayer): every block runs attention and the
  // Mamba-2 mixer (TransformerSpec::ssm) side by side on its normed input and adds both outputs.
  bool parallel_ssm = false;
  MlaSpec mla;
  uint64_t n_experts = 0;           // mixture of experts: MLPs per block (0 = dense) ...
  uint64_t top_k = 0;               // ... and how many each token is routed to
  uint64_t moe_d_ff = 0;            // each expert's width (0 = d_ff; d_ff is then the dense layers' width)
  uint64_t shared_expert_d_ff = 0;  // width of the always-active shared expert(s) of MoE blocks (0 = none)
  // Qwen2-MoE's shared_expert_gate: a linear h -> 1 without a bias whose sigmoid scales the shared
  // expert's output per token.
  bool shared_expert_gate = false;
  bool router_bias = false;  // the router linear has a bias (gpt-oss)
  // DeepSeek-V3's e_score_correction_bias: one value per expert, a buffer in transformers that the
  // checkpoint stores and its published count includes.
  bool router_score_bias = false;
  // DeepSeek-V3's and GLM-4.5's multi-token-prediction modules: reported apart (params.mtp), not in
  // the total, as transformers does not build them.
  uint64_t mtp_layers = 0;
  uint64_t sliding_window = 0;  // attention window in tokens (0 = none) of every layer, unless layer_specs say
  // One entry per block when blocks differ (Gemma 2's alternating windows, interleaved MoE), at
  // most kMaxLayerSpecs; empty: every block alike, sliding when sliding_window > 0, latent under
  // MLA, MoE when n_experts > 0.
  std::vector<LayerSpec> layer_specs;
  std::optional<DType> dtype;  // the weights' dtype as published (config `dtype`, HF torch_dtype)
  double dropout = 0;          // probability; > 0 adds dropout nodes (they save masks for backward)
  // An encoder (BERT, RoBERTa, DistilBERT): every token sees every other (no causal discount, even
  // under --causal) and inference keeps no KV cache.
  bool encoder = false;
  uint64_t token_types = 0;               // rows of the token-type (segment) embedding: BERT's type_vocab_size
  bool pooler = false;                    // BertPooler: a dense with a bias and tanh over the first token
  EncoderHead head = EncoderHead::kNone;  // encoders only; a decoder always ends in lm_head
  uint64_t num_labels = 0;                // the classifier's classes
  bool head_dense_bias = true;            // the masked-LM transform's dense has a bias (ModernBERT: classifier_bias)
  // The classifier reads ModernBertPredictionHead over the pooled vector (a dense, GELU and a norm)
  // instead of BERT's pooler (a dense and tanh).
  bool prediction_head = false;
  DisentangledSpec disentangled;  // DeBERTa's relative positions
  SsmSpec ssm;                    // the state-space mixer, when a block has one
  ZambaSpec zamba;                // Zamba2's shared transformer blocks
  // An encoder–decoder (T5, mT5, UMT5): blocks [0, encoder_layers) are the encoder's, bidirectional
  // over the source (--seq) and without a KV cache; the other n_layers - encoder_layers are the
  // decoder's, over the target (--target-seq), with causal self-attention and cross-attention
  // (LayerSpec::cross_attention). layer_specs spells out every block. 0: not an encoder–decoder.
  uint64_t encoder_layers = 0;
  uint64_t relative_buckets = 0;  // rows of each relative-position bias table (T5's num_buckets); one column per head
  bool mlp_dropout = false;       // a dropout between the MLP's activation and its down projection (T5)
  // transformers' gelu_new (NewGELUActivation: GPT-2, GPT-J, GPT-Neo, CodeGen, Phi-1/2) is written in
  // PyTorch ops, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): autograd keeps x, the tanh, 0.5·x and
  // 1 + tanh, four tensors where one GELU kernel keeps x alone.
  bool gelu_in_ops = false;
  bool stack_dropout = false;  // a dropout after each stack's final norm (T5)
  bool head_scale = false;     // the tied head's input scaled by d_model^-0.5 (T5)
  bool embed_scale = false;    // token embeddings multiplied by sqrt(d_model) (BART's scale_embedding)
  bool logits_bias = false;    // a bias buffer (not a parameter) added to the logits (BART's final_logits_bias)
  bool no_head = false;        // an encoder–decoder's bare model (BartModel): it ends in the decoder's states
  // Whisper: the encoder reads 2·seq frames of `mel_bins` mel features through two convolutions
  // (kernel 3; the second of stride 2) instead of a token table; 0 otherwise.
  uint64_t mel_bins = 0;
  uint64_t target_context = 0;        // the decoder's learned positions when not context_length (Whisper)
  bool k_bias = true;                 // with qkv_bias: whether the key projection has one (Whisper's has none)
  uint64_t extra_embedding_rows = 0;  // token embedding rows beyond vocab_size (Mllama: 8), no logits
  std::optional<VisionSpec> vision;   // a multimodal checkpoint's vision tower and projector
  Gemma3nSpec gemma3n;
};

enum class SeqOp {
  kLinear,
  kConv2d,
  kPool,
  kAdaptivePool,
  kFlatten,
  kActivation,
  kLayerNorm,
  kDropout,
  kBatchNorm,   // BatchNorm2d over channels (or BatchNorm1d over features)
  kParallel,    // branches over the same input, joined (a residual block is branches [body, shortcut])
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
  double p = 0;              // dropout probability
  uint64_t expected_in = 0;  // linear/conv2d `in`, when written: checked against the incoming shape
  SourceLoc expected_in_loc;
  uint64_t dilation_h = 1, dilation_w = 1;          // conv2d and max pool
  bool ceil_mode = false;                           // pool: round the output size up (PyTorch's ceil_mode)
  JoinKind join = JoinKind::kAdd;                   // parallel: how the branches' outputs are combined
  std::vector<std::vector<SeqLayerSpec>> branches;  // parallel: an empty branch is the identity
  uint64_t heads = 0;                               // encoder: attention heads
  uint64_t mlp_dim = 0;                             // encoder: the MLP's hidden width
  bool post_norm = false;  // encoder: LayerNorm after each residual add (the 2017 Transformer) instead of before
  uint64_t nodes = 1;      // graph nodes this layer expands to: 1 + its branches' (bounds a config's size)
};

struct SequentialSpec {
  std::vector<uint64_t> input;  // one sample's shape: [features] or [channels, height, width]
  std::vector<SeqLayerSpec> layers;
  LossKind loss = LossKind::kAuto;  // auto: cross_entropy when one sample's output is a vector of >= 2 classes
  SourceLoc loss_loc;
};

// The tensors a checkpoint stores (safetensors or GGUF headers; the data is never read).
struct CheckpointTensor {
  std::string name;
  std::string dtype;  // as the file names it: "BF16", "Q4_K"
  std::vector<uint64_t> shape;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

struct CheckpointInfo {
  std::string format;              // "safetensors" or "gguf"
  std::vector<std::string> files;  // as shown to the user
  std::vector<CheckpointTensor> tensors;
  uint64_t elements = 0;                           // every stored tensor, tied copies and buffers included
  uint64_t bytes = 0;                              // tensor data, headers excluded
  std::map<std::string, uint64_t> bytes_by_dtype;  // lower-case dtype -> bytes
};

struct ModelSpec {
  std::string name;
  std::string description;
  std::string source;  // the file it came from, as shown to the user
  Family family = Family::kTransformer;
  TransformerSpec transformer;                   // when family == kTransformer
  SequentialSpec sequential;                     // when family == kSequential
  std::vector<std::string> notes;                // assumptions the reader made (defaults a file left out)
  std::optional<CheckpointInfo> checkpoint;      // when weights were found beside the config
  std::optional<QuantizationSpec> quantization;  // config.json's quantization_config
  // A layout the reader guessed from the config's keys (a config.json of an unknown model_type read
  // as a generic decoder): its warning, also in `notes` after "SOURCE: ", which the checkpoint
  // beside the config confirms or refutes (ConfirmGuessedLayout, estimate/checkpoint_match.h).
  std::string guessed_layout;
};

// The blocks in order as runs of equal LayerSpecs: {spec, count}. One run for a uniform model,
// whatever its depth.
std::vector<std::pair<LayerSpec, uint64_t>> LayerRuns(const TransformerSpec& t);
// Whether any block's mixer is a state-space model.
bool HasSsmBlocks(const TransformerSpec& t);

// The family's name in config/names.h (kept for the callers that print it).
const char* FamilyName(Family f);

}  // namespace tally
