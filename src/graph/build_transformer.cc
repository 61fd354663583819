// The decoder-only transformer as nodes, pre-norm: GPT-2 style (learned positions, LayerNorm, GELU,
// biases, tied head) through Llama style (RoPE, RMSNorm, SwiGLU, no biases, untied head, GQA), with
// parallel blocks (GPT-NeoX, Falcon, Phi), mixture-of-experts MLPs (Mixtral; shared experts and
// dense-first layers: DeepSeek, Llama 4), ALiBi (BLOOM), post- and sandwich norms (OLMo-2, Gemma 2),
// q/k norms (Qwen3, OLMo-2), attention sinks (gpt-oss) and multi-head latent attention (DeepSeek);
// and encoders (BERT, RoBERTa, DistilBERT: token types, norms after the residual adds, bidirectional
// attention without a KV cache, pooler and task heads); and encoder–decoders (T5, mT5, UMT5: an
// encoder stack over the source, a decoder stack over the target with cross-attention, relative
// position biases, the shared embedding).
// Saved tensors are what eager PyTorch's autograd saves (flash attention and a fused gated MLP on
// request). Korthikanti et al. 2022 (§4.1, Eq. 1) count 34·s·b·h + 5·a·s²·b bytes for a block with
// dropout and MHA at 2-byte activations and 1-byte masks; autograd also keeps each LayerNorm's fp32
// mean and rstd, 16·s·b bytes more (sections/memory_section.cc reports both).
// This file orders the blocks and their norms and residual adds; the parts are graph/build_embeddings.cc,
// build_attention.cc, build_mlp.cc and build_heads.cc (and build_ssm.cc, build_zamba2.cc, build_vision.cc),
// each adding to the shared graph/transformer_context.h.
#include <algorithm>
#include <stdexcept>

#include "graph/build_attention.h"
#include "graph/build_embeddings.h"
#include "graph/build_gemma3n.h"
#include "graph/build_graph.h"
#include "graph/build_heads.h"
#include "graph/build_mlp.h"
#include "graph/build_ssm.h"
#include "graph/build_vision.h"
#include "graph/build_zamba2.h"
#include "graph/node_costs.h"
#include "graph/transformer_context.h"

namespace tally {
namespace {

// Keys each query of a layer sees when `context` tokens precede it (itself included): a sliding
// window (Beltagy et al. 2020; Mistral) or a chunk (Llama 4) caps them at its span. The same rule
// sizes the layer's KV cache (estimate/kv_cache.cc).
uint64_t KeysPerQuery(const LayerSpec& l, uint64_t context) {
  const bool capped = l.attention == AttentionKind::kSliding || l.attention == AttentionKind::kChunked;
  return capped && l.span > 0 && context > l.span ? l.span : context;
}

class TransformerBuilder {
 public:
  TransformerBuilder(const TransformerSpec& t, const GraphSettings& settings, uint64_t seq, uint64_t target,
                     uint64_t image_tokens)
      : t_(t), ctx_(t, settings, seq, target) {
    ctx_.image_tokens = image_tokens;
  }

