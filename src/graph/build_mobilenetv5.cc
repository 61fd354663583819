// mobilenetv5_300m_enc's tensors, read from timm (huggingface/pytorch-image-models, read at commit
// aa4b585): timm/models/mobilenetv5.py (MobileNetV5Encoder, _gen_mobilenet_v5's arch_def,
// MobileNetV5MultiScaleFusionAdapter), timm/models/_efficientnet_builder.py (_decode_block_str,
// EfficientNetBuilder), timm/models/_efficientnet_blocks.py (EdgeResidual,
// UniversalInvertedResidual, MobileAttention), timm/layers (ConvNormAct, RmsNorm2d, LayerScale2d,
// MultiQueryAttention2d in attention2d.py, create_conv2d). What they build:
//  - every convolution has no bias (create_conv2d's default) but the stem's (stem_bias=True);
//  - every norm is RmsNorm2d (a weight of C, no bias), with or without its GELU;
//  - layer_scale_init_value=1e-5 gives every UIR and MQA block a LayerScale2d (gamma of C); the
//    edge residuals have none, nor has the fusion adapter's UIR (its default is None);
//  - channel_multiplier 1.0 keeps every width (round_channels: each is a multiple of 8 already), and
//    make_divisible(in · e) of a block's expansion is in · e for the same reason.
#include "graph/build_mobilenetv5.h"

#include <cstddef>

