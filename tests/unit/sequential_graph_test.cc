// Sequential and graph models (issue 15): what autograd saves, node by node, derived by hand from
// PyTorch's tools/autograd/derivatives.yaml and checked with saved-tensor hooks in PyTorch 1.13.1
// (scripts/conformance); parameters against torchvision's published Weights tables.
#include <doctest/doctest.h>

#include "estimate/activations.h"
#include "estimate/flops.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::InlineGraph;
using testing::PresetGraph;

Settings Make(Settings s) {
  s.dtypes = PolicyDtypes(s.precision);
  s.batch = s.micro_batch;  // one micro-batch per step
  return s;
}

// Training activation bytes of an inline config.
uint64_t Activations(const std::string& yaml, Settings s = {.precision = Precision::kFp32}) {
  s = Make(s);
  ModelSpec spec = LoadModelText("inline.yaml", yaml);
  return TrainingMemory(s, testing::MemoryOf(spec, s)).activations;
}

uint64_t PresetActivations(const std::string& name, Settings s) {
  s = Make(s);
  ModelSpec spec = ResolveModel(name);
  return TrainingMemory(s, testing::MemoryOf(spec, s)).activations;
}

uint64_t Params(const LayerGraph& g) {
  uint64_t n = 0;
  for (const Layer& l : g.layers) n += l.params;
  return n;
}

std::string ErrorOf(const std::string& yaml) {
  try {
    InlineGraph(yaml);
  } catch (const InputError& e) {
    return FormatDiagnostic(e);
  }
  return "";
}

const char* kHead = "family: sequential\n";

TEST_CASE("sequential: pooling saves its input for backward") {
  // conv 1x1 to 2 channels on [1, 4, 4]: its output is 2·4·4 = 32 fp32 values = 128 bytes.
  // max_pool2d_with_indices saves that input and the int64 indices of its 2·2·2 = 8 outputs (64 bytes);
  // the conv's own input is the data batch, not an activation.
  const std::string conv = std::string(kHead) + "input: [1, 4, 4]\nlayers:\n  - conv2d: {out: 2, kernel: 1}\n";
  CHECK(Activations(conv + "  - pool: {kind: max, kernel: 2}\n") == 128 + 64);
  // avg_pool2d saves its input only.
  CHECK(Activations(conv + "  - pool: {kind: avg, kernel: 2}\n") == 128);
  // adaptive_avg_pool2d saves its input, even to 1x1 (PyTorch 1.13).
  CHECK(Activations(conv + "  - adaptive_pool: {kind: avg, out: 1}\n") == 128);
}

TEST_CASE("sequential: layernorm saves its input and the fp32 mean and rstd of each row") {
  // Linear to [4, 8]: LayerNorm saves those 32 values and 4 means + 4 reciprocal deviations in fp32.
  const std::string yaml = std::string(kHead) + "input: [4, 8]\nlayers: [{linear: {out: 8}}, layernorm]\n";
  CHECK(Activations(yaml) == 4 * 32 + 4 * 4 + 4 * 4);
  // bf16 activations: the input in 2 bytes each, the statistics still fp32.
  CHECK(Activations(yaml, {.precision = Precision::kMixedBf16}) == 2 * 32 + 4 * 4 + 4 * 4);
}

TEST_CASE("sequential: a classifier ends in cross-entropy, which saves the fp32 log-probabilities") {
  // Seed MLP, batch 32, fp32: the ReLU outputs 32·1024 and 32·512 (each also the next Linear's input),
  // and log_softmax's output 32·10 that nll_loss reads back; the targets are data.
  CHECK(PresetActivations("seed-mlp", {.micro_batch = 32, .precision = Precision::kFp32}) ==
        4 * (32 * 1024 + 32 * 512) + 4 * 32 * 10);
  const std::string mlp = std::string(kHead) + "input: [100]\nlayers: [{linear: {out: 10}}, relu]\n";
  CHECK(Activations(mlp) == 4 * 10 + 4 * 10);  // relu output, log-probabilities
  CHECK(Activations(mlp + "loss: none\n") == 4 * 10);
  // Under mixed precision the loss still runs in fp32 (autocast's fp32 list has log_softmax).
  CHECK(Activations(mlp, {.precision = Precision::kMixedBf16}) == 2 * 10 + 4 * 10);
  // An image output is not a classifier: no loss unless asked for, and then an error at the key.
  const std::string image = std::string(kHead) + "input: [1, 4, 4]\nlayers: [{conv2d: {out: 2, kernel: 1}}]\n";
  CHECK(InlineGraph(image).layers.size() == 1);
  CHECK(ErrorOf(image + "loss: cross_entropy\n") ==
        "inline.yaml:4:7: error: 'loss: cross_entropy' needs one vector of classes per sample, but the model's "
        "output is [2, 4, 4]");
}