  // Each distinct block is built once, at the first block of its kind; `runs` order them all.
  void Build(LayerGraph& g) {
    AddEmbeddings(ctx_);
    if (t_.gemma3n.altup_inputs > 0) AddGemma3nInputs(ctx_);
    // A multimodal model's vision tower and projector: their output takes the image tokens' places
    // in the embedded sequence.
    if (t_.vision) {
      const std::string embedded = ctx_.cur;
      AddVisionNodes(*t_.vision, t_.d_model, ctx_.settings, ctx_.layers);
      ctx_.image_features = ctx_.layers.back().path;
      ctx_.cur = embedded;
    }
    g.blocks_begin = ctx_.layers.size();
    std::vector<LayerSpec> types;
    std::vector<uint64_t> first_of_type;
    uint64_t next = 0;
    for (const auto& [spec, count] : LayerRuns(t_)) {
      auto it = std::find(types.begin(), types.end(), spec);
      if (it == types.end()) {
        types.push_back(spec);
        first_of_type.push_back(next);
        it = types.end() - 1;
      }
      g.runs.push_back({static_cast<int>(it - types.begin()), next, count});
      next += count;
    }
    for (size_t type = 0; type < types.size(); ++type) {
      ctx_.block_type = static_cast<int>(type);
      Block(static_cast<int>(first_of_type[type]), types[type]);
    }
    ctx_.block_type = -1;
    g.blocks_end = ctx_.layers.size();
    for (size_t i = g.blocks_begin; i < g.blocks_end; ++i) {
      ctx_.layers[i].repeat = g.BlocksOfType(ctx_.layers[i].block_type, 0, t_.n_layers);
    }
    if (t_.encoder_layers > 0) ctx_.Stack(true);  // the final norm and head are the decoder's
    if (t_.gemma3n.altup_inputs > 0) AddGemma3nOutputs(ctx_);
    if (t_.final_norm) ctx_.Add(ctx_.Norm("final_norm"), ctx_.Hidden());
    if (t_.stack_dropout)
      ctx_.Dropout("final_dropout", Count("final_dropout", {ctx_.rows, t_.d_model}), Component::kNorm);
    if (t_.encoder)
      AddEncoderHeads(ctx_);
    else if (!t_.no_head)
      AddLmHead(ctx_);
    if (t_.mtp_layers > 0) g.mtp_params = MtpParams(types);
    g.layers = std::move(ctx_.layers);
  }

 private:
  // modeling_t5.py, T5Stack: the encoder ends in its final norm and a dropout; the decoder's
  // cross-attention reads that output. Built with the first decoder block, which then runs on.
  void EncoderOutput() {
    ctx_.Stack(false);
    if (t_.final_norm) BlockNorm("encoder_norm");
    if (t_.stack_dropout) {
      ctx_.Dropout(ctx_.P("encoder_dropout"), Count(ctx_.P("encoder_dropout"), {ctx_.rows, t_.d_model}),
                   Component::kNorm);
    }
    ctx_.encoder_output = ctx_.cur;
    ctx_.cur = ctx_.target_embedding;
  }

  // DeepSeek-V3 §2.2 (modeling_deepseek.py in the checkpoint): each multi-token-prediction module
  // is an RMSNorm on the hidden state and one on the embedding (enorm, hnorm), their concatenation
  // projected back to h (eh_proj, 2h x h), one decoder block like the last, and a final RMSNorm;
  // the embedding and head are the main model's. GLM-4.5's (model.layers.92) has the same modules
  // (modeling_glm4_moe.py skips them on load); the copies of the embedding and head both
  // checkpoints store with them are not counted.
  uint64_t MtpParams(const std::vector<LayerSpec>& types) const {
    const std::string what = "the multi-token-prediction parameters";
    const int last =
        static_cast<int>(std::find(types.begin(), types.end(), LayerRuns(t_).back().first) - types.begin());
    uint64_t block = 0;
    for (const Layer& l : ctx_.layers) {
      if (l.block_type == last) block = CheckedAdd(block, l.params, what);
    }
    const uint64_t h = t_.d_model;
    const uint64_t extra = CheckedAdd(CheckedProduct({2, h, h}, what), CheckedMul(3, h, what), what);
    return CheckedMul(t_.mtp_layers, CheckedAdd(block, extra, what), what);
  }

  // A norm over the hidden states and a residual add of the block being built, named under it.
  void BlockNorm(const std::string& name) { ctx_.Add(ctx_.Norm(ctx_.P(name)), ctx_.Hidden()); }
  void BlockResidual(const std::string& name, uint64_t branches) { ctx_.Residual(ctx_.P(name), branches); }

