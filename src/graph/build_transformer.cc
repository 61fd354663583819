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
// mean and rstd, 16·s·b bytes more (estimate/memory_report.cc reports both).
#include <algorithm>

#include "graph/build_graph.h"
#include "graph/build_ssm.h"
#include "graph/build_vision.h"
#include "graph/build_zamba2.h"
#include "graph/node_costs.h"

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
  TransformerBuilder(const TransformerSpec& t, const GraphSettings& settings, uint64_t seq, uint64_t target)
      : t_(t),
        settings_(settings),
        b_(settings.batch),
        s_(seq),
        context_(settings.context.value_or(seq)),
        flash_(settings.attention == Attention::kFlash),
        rows_(Count("tokens", {settings.batch, seq})),
        src_seq_(seq),
        tgt_seq_(target) {}

  // Each distinct block is built once, at the first block of its kind; `runs` order them all.
  void Build(LayerGraph& g) {
    Embeddings();
    // A multimodal model's vision tower and projector: their output takes the image tokens' places
    // in the embedded sequence.
    if (t_.vision) {
      const std::string embedded = cur_;
      AddVisionNodes(*t_.vision, t_.d_model, settings_, layers_);
      cur_ = embedded;
    }
    g.blocks_begin = layers_.size();
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
      block_type_ = static_cast<int>(type);
      Block(static_cast<int>(first_of_type[type]), types[type]);
    }
    block_type_ = -1;
    g.blocks_end = layers_.size();
    for (size_t i = g.blocks_begin; i < g.blocks_end; ++i) {
      layers_[i].repeat = g.BlocksOfType(layers_[i].block_type, 0, t_.n_layers);
    }
    if (t_.encoder_layers > 0) Stack(true);  // the final norm and head are the decoder's
    if (t_.final_norm) Add(Norm("final_norm"), Hidden());
    if (t_.stack_dropout) Dropout("final_dropout", Count("final_dropout", {rows_, t_.d_model}), Component::kNorm);
    if (t_.encoder)
      EncoderHeads();
    else if (!t_.no_head)
      Head();
    if (t_.mtp_layers > 0) g.mtp_params = MtpParams(types);
    g.layers = std::move(layers_);
  }

 private:
  std::vector<uint64_t> Hidden() const { return {b_, s_, t_.d_model}; }
  uint64_t EmbedDim() const { return t_.embed_dim == 0 ? t_.d_model : t_.embed_dim; }

  void Add(Layer l, std::vector<uint64_t> shape, const std::string& output_id = "") {
    l.block = block_;
    l.block_type = block_type_;
    l.source_side = l.source_side || source_side_;
    l.shape = std::move(shape);
    cur_ = output_id.empty() ? l.path : output_id;
    layers_.push_back(std::move(l));
  }

  std::string P(const std::string& name) const {
    return block_ < 0 ? name : "blocks." + std::to_string(block_) + "." + name;
  }

  void Embeddings() {
    if (t_.mel_bins > 0) {
      AudioEmbeddings();
      return;
    }
    Layer tokens;
    tokens.path = "embed.tokens";
    tokens.kind = LayerKind::kEmbedding;
    tokens.component = Component::kEmbedding;
    AddParamTensor(tokens, {t_.vocab_size, EmbedDim()}, true);  // vocabulary-parallel (Megatron-LM)
    Add(std::move(tokens), {b_, s_, EmbedDim()});
    if (t_.embed_scale) EmbedScale("embed.scale");
    if (EmbedDim() != t_.d_model) {
      Add(MakeLinear("embed.project_in", Component::kEmbedProjection, rows_, EmbedDim(), t_.d_model, false, cur_, true),
          Hidden());
    }
    if (t_.position == PositionKind::kLearned) {
      Layer pos = MakeElementwise("embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                                  Count("embed.positions", {rows_, t_.d_model}), kFlopsPerElementwise);
      uint64_t rows = CheckedAdd(t_.context_length, t_.position_offset, "learned positions");
      AddParamTensor(pos, {rows, t_.d_model}, false);
      Add(std::move(pos), Hidden());
    }
    if (t_.token_types > 0) {  // modeling_bert.py, BertEmbeddings: word + position + token type
      Layer types = MakeElementwise("embed.token_types", LayerKind::kEmbedding, Component::kEmbedding,
                                    Count("embed.token_types", {rows_, t_.d_model}), kFlopsPerElementwise);
      AddParamTensor(types, {t_.token_types, t_.d_model}, false);
      Add(std::move(types), Hidden());
    }
    if (t_.embedding_norm) Add(Norm("embed.norm"), Hidden());
    Dropout("embed.dropout", Count("embed", {rows_, t_.d_model}), Component::kEmbedding);
    if (t_.encoder_layers > 0) {
      // modeling_t5.py and modeling_bart.py: the decoder looks its target tokens up in the same
      // shared table (the models' `shared`), whose weight embed.tokens holds; BART's decoder has
      // its own learned positions and embedding LayerNorm.
      const std::string source = cur_;
      Stack(true);
      Layer lookup;
      lookup.path = "decoder.embed.tokens";
      lookup.kind = LayerKind::kEmbedding;
      lookup.component = Component::kEmbedding;
      Add(std::move(lookup), Hidden());
      if (t_.embed_scale) EmbedScale("decoder.embed.scale");
      if (t_.position == PositionKind::kLearned) {
        Layer pos = MakeElementwise("decoder.embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                                    Count("decoder.embed.positions", {rows_, t_.d_model}), kFlopsPerElementwise);
        AddParamTensor(pos, {CheckedAdd(t_.context_length, t_.position_offset, "learned positions"), t_.d_model},
                       false);
        Add(std::move(pos), Hidden());
      }
      if (t_.embedding_norm) Add(Norm("decoder.embed.norm"), Hidden());
      Dropout("decoder.embed.dropout", Count("decoder.embed", {rows_, t_.d_model}), Component::kEmbedding);
      target_embedding_ = cur_;
      Stack(false);
      cur_ = source;
    }
  }

  // modeling_whisper.py: the decoder's token table (the one the tied proj_out reads, so the first
  // node) and learned positions of max_target_positions rows; the encoder's two convolutions over
  // 2·seq mel frames, each followed by GELU (conv1: mel_bins -> d, conv2: d -> d with stride 2, both
  // kernel 3 and padding 1, so seq frames come out), and its sinusoidal positions, stored as an
  // embedding of max_source_positions rows that does not train (requires_grad False).
  void AudioEmbeddings() {
    const uint64_t h = t_.d_model;
    Stack(true);
    Layer tokens;
    tokens.path = "embed.tokens";
    tokens.kind = LayerKind::kEmbedding;
    tokens.component = Component::kEmbedding;
    AddParamTensor(tokens, {t_.vocab_size, h}, true);
    Add(std::move(tokens), Hidden());
    Layer pos = MakeElementwise("decoder.embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                                Count("decoder.embed.positions", {rows_, h}), kFlopsPerElementwise);
    AddParamTensor(pos, {t_.target_context, h}, false);
    Add(std::move(pos), Hidden());
    Dropout("decoder.embed.dropout", Count("decoder.embed", {rows_, h}), Component::kEmbedding);
    target_embedding_ = cur_;
    Stack(false);
    const uint64_t frames = Count("encoder.conv1", {2, s_});
    cur_ = kInputTensor;
    Conv("encoder.conv1", t_.mel_bins, frames, frames, false);
    Conv("encoder.conv2", h, frames, s_, true);
    Layer sinusoid = MakeElementwise("embed.positions", LayerKind::kEmbedding, Component::kEmbedding,
                                     Count("embed.positions", {rows_, h}), kFlopsPerElementwise);
    AddParamTensor(sinusoid, {t_.context_length, h}, false);
    sinusoid.trainable = false;
    Add(std::move(sinusoid), Hidden());
    Dropout("embed.dropout", Count("embed", {rows_, h}), Component::kEmbedding);
  }

  // A Conv1d of kernel 3 with a bias from `in` channels over `in_length` positions to d_model over
  // `length`, as a GEMM (rows: batch x length, k: in x 3), then GELU (which saves its input).
  void Conv(const std::string& path, uint64_t in, uint64_t in_length, uint64_t length, bool input_needs_grad) {
    const uint64_t h = t_.d_model, rows = Count(path, {b_, length}), k = Count(path, {in, 3});
    Layer conv;
    conv.path = path;
    conv.kind = LayerKind::kConv2d;
    conv.component = Component::kConv2d;
    AddParamTensor(conv, {h, in, 3}, false);
    AddParamTensor(conv, {h}, false);
    conv.gemms.push_back({.m = rows, .n = h, .k = k, .grad_a = input_needs_grad});
    conv.non_matmul_flops = Count(path, {rows, h});  // the bias
    // Its input, kept for dW: the mel features are data (kInputTensor), conv2's the first GELU's output.
    conv.saved.push_back({.id = cur_, .elements = Count(path, {b_, in_length, in}), .dw_only = true});
    Add(std::move(conv), {b_, length, h});
    Layer act = MakeElementwise(path + ".act", LayerKind::kActivation, Component::kConv2d, Count(path, {rows, h}),
                                kFlopsPerElementwise);
    act.saved.push_back({.id = cur_, .elements = Count(path, {rows, h})});
    Add(std::move(act), {b_, length, h});
  }

  // modeling_bart.py, scale_embedding: the token embeddings times sqrt(d_model), one multiply each.
  void EmbedScale(const std::string& path) {
    Add(MakeElementwise(path, LayerKind::kActivation, Component::kEmbedding, Count(path, {rows_, t_.d_model}),
                        kFlopsPerElementwise),
        Hidden());
  }

  // An encoder–decoder's blocks run over the target (the decoder) or the source (the encoder).
  void Stack(bool decoder) {
    s_ = decoder ? tgt_seq_ : src_seq_;
    rows_ = Count("tokens", {b_, s_});
    source_side_ = !decoder;
  }

  // modeling_t5.py, T5Stack: the encoder ends in its final norm and a dropout; the decoder's
  // cross-attention reads that output. Built with the first decoder block, which then runs on.
  void EncoderOutput() {
    Stack(false);
    if (t_.final_norm) Add(Norm(P("encoder_norm")), Hidden());
    if (t_.stack_dropout) {
      Dropout(P("encoder_dropout"), Count(P("encoder_dropout"), {rows_, t_.d_model}), Component::kNorm);
    }
    encoder_output_ = cur_;
    cur_ = target_embedding_;
  }

  // DeepSeek-V3 §2.2 (modeling_deepseek.py in the checkpoint): each multi-token-prediction module
  // is an RMSNorm on the hidden state and one on the embedding (enorm, hnorm), their concatenation
  // projected back to h (eh_proj, 2h x h), one decoder block like the last, and a final RMSNorm;
  // the embedding and head are the main model's.
  uint64_t MtpParams(const std::vector<LayerSpec>& types) const {
    const std::string what = "the multi-token-prediction parameters";
    const int last =
        static_cast<int>(std::find(types.begin(), types.end(), LayerRuns(t_).back().first) - types.begin());
    uint64_t block = 0;
    for (const Layer& l : layers_) {
      if (l.block_type == last) block = CheckedAdd(block, l.params, what);
    }
    const uint64_t h = t_.d_model;
    const uint64_t extra = CheckedAdd(CheckedProduct({2, h, h}, what), CheckedMul(3, h, what), what);
    return CheckedMul(t_.mtp_layers, CheckedAdd(block, extra, what), what);
  }

  // A norm over `width` features of `rows` rows (the hidden size unless given). Its parameters
  // follow t_.norm_params; `params` overrides their width (Qwen3's q_norm: head_dim over a·d).
  Layer Norm(const std::string& path, uint64_t width = 0, uint64_t params = 0, std::string input = "") {
    if (width == 0) width = t_.d_model;
    if (params == 0) params = width;
    if (input.empty()) input = cur_;
    bool ln = t_.norm == NormKind::kLayerNorm;
    uint64_t elements = Count(path, {rows_, width});
    Layer l = MakeElementwise(path, LayerKind::kNorm, Component::kNorm, elements,
                              ln ? kFlopsPerLayerNormElement : kFlopsPerRmsNormElement);
    if (t_.norm_params != NormParams::kNone) AddParamTensor(l, {params}, false);
    if (ln && t_.norm_params == NormParams::kAffine) AddParamTensor(l, {params}, false);  // LayerNorm's bias
    const uint64_t rows = elements / params;  // normalized groups: tokens (x heads for per-head q/k norms)
    if (ln) {
      // native_layer_norm saves its input and the fp32 mean and reciprocal deviation of every row.
      l.saved.push_back({input, elements, SavedClass::kActivation});
      l.saved.push_back({path + ":mean", rows, SavedClass::kFp32});
      l.saved.push_back({path + ":rstd", rows, SavedClass::kFp32});
    } else {
      // RMSNorm as transformers writes it (LlamaRMSNorm), composed of ops: x.to(fp32), pow(2) and
      // mean(-1), rsqrt(+eps), then x·rstd, cast back, times the weight. Autograd (saved-tensor
      // hooks, torch 1.13) keeps the fp32 x (pow and mul; x itself at fp32 activations), the fp32
      // x² (torch 1.13's mean saves its input), the fp32 rstd per row (rsqrt and mul) and, with a
      // weight, the normalized x it multiplies.
      l.saved.push_back({input, elements, SavedClass::kFp32});
      l.saved.push_back({path + ":squares", elements, SavedClass::kFp32});
      l.saved.push_back({path + ":rstd", rows, SavedClass::kFp32});
      if (t_.norm_params != NormParams::kNone) l.saved.push_back({path + ":normed", elements});
    }
    return l;
  }

  // A saved dropout mask: CUDA's 1-byte bool, or on the CPU the noise tensor of the activation dtype.
  SavedClass MaskClass() const {
    return settings_.dropout_mask == DropoutMask::kCpu ? SavedClass::kActivation : SavedClass::kMask;
  }

  void Dropout(const std::string& path, uint64_t elements, Component c) {
    if (t_.dropout <= 0) return;
    std::vector<uint64_t> shape = layers_.back().shape;
    Layer l = MakeElementwise(path, LayerKind::kDropout, c, elements, kFlopsPerElementwise);
    l.saved.push_back({.id = path + ":mask", .elements = elements, .cls = MaskClass()});
    Add(std::move(l), shape);
  }

  // Adds `branches` tensors to the residual stream: one add per branch and element.
  void Residual(const std::string& path, uint64_t branches) {
    Add(MakeElementwise(path, LayerKind::kResidualAdd, Component::kOther, Count(path, {rows_, t_.d_model, branches}),
                        kFlopsPerElementwise),
        Hidden());
  }

  void Block(int i, const LayerSpec& spec) {
    block_ = i;
    layer_ = spec;
    const bool enc_dec = t_.encoder_layers > 0;
    if (enc_dec) {
      if (spec.encoder_output) EncoderOutput();
      Stack(spec.cross_attention);
    }
    // A decoder block of a decode step attends to its cache of `context` target tokens.
    kv_ = enc_dec && !(spec.cross_attention && settings_.context) ? s_ : KeysPerQuery(spec, context_);
    // An encoder's (or an encoder stack's) attention is bidirectional and caches nothing.
    bidirectional_ = t_.encoder || (enc_dec && !spec.cross_attention);
    // A causal kernel skips the masked half only when the queries see the whole sequence.
    causal_ = settings_.causal && !bidirectional_ && kv_ == s_;
    const std::string input = cur_;
    if (spec.mixer != MixerKind::kAttention) {
      if (spec.hybrid > 0) SharedBlock();
      SsmBlock();
    } else if (enc_dec && t_.norm_placement == NormPlacement::kAfterAdd) {
      // modeling_bart.py, BartEncoderLayer and BartDecoderLayer: self-attention, cross-attention
      // (decoder layers) and feed-forward, each LayerNorm(x + dropout(branch(x))).
      Attention();
      Residual(P("attn.residual"), 1);
      Add(Norm(P("attn_norm")), Hidden());
      if (spec.cross_attention) {
        Attention("cross");
        Residual(P("cross.residual"), 1);
        Add(Norm(P("cross_norm")), Hidden());
      }
      Mlp();
      Residual(P("mlp.residual"), 1);
      Add(Norm(P("mlp_norm")), Hidden());
    } else if (enc_dec) {
      // modeling_t5.py, T5Block: pre-norm self-attention, cross-attention (decoder blocks) and
      // feed-forward, each added to the residual stream after a dropout.
      Add(Norm(P("attn_norm")), Hidden());
      Attention();
      Residual(P("attn.residual"), 1);
      if (spec.cross_attention) {
        Add(Norm(P("cross_norm")), Hidden());
        Attention("cross");
        Residual(P("cross.residual"), 1);
      }
      Add(Norm(P("mlp_norm")), Hidden());
      Mlp();
      Residual(P("mlp.residual"), 1);
    } else if (t_.norm_placement == NormPlacement::kAfterAdd) {
      // modeling_bert.py (BertSelfOutput, BertOutput): LayerNorm(x + dropout(dense(h))).
      Attention();
      Residual(P("attn.residual"), 1);
      Add(Norm(P("attn_norm")), Hidden());
      Mlp();
      Residual(P("mlp.residual"), 1);
      Add(Norm(P("mlp_norm")), Hidden());
    } else if (!t_.parallel_block) {
      const bool pre = t_.norm_placement != NormPlacement::kPost;
      const bool post = t_.norm_placement != NormPlacement::kPre;
      if (pre) Add(Norm(P("attn_norm")), Hidden());
      Attention();
      if (post) Add(Norm(P("attn.post_norm")), Hidden());
      Residual(P("attn.residual"), 1);
      if (pre) Add(Norm(P("mlp_norm")), Hidden());
      Mlp();
      if (post) Add(Norm(P("mlp.post_norm")), Hidden());
      Residual(P("mlp.residual"), 1);
    } else {
      const bool shared = t_.norms_per_block == 1;
      Add(Norm(P(shared ? "norm" : "attn_norm")), Hidden());
      const std::string normed = cur_;
      Attention();
      cur_ = shared ? normed : input;
      if (!shared) Add(Norm(P("mlp_norm")), Hidden());
      Mlp();
      Residual(P("residual"), 2);  // input + attention + MLP
    }
    block_ = -1;
  }

  // modeling_mamba.py, MambaBlock: x + mixer(RMSNorm(x)); the mixer's nodes come from
  // graph/build_ssm.cc. With an MLP (modeling_jamba.py, JambaMambaDecoderLayer): then
  // x + feed_forward(pre_ff_layernorm(x)), the dense MLP or the experts.
  void SsmBlock() {
    Add(Norm(P("norm")), Hidden());
    for (Layer& l : SsmMixer(t_.ssm, layer_.mixer, {P("mixer"), b_, s_, t_.d_model, cur_})) {
      std::vector<uint64_t> shape = l.shape;
      Add(std::move(l), std::move(shape));
    }
    Residual(P("residual"), 1);
    if (!layer_.mlp) return;
    Add(Norm(P("mlp_norm")), Hidden());
    Mlp();
    Residual(P("mlp.residual"), 1);
  }

  // modeling_zamba2.py, Zamba2HybridLayer: shared block number (use % num_mem_blocks), its nodes
  // from graph/build_zamba2.cc, and this block's linear, whose output is added to the input of the
  // Mamba-2 block that follows (x + mixer(RMSNorm(x + linear(shared)))). The shared weights belong
  // to the block's first use; later uses point at them (weights_of), so they count once while their
  // FLOPs count at every use.
  void SharedBlock() {
    const uint64_t use = layer_.hybrid - 1, shared = use % t_.zamba.shared_blocks;
    SharedBlockNodes nodes = Zamba2SharedBlock(t_, {P("shared"), P("linear"), b_, s_, kv_, causal_, cur_});
    if (shared_owners_.size() <= shared) shared_owners_.resize(shared + 1);
    const bool first = shared_owners_[shared].empty();
    size_t k = 0;
    for (size_t i = 0; i < nodes.layers.size(); ++i) {
      Layer& l = nodes.layers[i];
      if (std::find(nodes.shared.begin(), nodes.shared.end(), i) != nodes.shared.end()) {
        if (first) {
          shared_owners_[shared].push_back(layers_.size());
        } else {
          l.params = 0;
          l.param_tensors.clear();
          l.weights_of = shared_owners_[shared][k++];
        }
      }
      std::vector<uint64_t> shape = l.shape;
      Add(std::move(l), std::move(shape));
    }
    Residual(P("shared.add"), 1);  // x + linear(shared(...)), the Mamba-2 block's norm input
  }

  // What the attention core (scores, softmax, context) works on, from whichever projections made
  // q, k and v.
  struct Core {
    std::string qkv;               // id of the tensor holding q, k and v
    uint64_t qk_dim = 0;           // per head: the scores' inner dimension
    uint64_t v_dim = 0;            // per head: the context's output width
    uint64_t k_width = 0;          // K elements per token (all heads), as saved for backward
    uint64_t v_width = 0;          // V elements per token
    uint64_t kv_shards = 0;        // tensor-parallel ranks K and V split over at most (0: every rank)
    uint64_t cache_per_token = 0;  // KV cache elements per token (graph/layer.h)
    uint64_t cache_shards = 0;
    AttentionKind cache_kind = AttentionKind::kFull;
    std::string q;        // id of the tensor holding q alone, when not qkv (cross-attention)
    uint64_t k_rows = 0;  // rows of K and V when not the queries' (cross-attention: the source's)
  };

  // Self-attention ("attn"), or an encoder–decoder's cross-attention ("cross") over the encoder's output.
  void Attention(const std::string& name = "attn") {
    const bool cross = name == "cross";
    Core c = cross ? CrossProjections() : t_.mla.kv_lora_rank > 0 ? LatentProjections() : HeadProjections();
    if (layer_.relative_bias && !cross) RelativeBias();
    AttentionCore(c, name, cross ? src_seq_ : kv_, !cross && causal_);
    const uint64_t o_width = Count(P(name), {t_.n_heads, c.v_dim});
    Layer out = MakeLinear(P(name + ".out"), Component::kAttention, rows_, o_width, t_.d_model, t_.out_bias, cur_, true,
                           TpSplit::kRow);
    // gpt-oss's sinks: one learned logit per head that joins each softmax (modeling_gpt_oss.py),
    // split with the heads.
    if (t_.attention_sinks) AddParamTensor(out, {t_.n_heads}, true);
    AddLinear(std::move(out), Hidden(), "out");
    Dropout(P(name + ".resid_dropout"), Count(P(name), {rows_, t_.d_model}), Component::kAttention);
  }

  // modeling_t5.py, T5Attention.compute_bias: a [buckets, heads] embedding looked up at each
  // query-key pair's bucket gives a [1, heads, q, k] bias, which every layer of the stack adds to
  // its scores (the add is the scores node's one FLOP per element: T5 does not scale them).
  void RelativeBias() {
    Layer bias;
    bias.path = P("attn.relative_bias");
    bias.kind = LayerKind::kEmbedding;
    bias.component = Component::kAttention;
    AddParamTensor(bias, {t_.relative_buckets, t_.n_heads}, false);
    Add(std::move(bias), {b_, t_.n_heads, s_, kv_}, cur_);  // the block's input flows on past it
  }

  // modeling_t5.py, T5LayerCrossAttention: q from the decoder's stream, k and v from the encoder's
  // output (source rows); no RoPE, no cache split beyond the heads.
  Core CrossProjections() {
    const uint64_t h = t_.d_model, a = t_.n_heads, d = t_.head_dim;
    const uint64_t width = Count(P("cross"), {a, d});
    AddLinear(
        MakeLinear(P("cross.q"), Component::kAttention, rows_, h, width, t_.qkv_bias, cur_, true, TpSplit::kColumn),
        {b_, s_, width}, "qkv");
    const std::string q = cur_;
    const uint64_t src_rows = Count("tokens", {b_, src_seq_});
    Layer kv = MakeLinear(P("cross.kv"), Component::kAttention, src_rows, h, Count(P("cross"), {2, width}), t_.qkv_bias,
                          encoder_output_, true, TpSplit::kColumn);
    if (t_.qkv_bias && !t_.k_bias) {  // v's bias only
      kv.params -= width;
      kv.param_tensors.back().shape = {width};
      kv.non_matmul_flops = Count(P("cross.kv"), {src_rows, width});
    }
    source_side_ = true;  // projected once per source; a decode step reads the cache instead
    AddLinear(std::move(kv), {b_, src_seq_, Count(P("cross"), {2, width})}, "qkv");
    source_side_ = false;
    return {.qkv = cur_,
            .qk_dim = d,
            .v_dim = d,
            .k_width = width,
            .v_width = width,
            .kv_shards = a,
            .cache_per_token = Count(P("cross"), {2, width}),
            .cache_shards = a,
            .cache_kind = AttentionKind::kCross,
            .q = q,
            .k_rows = src_rows};
  }

  // Rotary positions over q and k in place: `heads` heads of `rotary` dimensions each, in a tensor
  // of `width` elements per token.
  void Rope(uint64_t heads, uint64_t rotary, uint64_t width, const std::string& qkv) {
    if (t_.position != PositionKind::kRope || rotary == 0) return;
    Add(MakeElementwise(P("attn.rope"), LayerKind::kRope, Component::kAttention,
                        Count(P("attn.rope"), {rows_, heads, rotary}), kFlopsPerRopeElement),
        {b_, s_, width}, qkv);
  }

  // Multi-head, grouped-query and multi-query attention: q, k and v projections of a·d, g·d, g·d.
  Core HeadProjections() {
    const uint64_t h = t_.d_model, a = t_.n_heads, g = t_.n_kv_heads, d = t_.head_dim;
    const uint64_t q_width = Count(P("attn"), {a, d}), kv_width = Count(P("attn"), {g, d});
    const uint64_t qkv_width = CheckedAdd(q_width, Count(P("attn"), {2, kv_width}), "width of " + P("attn.qkv"));
    Layer qkv_linear = MakeLinear(P("attn.qkv"), Component::kAttention, rows_, h, qkv_width, t_.qkv_bias, cur_, true,
                                  TpSplit::kColumn);
    if (t_.qkv_bias && !t_.k_bias) {
      // modeling_whisper.py: k_proj has no bias; q_proj and v_proj do.
      qkv_linear.params -= kv_width;
      qkv_linear.param_tensors.back().shape = {q_width + kv_width};
      qkv_linear.non_matmul_flops = Count(P("attn.qkv"), {rows_, q_width + kv_width});
    }
    if (g < a) {
      // Grouped-query attention: Q splits over every tensor-parallel rank, K and V over at most
      // their g heads, each rank past them holding a replica (vLLM's QKVParallelLinear; tp must
      // divide g or be a multiple of it: build_graph.cc). Three tensors, as such models store
      // q_proj, k_proj and v_proj (which Adafactor factors apart).
      qkv_linear.params = 0;
      qkv_linear.param_tensors.clear();
      const std::pair<uint64_t, uint64_t> parts[] = {{q_width, 0}, {kv_width, g}, {kv_width, g}};  // width, max shards
      for (const auto& [width, shards] : parts) AddParamTensor(qkv_linear, {h, width}, true, shards);
      if (t_.qkv_bias) {
        for (size_t i = 0; i < 3; ++i) {
          if (i != 1 || t_.k_bias) AddParamTensor(qkv_linear, {parts[i].first}, true, parts[i].second);
        }
      }
    }
    AddLinear(std::move(qkv_linear), {b_, s_, qkv_width}, "qkv");
    const std::string qkv = cur_;
    if (t_.qk_norm != QkNorm::kNone) {
      // Normalized in place before RoPE; each norm saves the q or k it reads.
      const bool per_head = t_.qk_norm == QkNorm::kPerHead;
      Add(Norm(P("attn.q_norm"), q_width, per_head ? d : q_width, P("attn.q_norm") + ":in"), {b_, s_, qkv_width}, qkv);
      Add(Norm(P("attn.k_norm"), kv_width, per_head ? d : kv_width, P("attn.k_norm") + ":in"), {b_, s_, qkv_width},
          qkv);
    }
    Rope(a + g, t_.rotary_dim == 0 ? d : t_.rotary_dim, Count(P("attn.rope"), {a + g, d}), qkv);
    return {.qkv = qkv,
            .qk_dim = d,
            .v_dim = d,
            .k_width = kv_width,
            .v_width = kv_width,
            .kv_shards = g,
            .cache_per_token = Count(P("attn"), {2, kv_width}),
            .cache_shards = g,
            .cache_kind = layer_.attention};
  }

  // Multi-head latent attention (MlaSpec in config/model_spec.h). The graph computes it as
  // transformers does, with K and V expanded per head; the cache holds the latent and the shared
  // RoPE key, kv_lora_rank + qk_rope_head_dim per token, as engines that absorb kv_b_proj into the
  // query and output keep it (DeepSeek-V2 §2.1.2), or full K and V per head if asked.
  Core LatentProjections() {
    const MlaSpec& m = t_.mla;
    const uint64_t h = t_.d_model, a = t_.n_heads;
    const uint64_t qk = CheckedAdd(m.qk_nope_head_dim, m.qk_rope_head_dim, "the MLA head size");
    const uint64_t q_width = Count(P("attn"), {a, qk});
    const std::string input = cur_;
    if (m.q_lora_rank > 0) {
      Add(MakeLinear(P("attn.q_a"), Component::kAttention, rows_, h, m.q_lora_rank, t_.qkv_bias, input, true),
          {b_, s_, m.q_lora_rank});
      Add(Norm(P("attn.q_a_norm"), m.q_lora_rank), {b_, s_, m.q_lora_rank});
      AddLinear(MakeLinear(P("attn.q_b"), Component::kAttention, rows_, m.q_lora_rank, q_width, false, cur_, true,
                           TpSplit::kColumn),
                {b_, s_, q_width}, "qkv");
    } else {
      AddLinear(
          MakeLinear(P("attn.q"), Component::kAttention, rows_, h, q_width, t_.qkv_bias, input, true, TpSplit::kColumn),
          {b_, s_, q_width}, "qkv");
    }
    const std::string q = cur_;
    const uint64_t latent = CheckedAdd(m.kv_lora_rank, m.qk_rope_head_dim, "the MLA latent size");
    Add(MakeLinear(P("attn.kv_a"), Component::kAttention, rows_, h, latent, t_.qkv_bias, input, true),
        {b_, s_, latent});
    Add(Norm(P("attn.kv_a_norm"), m.kv_lora_rank), {b_, s_, m.kv_lora_rank});
    const uint64_t kv_b = Count(P("attn"), {a, CheckedAdd(m.qk_nope_head_dim, m.v_head_dim, "the MLA head size")});
    AddLinear(MakeLinear(P("attn.kv_b"), Component::kAttention, rows_, m.kv_lora_rank, kv_b, false, cur_, true,
                         TpSplit::kColumn),
              {b_, s_, kv_b}, "qkv");
    const std::string qkv = cur_;
    Rope(a + 1, m.qk_rope_head_dim, q_width, q);  // every query head and the one shared key
    Core c{.qkv = qkv,
           .qk_dim = qk,
           .v_dim = m.v_head_dim,
           .k_width = q_width,
           .v_width = Count(P("attn"), {a, m.v_head_dim}),
           .kv_shards = 0};
    if (m.full_kv_cache) {
      c.cache_per_token = CheckedAdd(c.k_width, c.v_width, "the MLA cache");
      c.cache_shards = a;
      c.cache_kind = AttentionKind::kFull;
    } else {
      c.cache_per_token = latent;
      c.cache_shards = 1;  // one latent for all heads: every rank keeps it whole
      c.cache_kind = AttentionKind::kLatent;
    }
    return c;
  }

  // QK^T, softmax, dropout and AV of `name` ("attn", or "cross"), each query seeing `keys` keys.
  void AttentionCore(const Core& c, const std::string& name, uint64_t keys, bool causal) {
    const uint64_t a = t_.n_heads;
    const uint64_t k_rows = c.k_rows == 0 ? rows_ : c.k_rows;
    const uint64_t q_width = Count(P(name), {a, c.qk_dim}), o_width = Count(P(name), {a, c.v_dim});
    const uint64_t scores = Count(P(name), {b_, a, s_, keys});
    // The 1/sqrt(d) scaling (T5 instead adds its position bias), plus the bias add under ALiBi (Press et al. 2022).
    Layer qk = MakeElementwise(P(name + ".scores"), LayerKind::kAttentionScores, Component::kAttentionCore, scores,
                               t_.position == PositionKind::kAlibi ? 2 : kFlopsPerElementwise);
    qk.gemms.push_back({.m = s_, .n = keys, .k = c.qk_dim, .count = Count(P(name), {b_, a}), .halved = causal});
    qk.saved = {
        {.id = c.q.empty() ? c.qkv + ":q" : c.q, .elements = Count(P(name), {rows_, q_width}), .tp_sharded = true},
        {.id = c.qkv + ":k",
         .elements = Count(P(name), {k_rows, c.k_width}),
         .tp_sharded = true,
         .tp_max_shards = c.kv_shards}};
    qk.attention = c.cache_kind;
    qk.attention_span = c.cache_kind == AttentionKind::kCross ? keys : layer_.span;
    // An encoder runs once over its whole input: nothing is cached.
    const uint64_t cache_per_token = bidirectional_ ? 0 : c.cache_per_token;
    qk.kv_elements_per_token = cache_per_token;
    qk.kv_tp_max_shards = c.cache_shards;
    Add(std::move(qk), {b_, a, s_, keys});
    // Softmax: one FLOP per element, as DeepSpeed's profiler counts it. Eager attention saves the
    // probabilities; flash attention (Dao et al. 2022, §3.1) keeps only the fp32 log-sum-exp per
    // row and recomputes them in backward, dropout masks included (from the RNG state).
    Layer softmax = MakeElementwise(P(name + ".softmax"), LayerKind::kSoftmax, Component::kAttentionCore, scores,
                                    kFlopsPerElementwise);
    if (flash_) {
      softmax.saved.push_back({.id = P(name + ".softmax:lse"),
                               .elements = Count(P(name), {b_, a, s_}),
                               .cls = SavedClass::kFp32,
                               .tp_sharded = true});
    } else {
      softmax.saved.push_back({.id = P(name + ".softmax"), .elements = scores, .tp_sharded = true, .selective = true});
    }
    Add(std::move(softmax), {b_, a, s_, keys});
    if (t_.dropout > 0) {
      Layer drop = MakeElementwise(P(name + ".dropout"), LayerKind::kDropout, Component::kAttentionCore, scores,
                                   kFlopsPerElementwise);
      if (!flash_) {
        drop.saved.push_back(
            {.id = drop.path + ":mask", .elements = scores, .cls = MaskClass(), .tp_sharded = true, .selective = true});
      }
      Add(std::move(drop), {b_, a, s_, keys});
    }
    Layer av;  // reads V of k_rows rows
    av.path = P(name + ".context");
    av.kind = LayerKind::kAttentionContext;
    av.component = Component::kAttentionCore;
    av.gemms.push_back({.m = s_, .n = c.v_dim, .k = keys, .count = Count(P(name), {b_, a}), .halved = causal});
    av.kv_elements_per_token = cache_per_token;  // the V it reads is half of it
    av.kv_tp_max_shards = c.cache_shards;
    av.saved = {{.id = c.qkv + ":v",
                 .elements = Count(P(name), {k_rows, c.v_width}),
                 .tp_sharded = true,
                 .tp_max_shards = c.kv_shards}};
    if (flash_) {
      // Flash backward needs the output O; it is the out projection's saved input, counted once.
      av.saved.push_back({.id = av.path, .elements = Count(P(name), {rows_, o_width}), .tp_sharded = true});
    } else {
      av.saved.push_back({.id = cur_, .elements = scores, .tp_sharded = true, .selective = true});
    }
    Add(std::move(av), {b_, s_, o_width});
  }

  // A dense MLP over `rows` token rows, or one expert family: params are multiplied by `experts`.
  // Node shapes are `lead` followed by the width.
  void MlpLayers(const std::string& prefix, uint64_t rows, std::vector<uint64_t> lead, uint64_t f, uint64_t experts,
                 uint64_t active) {
    auto shape = [&](uint64_t width) {
      std::vector<uint64_t> s = lead;
      s.push_back(width);
      return s;
    };
    const uint64_t h = t_.d_model;
    const uint64_t hidden = Count(P(prefix), {rows, f});
    const bool gated = t_.mlp == MlpKind::kSwiglu || t_.mlp == MlpKind::kGeglu;
    const std::string input = cur_;
    auto linear = [&](const std::string& name, uint64_t in, uint64_t out, const std::string& from) {
      Layer l = MakeLinear(P(prefix + name), Component::kMlp, rows, in, out, t_.mlp_bias, from, true,
                           name == "down" ? TpSplit::kRow : TpSplit::kColumn);
      if (experts > 0) {
        // One tensor of each shape per expert: [experts, ...].
        l.params = Count(l.path, {l.params, experts});
        for (ParamTensor& p : l.param_tensors) p.shape.insert(p.shape.begin(), experts);
        l.n_experts = experts;
        l.active_experts = active;
      }
      return l;
    };
    Layer act = MakeElementwise(P(prefix + "act"), LayerKind::kActivation, Component::kMlp, hidden,
                                gated ? 2 : kFlopsPerElementwise);  // gated: act(gate) then · up
    if (gated) {
      AddLinear(linear("gate", h, f, input), shape(f), "gate");
      act.saved.push_back({.id = cur_, .elements = hidden, .tp_sharded = true});
      // Eager act(gate) · up: the activation saves the gate, the multiply act(gate) and up (4
      // tensors with the down projection's input); a fused kernel recomputes act(gate) (3).
      if (settings_.mlp_kernel == MlpKernel::kEager) {
        act.saved.push_back({.id = P(prefix + "act:gate"), .elements = hidden, .tp_sharded = true});
      }
    }
    AddLinear(linear("up", h, f, input), shape(f), "up");
    // ReLU's backward uses its output (the down projection's saved input); GELU and SiLU their input.
    const bool saves_output = t_.mlp == MlpKind::kRelu;
    act.saved.push_back({.id = saves_output ? P(prefix + "act") : cur_, .elements = hidden, .tp_sharded = true});
    Add(std::move(act), shape(f));
    // modeling_t5.py, T5DenseActDense and T5DenseGatedActDense: a dropout before wo.
    if (t_.mlp_dropout) Dropout(P(prefix + "act_dropout"), hidden, Component::kMlp);
    AddLinear(linear("down", f, h, cur_), shape(h), "down");
  }

  void Mlp() {
    const uint64_t h = t_.d_model;
    if (!layer_.moe) {
      MlpLayers("mlp.", rows_, {b_, s_}, t_.d_ff, 0, 0);
    } else {
      // Mixtral (Jiang et al. 2024, §2.1): a router scores E experts per token and each token runs
      // through its top-k; the expert GEMMs together see rows·k token rows.
      Layer router =
          MakeLinear(P("moe.router"), Component::kRouter, rows_, h, t_.n_experts, t_.router_bias, cur_, true);
      if (t_.router_score_bias) AddParamTensor(router, {t_.n_experts}, false);
      router.non_matmul_flops = CheckedAdd(router.non_matmul_flops, Count(router.path, {rows_, t_.n_experts}),
                                           "the FLOPs of " + router.path);  // softmax and top-k
      // The routing probabilities, kept for the gradient of the combine weights.
      router.saved.push_back({.id = router.path + ":probs",
                              .elements = Count(router.path, {rows_, t_.n_experts}),
                              .cls = SavedClass::kFp32});
      const std::string input = cur_;
      Add(std::move(router), {b_, s_, t_.n_experts});
      // Each token is copied to its k experts: the experts' input is that gathered copy.
      cur_ = input + ":routed";
      const uint64_t routed = Count(P("moe"), {rows_, t_.top_k});
      const uint64_t f = t_.moe_d_ff == 0 ? t_.d_ff : t_.moe_d_ff;
      MlpLayers("moe.experts.", routed, {b_, s_, t_.top_k}, f, t_.n_experts, t_.top_k);
      // The experts' outputs, weighted and summed per token: kept for the gradient of the weights.
      layers_.back().saved.push_back(
          {.id = layers_.back().path + ":out", .elements = Count(P("moe"), {routed, h}), .tp_sharded = false});
      if (t_.shared_expert_d_ff > 0) {
        // DeepSeek-V2 §2.1.1 and Llama 4: shared experts every token runs, one dense MLP beside the
        // routed ones, added to their sum.
        cur_ = input;
        MlpLayers("moe.shared.", rows_, {b_, s_}, t_.shared_expert_d_ff, 0, 0);
        Residual(P("moe.combine"), 1);
      }
    }
    Dropout(P("mlp.dropout"), Count(P("mlp"), {rows_, h}), Component::kMlp);
  }

  void Head() {
    if (EmbedDim() != t_.d_model) {
      Add(MakeLinear("embed.project_out", Component::kEmbedProjection, rows_, t_.d_model, EmbedDim(), false, cur_,
                     true),
          {b_, s_, EmbedDim()});
    }
    if (t_.head_scale) {
      // modeling_t5.py: a tied head's input is rescaled by d_model^-0.5 (a multiply by a constant
      // saves nothing for backward).
      Add(MakeElementwise("head.scale", LayerKind::kActivation, Component::kLmHead,
                          Count("head.scale", {rows_, t_.d_model}), kFlopsPerElementwise),
          Hidden());
    }
    Layer head = MakeLinear("lm_head", Component::kLmHead, rows_, EmbedDim(), t_.vocab_size, t_.lm_head_bias, cur_,
                            true, TpSplit::kColumn);
    if (t_.tied_embeddings) {
      head.params = 0;
      head.param_tensors.erase(head.param_tensors.begin());  // the weight is embed.tokens'; a bias is its own
      if (t_.lm_head_bias) head.params = t_.vocab_size;
      head.weights_of = 0;  // embed.tokens is always the first node
    }
    Add(std::move(head), {b_, s_, t_.vocab_size});
    if (t_.logits_bias) {
      // modeling_bart.py: lm_logits + final_logits_bias, a [1, V] buffer (no parameter).
      Add(MakeElementwise("head.logits_bias", LayerKind::kResidualAdd, Component::kLmHead,
                          Count("head.logits_bias", {rows_, t_.vocab_size}), kFlopsPerElementwise),
          {b_, s_, t_.vocab_size});
    }
    // Cross-entropy in fp32 over the (vocabulary-parallel) logits keeps the log-probabilities for backward.
    const uint64_t logits = Count("loss", {rows_, t_.vocab_size});
    Layer loss = MakeElementwise("loss", LayerKind::kLoss, Component::kLoss, logits, kFlopsPerElementwise);
    loss.saved.push_back({.id = "loss:log_probs", .elements = logits, .cls = SavedClass::kFp32, .tp_sharded = true});
    Add(std::move(loss), {b_, s_});
  }

  // modeling_bert.py: BertForMaskedLM ends in BertLMPredictionHead (a dense h x h, the activation,
  // a LayerNorm, then the decoder); BertModel in BertPooler (a dense and tanh over the first token);
  // BertForSequenceClassification in the pooler and a classifier. RoBERTa's and DistilBERT's
  // classifiers have their own dense instead of a pooler (RobertaClassificationHead,
  // DistilBertForSequenceClassification's pre_classifier): the same shapes.
  void EncoderHeads() {
    const uint64_t h = t_.d_model;
    if (t_.head == EncoderHead::kMaskedLm) {
      Add(MakeLinear("head.transform", Component::kHead, rows_, h, h, true, cur_, true), Hidden());
      Layer act = MakeElementwise("head.act", LayerKind::kActivation, Component::kHead, Count("head", {rows_, h}),
                                  kFlopsPerElementwise);
      act.saved.push_back({.id = cur_, .elements = Count("head", {rows_, h})});  // GELU's input
      Add(std::move(act), Hidden());
      Add(Norm("head.norm"), Hidden());
      Head();
      return;
    }
    if (!t_.pooler && t_.head == EncoderHead::kNone) return;  // DistilBertModel: the hidden states
    // The first token's vector, a view of the hidden states.
    const std::string first = cur_ + ":first";
    cur_ = first;
    if (t_.pooler) FirstTokenDense("pooler");
    if (t_.head != EncoderHead::kClassifier) return;
    if (!t_.pooler) FirstTokenDense("head.dense");
    Add(MakeLinear("head.classifier", Component::kHead, b_, h, t_.num_labels, true, cur_, true), {b_, t_.num_labels});
    const uint64_t logits = Count("loss", {b_, t_.num_labels});
    Layer loss = MakeElementwise("loss", LayerKind::kLoss, Component::kLoss, logits, kFlopsPerElementwise);
    loss.saved.push_back({.id = "loss:log_probs", .elements = logits, .cls = SavedClass::kFp32});
    Add(std::move(loss), {b_});
  }

  // A dense h x h with a bias over the first token of each sequence, then tanh (which saves its
  // output for backward).
  void FirstTokenDense(const std::string& path) {
    const uint64_t h = t_.d_model;
    Add(MakeLinear(path + ".dense", Component::kHead, b_, h, h, true, cur_, true), {b_, h});
    Layer act = MakeElementwise(path + ".act", LayerKind::kActivation, Component::kHead, Count(path, {b_, h}),
                                kFlopsPerElementwise);
    act.saved.push_back({.id = path + ".act", .elements = Count(path, {b_, h})});
    Add(std::move(act), {b_, h});
  }

  // Adds a linear and, when `target` is a LoRA target, its adapter: X·A·B beside the frozen X·W
  // (Hu et al. 2021, §4.1), A in x r and B r x out, both trainable.
  void AddLinear(Layer l, std::vector<uint64_t> shape, const std::string& target) {
    const uint64_t rank = settings_.lora_rank;
    const auto& targets = settings_.lora_targets;
    const bool adapt = rank > 0 && std::find(targets.begin(), targets.end(), target) != targets.end();
    if (!adapt) {
      Add(std::move(l), std::move(shape));
      return;
    }
    const Gemm base = l.gemms[0];  // m rows, k in, n out
    const std::string input = l.saved[0].id;
    const std::string path = l.path;
    Add(std::move(l), shape);
    Layer lora;
    lora.path = path + ".lora";
    lora.kind = LayerKind::kLinear;
    lora.component = Component::kLora;
    AddParamTensor(lora, {base.k, rank}, false);
    AddParamTensor(lora, {rank, base.n}, false);
    lora.gemms = {{.m = base.m, .n = rank, .k = base.k, .count = base.count},
                  {.m = base.m, .n = base.n, .k = rank, .count = base.count}};
    lora.non_matmul_flops = Count(lora.path, {base.m, base.n, base.count});  // adding B(A x) to W x
    lora.saved = {{.id = input, .elements = Count(lora.path, {base.m, base.k, base.count})},
                  {.id = lora.path + ":ax", .elements = Count(lora.path, {base.m, rank, base.count})}};
    Add(std::move(lora), std::move(shape));
    cur_ = path;  // W x + B(A x) is the base layer's output
  }

  const TransformerSpec& t_;
  const GraphSettings& settings_;
  const uint64_t b_;
  uint64_t s_;              // the sequence of the nodes being built (an encoder–decoder's source or target)
  const uint64_t context_;  // tokens the queries follow: s_, or the cache length of a decode step
  const bool flash_;
  uint64_t rows_;                             // batch x seq: the m of every token-wise GEMM
  const uint64_t src_seq_, tgt_seq_;          // an encoder–decoder's source and target lengths (else both the seq)
  std::string target_embedding_;              // an encoder–decoder: ids of the decoder's embedded input ...
  std::string encoder_output_;                // ... and of the encoder's output, which cross-attention reads
  bool source_side_ = t_.encoder_layers > 0;  // the nodes being added run over the source (Layer::source_side)
  bool bidirectional_ = false;                // the block being built attends both ways and caches nothing
  std::vector<std::vector<size_t>> shared_owners_;  // Zamba2: per shared block, its weights' nodes
  int block_ = -1;
  int block_type_ = -1;
  LayerSpec layer_;  // the block being built
  uint64_t kv_ = 0;  // its keys per query
  bool causal_ = false;
  std::string cur_;  // id of the tensor the next node consumes
  std::vector<Layer> layers_;
};

}  // namespace

LayerGraph BuildTransformerGraph(const ModelSpec& spec, const GraphSettings& settings) {
  const TransformerSpec& t = spec.transformer;
  uint64_t seq = settings.seq.value_or(t.context_length);
  if (t.position == PositionKind::kLearned && seq > t.context_length) {
    throw InputError("--seq: " + std::to_string(seq) + " is longer than the " + std::to_string(t.context_length) +
                     " learned positions of '" + spec.name + "'");
  }
  if (settings.target_seq && t.encoder_layers == 0) {
    throw InputError("--target-seq: '" + spec.name + "' has no decoder stack over a separate target (it is not an " +
                     "encoder-decoder); --seq sets its tokens");
  }
  if (t.mel_bins > 0 && seq != t.context_length) {
    // modeling_whisper.py, WhisperEncoder.forward: the input must be 2·max_source_positions frames.
    throw InputError("--seq: '" + spec.name + "' reads exactly " + std::to_string(2 * t.context_length) +
                     " mel frames, " + std::to_string(t.context_length) + " positions after its convolutions; --seq " +
                     std::to_string(seq) + " is not that");
  }
  // A careful default: the target as long as the source (give --target-seq for a shorter one), or
  // the decoder's own positions when it has fewer (Whisper).
  const uint64_t target_limit = t.target_context > 0 ? t.target_context : t.context_length;
  const uint64_t fallback = t.position == PositionKind::kLearned ? std::min(seq, target_limit) : seq;
  const uint64_t target = t.encoder_layers > 0 ? settings.target_seq.value_or(fallback) : seq;
  if (t.encoder_layers > 0 && t.position == PositionKind::kLearned && target > target_limit) {
    throw InputError("--target-seq: " + std::to_string(target) + " is longer than the " + std::to_string(target_limit) +
                     " learned positions of '" + spec.name + "'");
  }
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
  g.target_seq = t.encoder_layers > 0 ? target : 0;
  g.causal = settings.causal && !t.encoder;
  g.n_layers = t.n_layers;
  if (settings.dropout) effective.dropout = *settings.dropout;
  if (t.zamba.shared_blocks > 0) {
    // graph/build_zamba2.cc saves nothing: the shared blocks' activations at each use are not modelled.
    g.training_refused = "training activations of '" + spec.name +
                         "' (Zamba2: shared transformer blocks reused at the hybrid layers) are not modelled; --mode "
                         "infer gives its inference memory";
  }
  TransformerBuilder(effective, settings, seq, target).Build(g);
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