TEST_CASE("sequential: the dropout mask is 1 byte on CUDA and the activation dtype on the CPU") {
  const std::string yaml =
      std::string(kHead) + "input: [100]\nloss: none\nlayers: [{linear: {out: 10}}, {dropout: {p: 0.1}}]\n";
  CHECK(Activations(yaml) == 10);  // CUDA's fused dropout keeps a bool per element
  CHECK(Activations(yaml, {.precision = Precision::kFp32, .dropout_mask = DropoutMask::kCpu}) == 4 * 10);
  CHECK(Activations(yaml, {.precision = Precision::kMixedBf16, .dropout_mask = DropoutMask::kCpu}) == 2 * 10);
}

TEST_CASE("sequential: batchnorm has weight and bias, saves its input in training") {
  // conv 3 -> 8 channels, 3x3, no bias: 8·3·9 = 216; BatchNorm2d(8): weight and bias, 16 (the running
  // mean and variance are buffers). Saved: BN's input and ReLU's output, 8·4·4 values each.
  const std::string yaml = std::string(kHead) +
                           "input: [3, 4, 4]\nlayers:\n  - conv2d: {out: 8, kernel: 3, padding: 1, bias: false}\n"
                           "  - batchnorm\n  - relu\n";
  CHECK(Params(InlineGraph(yaml)) == 216 + 16);
  CHECK(Activations(yaml) == 4 * (128 + 128));
}