  void Block(int i, const LayerSpec& spec) {
    ctx_.block = i;
    ctx_.layer = spec;
    const bool enc_dec = t_.encoder_layers > 0;
    if (enc_dec) {
      if (spec.encoder_output) EncoderOutput();
      ctx_.Stack(spec.cross_attention);
    }
    // A decoder block of a decode step attends to its cache of `context` target tokens.
    ctx_.kv = enc_dec && !(spec.cross_attention && ctx_.settings.context) ? ctx_.seq : KeysPerQuery(spec, ctx_.context);
    // An encoder's (or an encoder stack's) attention is bidirectional and caches nothing.
    ctx_.bidirectional = t_.encoder || (enc_dec && !spec.cross_attention);
    // A causal kernel skips the masked half only when the queries see the whole sequence.
    ctx_.causal = ctx_.settings.causal && !ctx_.bidirectional && ctx_.kv == ctx_.seq;
    const std::string input = ctx_.cur;
    if (t_.gemma3n.altup_inputs > 0) {
      AddGemma3nBlock(ctx_);  // graph/build_gemma3n.cc
    } else if (spec.gated_cross) {
      GatedCrossBlock();
    } else if (spec.mixer == MixerKind::kNone) {
      // modeling_nemotron_h.py, NemotronHBlock with an MLP mixer: x + mlp(RMSNorm(x)).
      BlockNorm("mlp_norm");
      AddMlp(ctx_);
      BlockResidual("mlp.residual", 1);
    } else if (spec.mixer != MixerKind::kAttention) {
      if (spec.hybrid > 0) SharedBlock();
      SsmBlock();
    } else if (t_.parallel_ssm) {
      ParallelSsmBlock();
    } else if (enc_dec && t_.norm_placement == NormPlacement::kAfterAdd) {
      // modeling_bart.py, BartEncoderLayer and BartDecoderLayer: self-attention, cross-attention
      // (decoder layers) and feed-forward, each LayerNorm(x + dropout(branch(x))).
      AddAttention(ctx_);
      BlockResidual("attn.residual", 1);
      BlockNorm("attn_norm");
      if (spec.cross_attention) {
        AddAttention(ctx_, "cross");
        BlockResidual("cross.residual", 1);
        BlockNorm("cross_norm");
      }
      AddMlp(ctx_);
      BlockResidual("mlp.residual", 1);
      BlockNorm("mlp_norm");
    } else if (enc_dec) {
      // modeling_t5.py, T5Block: pre-norm self-attention, cross-attention (decoder blocks) and
      // feed-forward, each added to the residual stream after a dropout.
      BlockNorm("attn_norm");
      AddAttention(ctx_);
      BlockResidual("attn.residual", 1);
      if (spec.cross_attention) {
        BlockNorm("cross_norm");
        AddAttention(ctx_, "cross");
        BlockResidual("cross.residual", 1);
      }
      BlockNorm("mlp_norm");
      AddMlp(ctx_);
      BlockResidual("mlp.residual", 1);
    } else if (t_.norm_placement == NormPlacement::kAfterAdd) {
      // modeling_bert.py (BertSelfOutput, BertOutput): LayerNorm(x + dropout(dense(h))).
      AddAttention(ctx_);
      BlockResidual("attn.residual", 1);
      BlockNorm("attn_norm");
      AddMlp(ctx_);
      BlockResidual("mlp.residual", 1);
      BlockNorm("mlp_norm");
      if (spec.conv) DebertaConv(input);
    } else if (!t_.parallel_block) {
      const bool pre = t_.norm_placement != NormPlacement::kPost;
      const bool post = t_.norm_placement != NormPlacement::kPre;
      if (pre && spec.attn_norm) BlockNorm("attn_norm");
      AddAttention(ctx_);
      if (post) BlockNorm("attn.post_norm");
      BlockResidual("attn.residual", 1);
      if (!spec.mlp) {  // Nemotron-H's attention blocks: x + attention(RMSNorm(x)) alone
        ctx_.block = -1;
        return;
      }
      if (pre) BlockNorm("mlp_norm");
      AddMlp(ctx_);
      if (post) BlockNorm("mlp.post_norm");
      BlockResidual("mlp.residual", 1);
    } else {
      const bool shared = t_.norms_per_block == 1;
      BlockNorm(shared ? "norm" : "attn_norm");
      const std::string normed = ctx_.cur;
      AddAttention(ctx_);
      ctx_.cur = shared ? normed : input;
      if (!shared) BlockNorm("mlp_norm");
      AddMlp(ctx_);
      BlockResidual("residual", 2);  // input + attention + MLP
    }
    ctx_.block = -1;
  }