namespace tally {
namespace {

using Tensors = std::vector<std::vector<uint64_t>>;

enum class BlockKind { kEdge, kUir, kMqa };

// One arch_def string decoded. er_k3_e4_c128: an EdgeResidual whose conv_exp has kernel 3, expansion
// 4, 128 out. uir_a5_k5_e6_c640: a UniversalInvertedResidual with a depthwise start of kernel 5 (a0:
// none), a depthwise middle of 5 (k0: none), expansion 6. mqa_k3_h12_v2_d64_c640: MobileAttention
// with MultiQueryAttention2d of 12 query heads, one key and one value head of 64, keys and values
// downsampled by a depthwise 3 x 3 of stride 2 (v2; v1: none). Strides move no weights.
struct Block {
  BlockKind kind;
  uint64_t out;
  // er: conv_exp's kernel; uir: the depthwise middle's (0: none); mqa: the K/V down_conv's.
  uint64_t kernel = 0;
  uint64_t start = 0;                          // uir: the depthwise start's kernel (0: none)
  uint64_t expand = 1;                         // er, uir
  uint64_t heads = 0, dim = 0, kv_stride = 1;  // mqa
};

constexpr uint64_t kStem = 64;  // stem_size=64

// _gen_mobilenet_v5's arch_def for every variant but mobilenetv5_base, stage by stage.
std::vector<Block> Arch() {
  std::vector<Block> b;
  auto add = [&b](const Block& x, std::size_t n = 1) { b.insert(b.end(), n, x); };
  // Stage 0: er_r1_k3_s2_e4_c128, er_r1_k3_s1_e4_c128 twice.
  add({.kind = BlockKind::kEdge, .out = 128, .kernel = 3, .expand = 4}, 3);
  // Stage 1: uir_r1_a3_k5_s2_e6_c256, then (uir a5 k0 e4, uir a3 k0 e4) twice, all of 256.
  add({.kind = BlockKind::kUir, .out = 256, .kernel = 5, .start = 3, .expand = 6});
  for (int i = 0; i < 2; ++i) {
    add({.kind = BlockKind::kUir, .out = 256, .start = 5, .expand = 4});
    add({.kind = BlockKind::kUir, .out = 256, .start = 3, .expand = 4});
  }
  // Stage 2: uir a5 k5 s2 e6, 7 x uir a5 k0 e4, uir a0 k0 e1, then 14 x (mqa_r1_k3_h12_v2_s1_d64,
  // uir a0 k0 e2), all of 640.
  add({.kind = BlockKind::kUir, .out = 640, .kernel = 5, .start = 5, .expand = 6});
  add({.kind = BlockKind::kUir, .out = 640, .start = 5, .expand = 4}, 7);
  add({.kind = BlockKind::kUir, .out = 640, .expand = 1});
  for (int i = 0; i < 14; ++i) {
    add({.kind = BlockKind::kMqa, .out = 640, .kernel = 3, .heads = 12, .dim = 64, .kv_stride = 2});
    add({.kind = BlockKind::kUir, .out = 640, .expand = 2});
  }
  // Stage 3: uir a5 k5 s2 e6, then 19 x (mqa_r1_k3_h16_s1_d96, uir a0 k0 e2), all of 1280.
  add({.kind = BlockKind::kUir, .out = 1280, .kernel = 5, .start = 5, .expand = 6});
  for (int i = 0; i < 19; ++i) {
    add({.kind = BlockKind::kMqa, .out = 1280, .kernel = 3, .heads = 16, .dim = 96});
    add({.kind = BlockKind::kUir, .out = 1280, .expand = 2});
  }
  return b;
}

// A convolution's weight, [out, in / groups, k, k].
void Conv(Tensors& t, uint64_t out, uint64_t in_per_group, uint64_t k) { t.push_back({out, in_per_group, k, k}); }
// A per-channel vector: a norm's weight, a bias, a layer scale.
void Vec(Tensors& t, uint64_t c) { t.push_back({c}); }

// UniversalInvertedResidual: dw_start (depthwise, its norm), pw_exp (1 x 1 to in·e, its norm),
// dw_mid (depthwise, its norm), pw_proj (1 x 1 to out, its norm), layer_scale.
void Uir(Tensors& t, uint64_t in, const Block& b, bool layer_scale) {
  if (b.start > 0) {
    Conv(t, in, 1, b.start);
    Vec(t, in);
  }
  const uint64_t mid = in * b.expand;
  Conv(t, mid, in, 1);
  Vec(t, mid);
  if (b.kernel > 0) {
    Conv(t, mid, 1, b.kernel);
    Vec(t, mid);
  }
  Conv(t, b.out, mid, 1);
  Vec(t, b.out);
  if (layer_scale) Vec(t, b.out);
}

// EdgeResidual: conv_exp (k x k to in·e), bn1, conv_pwl (1 x 1 to out), bn2.
void Edge(Tensors& t, uint64_t in, const Block& b) {
  const uint64_t mid = in * b.expand;
  Conv(t, mid, in, b.kernel);
  Vec(t, mid);
  Conv(t, b.out, mid, 1);
  Vec(t, b.out);
}

// MobileAttention: its norm, then MultiQueryAttention2d's query.proj (1 x 1 to heads·dim), key and
// value each a down_conv (depthwise, stride kv_stride) and norm when kv_stride > 1 and a proj (1 x 1
// to dim), output.proj (1 x 1 heads·dim to out); layer_scale.
void Mqa(Tensors& t, uint64_t in, const Block& b) {
  Vec(t, in);
  Conv(t, b.heads * b.dim, in, 1);
  for (int kv = 0; kv < 2; ++kv) {
    if (b.kv_stride > 1) {
      Conv(t, in, 1, b.kernel);
      Vec(t, in);
    }
    Conv(t, b.dim, in, 1);
  }
  Conv(t, b.out, b.heads * b.dim, 1);
  Vec(t, b.out);
}

}  // namespace

std::vector<std::vector<uint64_t>> MobileNetV5Tensors() {
  Tensors t;
  // conv_stem: ConvNormAct(3, 64, kernel 3, stride 2, bias) and its norm.
  Conv(t, kStem, 3, 3);
  Vec(t, kStem);
  Vec(t, kStem);
  uint64_t in = kStem;
  for (const Block& b : Arch()) {
    if (b.kind == BlockKind::kEdge) Edge(t, in, b);
    if (b.kind == BlockKind::kUir) Uir(t, in, b, true);
    if (b.kind == BlockKind::kMqa) Mqa(t, in, b);
    in = b.out;
  }
  // MobileNetV5MultiScaleFusionAdapter over msfa_indices (-2, -1), the last two stages' outputs
  // concatenated (640 + 1280): a UIR without depthwise convolutions, expansion 2, to num_features
  // 2048 (fixed in MobileNetV5Encoder), no layer scale; then its norm.
  constexpr uint64_t kFeatures = 2048;
  Uir(t, 640 + 1280, {.kind = BlockKind::kUir, .out = kFeatures, .expand = 2}, false);
  Vec(t, kFeatures);
  return t;
}

}  // namespace tally