TEST_CASE("sequential: a residual block") {
  // Two 3x3 convs 4 -> 4 on [4, 8, 8], each followed by BatchNorm; x + body(x), then ReLU.
  const std::string yaml = std::string(kHead) +
                           "input: [4, 8, 8]\n"
                           "layers:\n"
                           "  - residual:\n"
                           "      layers:\n"
                           "        - conv2d: {out: 4, kernel: 3, padding: 1, bias: false}\n"
                           "        - batchnorm\n"
                           "        - relu\n"
                           "        - conv2d: {out: 4, kernel: 3, padding: 1, bias: false}\n"
                           "        - batchnorm\n"
                           "  - relu\n";
  const LayerGraph g = InlineGraph(yaml);
  CHECK(Params(g) == 2 * 4 * 4 * 9 + 2 * 8);
  // Each conv: 2 · (8·8 outputs) · 4 channels · (4·3·3) = 18,432 FLOPs forward. Backward: the first
  // conv reads the data batch, so only its dW; the second dX and dW.
  const FlopCounts f = CountFlops(g);
  CHECK(f.forward == 2 * 18'432);
  CHECK(f.backward == 18'432 + 2 * 18'432);
  // Saved: bn1's input, relu's output (also conv2's input), bn2's input, the last relu's output:
  // 4 tensors of 4·8·8; the add saves nothing.
  CHECK(Activations(yaml) == 4 * 4 * 256);
  // A projection shortcut: 1x1 stride-2 conv 4 -> 8 and BatchNorm beside a stride-2 body.
  const std::string proj = std::string(kHead) +
                           "input: [4, 8, 8]\n"
                           "layers:\n"
                           "  - residual:\n"
                           "      layers: [{conv2d: {out: 8, kernel: 3, stride: 2, padding: 1, bias: false}}]\n"
                           "      shortcut: [{conv2d: {out: 8, kernel: 1, stride: 2, bias: false}}, batchnorm]\n";
  const LayerGraph p = InlineGraph(proj);
  CHECK(p.layers.back().shape == std::vector<uint64_t>{1, 8, 4, 4});
  CHECK(Params(p) == 8 * 4 * 9 + 8 * 4 + 16);
}

TEST_CASE("sequential: parallel branches joined by concat and by multiply") {
  // A Fire-like block on [8, 4, 4]: 1x1 to 2 and 3x3 to 3 channels, concatenated to [5, 4, 4].
  const std::string fire = std::string(kHead) +
                           "input: [8, 4, 4]\n"
                           "layers:\n"
                           "  - parallel:\n"
                           "      join: concat\n"
                           "      branches:\n"
                           "        - [conv2d: {out: 2, kernel: 1}]\n"
                           "        - [conv2d: {out: 3, kernel: 3, padding: 1}]\n"
                           "  - relu\n";
  const LayerGraph g = InlineGraph(fire);
  CHECK(g.layers.back().shape == std::vector<uint64_t>{1, 5, 4, 4});
  CHECK(Params(g) == (8 * 2 + 2) + (8 * 3 * 9 + 3));
  CHECK(Activations(fire) == 4 * 80);  // cat saves nothing; relu its 5·4·4 outputs
  // Squeeze-excitation: x · sigmoid(conv(pool(x))) with x a conv's [4, 2, 2] output. Saved: the pool's
  // input x (16), the conv's input (4), the sigmoid's output (4); the multiply saves both operands,
  // x and the sigmoid's output, already counted.
  const std::string se = std::string(kHead) +
                         "input: [4, 2, 2]\n"
                         "layers:\n"
                         "  - conv2d: {out: 4, kernel: 1}\n"
                         "  - parallel:\n"
                         "      join: mul\n"
                         "      branches:\n"
                         "        - []\n"
                         "        - [adaptive_pool: {kind: avg, out: 1}, conv2d: {out: 4, kernel: 1}, sigmoid]\n";
  CHECK(InlineGraph(se).layers.back().shape == std::vector<uint64_t>{1, 4, 2, 2});
  CHECK(Activations(se) == 4 * (16 + 4 + 4));
}

TEST_CASE("sequential: ceil_mode and dilation follow PyTorch's output sizes") {
  auto out = [](const std::string& input, const std::string& layer) {
    return InlineGraph(std::string(kHead) + "input: " + input + "\nlayers: [" + layer + "]\n").layers.back().shape;
  };
  // Checked with torch 1.13.1: max_pool2d(5x5, kernel 2, stride 2, padding 1, ceil_mode) is 3x3 (the
  // last window would start in the padding); 6x6, kernel 3, stride 2 is 3x3 with ceil_mode, 2x2 without.
  CHECK(out("[1, 5, 5]", "pool: {kind: max, kernel: 2, padding: 1, ceil_mode: true}") ==
        std::vector<uint64_t>{1, 1, 3, 3});
  CHECK(out("[1, 6, 6]", "pool: {kind: max, kernel: 3, stride: 2, ceil_mode: true}") ==
        std::vector<uint64_t>{1, 1, 3, 3});
  CHECK(out("[1, 6, 6]", "pool: {kind: max, kernel: 3, stride: 2}") == std::vector<uint64_t>{1, 1, 2, 2});
  // A 3x3 kernel at dilation 2 spans 5: 7x7 -> 3x3, for conv2d and max pooling alike.
  CHECK(out("[1, 7, 7]", "conv2d: {out: 1, kernel: 3, dilation: 2}") == std::vector<uint64_t>{1, 1, 3, 3});
  CHECK(out("[1, 7, 7]", "pool: {kind: max, kernel: 3, stride: 1, dilation: 2}") == std::vector<uint64_t>{1, 1, 3, 3});
}

TEST_CASE("sequential: graph errors name file:line:col") {
  CHECK(ErrorOf(std::string(kHead) +
                "input: [4, 8, 8]\nlayers:\n  - residual:\n      layers: [{conv2d: {out: 8, kernel: 1}}]\n") ==
        "inline.yaml:4:5: error: cannot add branch 0's output [8, 8, 8] and branch 1's [4, 8, 8]");
  CHECK(ErrorOf(std::string(kHead) + "input: [4]\nlayers:\n  - parallel: {join: stack, branches: [[], []]}\n") ==
        "inline.yaml:4:22: error: 'join' must be one of add, concat, mul, got 'stack'");
  CHECK(ErrorOf(std::string(kHead) + "input: [4]\nlayers:\n  - parallel: {branches: [[]]}\n") ==
        "inline.yaml:4:26: error: 'branches' must be a list of at least two layer lists, got a list");
  CHECK(ErrorOf(std::string(kHead) + "input: [1, 4, 4]\nlayers:\n  - pool: {kind: avg, kernel: 2, dilation: 2}\n") ==
        "inline.yaml:4:44: error: 'dilation' applies to max pooling only (PyTorch's AvgPool2d has none)");
}

TEST_CASE("sequential: nested blocks count every node they expand to") {
  // 1,000 residual blocks of 1,000 ReLUs each would be a million nodes: refused at the outer 'times'.
  CHECK(ErrorOf(std::string(kHead) + "input: [4]\n"
                                     "layers:\n"
                                     "  - repeat:\n"
                                     "      times: 1000\n"
                                     "      layers:\n"
                                     "        - residual:\n"
                                     "            layers: [{repeat: {times: 1000, layers: [relu]}}]\n") ==
        "inline.yaml:5:14: error: 'repeat' expands to more than 100000 layers");
}

// Parameters of torchvision's models, from the "Weights" tables of its documentation
// (pytorch.org/vision/stable/models.html), also counted by scripts/conformance from the models.
TEST_CASE("sequential: presets have torchvision's parameter counts") {
  CHECK(Params(PresetGraph("alexnet")) == 61'100'840);
  CHECK(Params(PresetGraph("vgg16")) == 138'357'544);
  CHECK(Params(PresetGraph("resnet18")) == 11'689'512);
  CHECK(Params(PresetGraph("resnet50")) == 25'557'032);
  CHECK(Params(PresetGraph("mobilenet-v2")) == 3'504'872);
  CHECK(Params(PresetGraph("squeezenet1-0")) == 1'248'424);
  CHECK(Params(PresetGraph("densenet121")) == 7'978'856);
  CHECK(Params(PresetGraph("vit-b-16")) == 86'567'656);
}

TEST_CASE("sequential: a pre-norm encoder layer saves what eager nn.MultiheadAttention does") {
  // [s, d] = [5, 8] tokens, 2 heads of 4, MLP 16, batch 1, fp32. Seen with saved-tensor hooks on
  // torchvision's EncoderBlock(2, 8, 16) in PyTorch 1.13: 8 tensors of s·d (ln_1's input, the copy
  // the packed projection reads, the scaled q, copies of k and v, the context copy the output
  // projection reads, ln_2's input and the MLP's input), GELU's input and output (s·f each), the
  // softmax probabilities (h·s·s), and 4 fp32 statistics per token (two LayerNorms' mean and rstd).
  const std::string yaml = std::string(kHead) +
                           "input: [5, 8]\nloss: none\n"
                           "layers: [{linear: {out: 8}}, {encoder: {heads: 2, mlp: 16}}]\n";
  CHECK(Activations(yaml) == 4 * (8 * 40 + 2 * 80 + 2 * 25) + 4 * 4 * 5);
  // Parameters: two LayerNorms 2·2·8, q/k/v 8·24 + 24, output 8·8 + 8, MLP 8·16 + 16 + 16·8 + 8.
  const LayerGraph g = InlineGraph(yaml);
  CHECK(Params(g) - (8 * 8 + 8) == 32 + 216 + 72 + 144 + 136);
  // FLOPs forward: projections 2·5·(8·24 + 8·8 + 8·16 + 16·8), QK^T and AV 2 · 2·2·5·5·4 each.
  CHECK(CountFlops(g).forward - 2 * 5 * 8 * 8 == 2 * 5 * (192 + 64 + 128 + 128) + 2 * (2 * 2 * 5 * 5 * 4));
  // Post-norm (nn.TransformerEncoderLayer, norm_first=False, same hooks): the block input is no
  // LayerNorm's input, but the second add's output is: the same 8 tensors of s·d and statistics.
  const std::string post = std::string(kHead) +
                           "input: [5, 8]\nloss: none\n"
                           "layers: [{linear: {out: 8}}, {encoder: {heads: 2, mlp: 16, norm: post}}]\n";
  CHECK(Activations(post) == 4 * (8 * 40 + 2 * 80 + 2 * 25) + 4 * 4 * 5);
  CHECK(Params(InlineGraph(post)) == Params(g));
}

TEST_CASE("sequential: --input replaces the config's sample shape") {
  // resnet18 on 3x32x32: the stride-2 stem conv and max pool give 8x8, the three stride-2 stages 1x1;
  // the adaptive pool makes the parameters independent of the input (He et al. 2015, Table 1).
  const LayerGraph g = PresetGraph("resnet18", {.input = {3, 32, 32}});
  CHECK(Params(g) == 11'689'512);
  CHECK(g.layers[g.layers.size() - 5].shape == std::vector<uint64_t>{1, 512, 1, 1});  // the last relu
  // torchvision's resnet18 on 2 x 3 x 32 x 32 runs 150,093,824 matmul and convolution FLOPs
  // (scripts/conformance's operator counter, PyTorch 1.13.1): 75,046,912 a sample.
  CHECK(CountFlops(g).forward == 75'046'912);
  CHECK_THROWS_WITH_AS(CheckParallelism(ResolveModel("gpt2-small"), {.input = {3, 32, 32}}),
                       "tally: error: --input: 'gpt2-small' is a transformer; its input is set by --batch and --seq",
                       InputError);
}

}  // namespace
}  // namespace tally