  // modeling_mllama.py, MllamaCrossAttentionDecoderLayer: x + tanh(attn_gate) · cross_attn(
  // input_layernorm(x)), then + tanh(mlp_gate) · mlp(post_attention_layernorm(.)); each gate one
  // learned value whose product keeps its input for the gate's gradient.
  void GatedCrossBlock() {
    auto gate = [&](const std::string& name) {
      const uint64_t elements = Count(ctx_.P(name), {ctx_.rows, t_.d_model});
      const Component c = name == "cross.gate" ? Component::kAttention : Component::kMlp;
      Layer g = MakeElementwise(ctx_.P(name), LayerKind::kActivation, c, elements, kFlopsPerElementwise);
      AddParamTensor(g, {1}, false);
      g.saved.push_back({.id = ctx_.cur, .elements = elements});
      ctx_.Add(std::move(g), ctx_.Hidden());
    };
    BlockNorm("attn_norm");
    AddImageCrossAttention(ctx_);
    gate("cross.gate");
    BlockResidual("attn.residual", 1);
    BlockNorm("mlp_norm");
    AddMlp(ctx_);
    gate("mlp.gate");
    BlockResidual("mlp.residual", 1);
  }

  // modeling_deberta_v2.py, ConvLayer after the first layer: a Conv1d h -> h over the sequence
  // (kernel conv_kernel, padding keeping the length, conv_groups groups, a bias) of the encoder's
  // input `embedded`, its activation (which saves its input), then LayerNorm(block output + it).
  void DebertaConv(const std::string& embedded) {
    const DisentangledSpec& r = t_.disentangled;
    const uint64_t h = t_.d_model, per_group = h / r.conv_groups;
    Layer conv;
    conv.path = ctx_.P("conv");
    conv.kind = LayerKind::kConv1d;
    conv.component = Component::kConv2d;
    AddParamTensor(conv, {h, per_group, r.conv_kernel}, false);
    AddParamTensor(conv, {h}, false);
    conv.gemms.push_back(
        {.m = ctx_.rows, .n = per_group, .k = Count(conv.path, {per_group, r.conv_kernel}), .count = r.conv_groups});
    conv.non_matmul_flops = Count(conv.path, {ctx_.rows, h});  // the bias
    conv.saved.push_back({.id = embedded, .elements = Count(conv.path, {ctx_.rows, h})});
    ctx_.cur = embedded;
    ctx_.Add(std::move(conv), ctx_.Hidden());
    Layer act = MakeElementwise(ctx_.P("conv.act"), LayerKind::kActivation, Component::kConv2d,
                                Count(ctx_.P("conv.act"), {ctx_.rows, h}), kFlopsPerElementwise);
    act.saved.push_back({.id = ctx_.cur, .elements = Count(ctx_.P("conv.act"), {ctx_.rows, h})});
    ctx_.Add(std::move(act), ctx_.Hidden());
    BlockResidual("conv.residual", 1);  // the block's output + the convolution's
    BlockNorm("conv.norm");
  }

  // modeling_mamba.py, MambaBlock: x + mixer(RMSNorm(x)); the mixer's nodes come from
  // graph/build_ssm.cc. With an MLP (modeling_jamba.py, JambaMambaDecoderLayer): then
  // x + feed_forward(pre_ff_layernorm(x)), the dense MLP or the experts.
  void SsmBlock() {
    BlockNorm("norm");
    for (Layer& l : SsmMixer(t_.ssm, ctx_.layer.mixer, {ctx_.P("mixer"), ctx_.batch, ctx_.seq, t_.d_model, ctx_.cur})) {
      std::vector<uint64_t> shape = l.shape;
      ctx_.Add(std::move(l), std::move(shape));
    }
    BlockResidual("residual", 1);
    if (!ctx_.layer.mlp) return;
    BlockNorm("mlp_norm");
    AddMlp(ctx_);
    BlockResidual("mlp.residual", 1);
  }

  // modeling_falcon_h1.py, FalconH1DecoderLayer: h = RMSNorm(x); x + attention(h) + mamba(h), then
  // x + MLP(RMSNorm(x)). The multipliers on each branch are scalars, not counted.
  void ParallelSsmBlock() {
    BlockNorm("attn_norm");
    const std::string normed = ctx_.cur;
    AddAttention(ctx_);
    ctx_.cur = normed;
    for (Layer& l : SsmMixer(t_.ssm, t_.ssm.kind, {ctx_.P("mixer"), ctx_.batch, ctx_.seq, t_.d_model, ctx_.cur})) {
      std::vector<uint64_t> shape = l.shape;
      ctx_.Add(std::move(l), std::move(shape));
    }
    BlockResidual("residual", 2);  // input + attention + mixer
    if (!ctx_.layer.mlp) return;
    BlockNorm("mlp_norm");
    AddMlp(ctx_);
    BlockResidual("mlp.residual", 1);
  }

  // modeling_zamba2.py, Zamba2HybridLayer: shared block number (use % num_mem_blocks), its nodes
  // from graph/build_zamba2.cc, and this block's linear, whose output is added to the input of the
  // Mamba-2 block that follows (x + mixer(RMSNorm(x + linear(shared)))). The shared weights belong
  // to the block's first use; later uses point at them (weights_of), so they count once while their
  // FLOPs count at every use.
  void SharedBlock() {
    const uint64_t use = ctx_.layer.hybrid - 1, shared = use % t_.zamba.shared_blocks;
    SharedBlockNodes nodes = Zamba2SharedBlock(
        t_, {ctx_.P("shared"), ctx_.P("linear"), ctx_.batch, ctx_.seq, ctx_.kv, ctx_.causal, ctx_.cur});
    if (shared_owners_.size() <= shared) shared_owners_.resize(shared + 1);
    const bool first = shared_owners_[shared].empty();
    size_t k = 0;
    for (size_t i = 0; i < nodes.layers.size(); ++i) {
      Layer& l = nodes.layers[i];
      if (std::find(nodes.shared.begin(), nodes.shared.end(), i) != nodes.shared.end()) {
        if (first) {
          shared_owners_[shared].push_back(ctx_.layers.size());
        } else {
          l.params = 0;
          l.param_tensors.clear();
          l.weights_of = shared_owners_[shared][k++];
        }
      }
      std::vector<uint64_t> shape = l.shape;
      ctx_.Add(std::move(l), std::move(shape));
    }
    BlockResidual("shared.add", 1);  // x + linear(shared(...)), the Mamba-2 block's norm input
  }

  std::vector<std::vector<size_t>> shared_owners_;  // Zamba2: per shared block, its weights' nodes
  const TransformerSpec& t_;
  TransformerContext ctx_;
};

// A graph's source and target lengths (the target is the seq but for an encoder–decoder's
// decoder), checked against the model's positions. They are chosen in one place (config/resolve.h)
// and given here: one missing is a caller's bug, not bad input.
struct Lengths {
  uint64_t seq = 0;
  uint64_t target = 0;
};

Lengths CheckedLengths(const ModelSpec& spec, const GraphSettings& settings) {
  const TransformerSpec& t = spec.transformer;
  const bool enc_dec = t.encoder_layers > 0;
  if (!settings.seq) {
    throw std::logic_error(
        "BuildTransformerGraph: '" + spec.name +
        "' has no sequence length in its GraphSettings; resolve the settings first (ResolveSettings)");
  }
  const uint64_t seq = *settings.seq;
  if (t.position == PositionKind::kLearned && seq > t.context_length) {
    throw InputError("--seq: " + std::to_string(seq) + " is longer than the " + std::to_string(t.context_length) +
                     " learned positions of '" + spec.name + "'");
  }
  if (settings.target_seq && !enc_dec) {
    throw InputError("--target-seq: '" + spec.name + "' has no decoder stack over a separate target (it is not an " +
                     "encoder-decoder); --seq sets its tokens");
  }
  if (t.mel_bins > 0 && seq != t.context_length) {
    // modeling_whisper.py, WhisperEncoder.forward: the input must be 2·max_source_positions frames.
    throw InputError("--seq: '" + spec.name + "' reads exactly " + std::to_string(2 * t.context_length) +
                     " mel frames, " + std::to_string(t.context_length) + " positions after its convolutions; --seq " +
                     std::to_string(seq) + " is not that");
  }
  if (enc_dec && !settings.target_seq) {
    throw std::logic_error("BuildTransformerGraph: the encoder-decoder '" + spec.name +
                           "' has no target length in its GraphSettings; BuildGraph gives it (DefaultTargetSeq)");
  }
  const uint64_t target = enc_dec ? *settings.target_seq : seq;
  const uint64_t target_limit = t.target_context > 0 ? t.target_context : t.context_length;
  if (enc_dec && t.position == PositionKind::kLearned && target > target_limit) {
    throw InputError("--target-seq: " + std::to_string(target) + " is longer than the " + std::to_string(target_limit) +
                     " learned positions of '" + spec.name + "'");
  }
  return {seq, target};
}

}  // namespace

LayerGraph BuildTransformerGraph(const ModelSpec& spec, const GraphSettings& settings) {
  const TransformerSpec& t = spec.transformer;
  const bool enc_dec = t.encoder_layers > 0;
  const auto [seq, target] = CheckedLengths(spec, settings);
  LayerGraph g;
  g.model_name = spec.name;
  g.family = Family::kTransformer;
  TransformerSpec effective = t;
  if (t.vision) {
    // The tower encodes the images of a prompt, whatever its length (the parameters never depend
    // on --seq); a decode step has none.
    g.images = settings.context ? 0 : settings.images.value_or(t.vision->images);
    if (settings.context) {
      effective.vision.reset();
    } else {
      effective.vision->images = std::max<uint64_t>(*g.images, 1);  // --images 0: stripped below
    }
  } else if (settings.images) {
    throw InputError("--images: '" + spec.name + "' has no vision tower (a multimodal config's vision_config)");
  }
  g.batch = settings.batch;
  g.seq = seq;
  g.target_seq = enc_dec ? target : 0;
  g.causal = settings.causal && !t.encoder;
  g.n_layers = t.n_layers;
  if (settings.dropout) effective.dropout = *settings.dropout;
  if (t.zamba.shared_blocks > 0) {
    // graph/build_zamba2.cc saves nothing: the shared blocks' activations at each use are not modelled.
    g.training_refused = "training activations of '" + spec.name +
                         "' (Zamba2: shared transformer blocks reused at the hybrid layers) are not modelled; --mode "
                         "infer gives its inference memory";
  }
  if (t.gemma3n.altup_inputs > 0) {
    // graph/build_gemma3n.cc does not model what autograd saves in AltUp's streams.
    g.training_refused = "training activations of '" + spec.name +
                         "' (Gemma 3n: AltUp's streams, LAuReL and the per-layer inputs) are not modelled; --mode "
                         "infer gives its inference memory";
  }
  for (const auto& run : LayerRuns(t)) {
    if (run.first.mixer != MixerKind::kRgLru) continue;
    // modeling_recurrent_gemma.py runs the RG-LRU as a Python loop over the tokens, whose autograd
    // tensors are not modelled.
    g.training_refused = "training activations of '" + spec.name +
                         "' (RecurrentGemma: the RG-LRU's per-token loop in transformers) are not modelled; --mode "
                         "infer gives its inference memory";
  }
  // Mllama's cross-attention layers read every tile's tokens of the prompt's images, cached for
  // the decode steps.
  uint64_t image_tokens = 0;
  if (t.vision && t.vision->kind == VisionKind::kMllama) {
    image_tokens =
        Count("images", {settings.images.value_or(t.vision->images), t.vision->tiles, t.vision->position_rows});
  }
  TransformerBuilder(effective, settings, seq, target, image_tokens).Build(g);
  if (g.images == uint64_t{0} && effective.vision) {
    // --images 0, text only: the tower and projector keep their parameters (the checkpoint holds
    // them) but run on nothing: no FLOPs, no saved tensors, no rows.
    for (Layer& l : g.layers) {
      if (l.component != Component::kVision && l.component != Component::kProjector) continue;
      l.gemms.clear();
      l.non_matmul_flops = 0;
      l.saved.clear();
      if (l.shape.size() > 1) l.shape[1] = 0;
    }
  }
  return g;
}

}  // namespace tally
