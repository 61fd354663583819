// Issue 16's encoder–decoders (T5, mT5, UMT5, BART, Whisper) from their real config.json files (tests/data/hf/,
// provenance in SOURCES.md) against published parameter counts, and their FLOPs and KV caches
// derived by hand from modeling_t5.py, modeling_bart.py and modeling_whisper.py.
#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/kv_cache.h"
#include "estimate/memory.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/run_tally.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::Hf;
using testing::ResolvedGraph;
using testing::SummaryOf;

// The fixture with every `from` replaced by `to`.
ModelSpec Edited(const std::string& file, const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = ReadFileText(Hf(file));
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  }
  return LoadModelText(file, text);
}

Settings Seqs(uint64_t source, uint64_t target) {
  Settings s;
  s.seq = source;
  s.target_seq = target;
  return s;
}

uint64_t Total(const ModelSpec& spec) { return CountParams(ResolvedGraph(spec, Seqs(8, 4))).total; }

TEST_CASE("encoder-decoders: parameters against the published counts") {
  // t5-small (T5ForConditionalGeneration, head tied to the shared embedding): keras-hub's t5_small
  // preset, "params": 60506624 (index id 21814615183), and a DeepSpeed zero_to_fp32 log of a
  // t5-small checkpoint, total_numel=60506624 (45291630074). By hand (modeling_t5.py): shared
  // 32128·512 = 16,449,536; an encoder block q, k, v, o 4·512·512 + wi, wo 2·512·2048 + 2 norms
  // of 512 = 3,146,752; a decoder block adds cross-attention 4·512·512 and a norm: 4,195,840;
  // a relative bias 32·8 = 256 and a final norm 512 per stack:
  // 16,449,536 + 6·3,146,752 + 6·4,195,840 + 2·(256 + 512) = 60,506,624.
  const ModelSpec t5 = LoadModelFile(Hf("t5-small.json"));
  CHECK(Total(t5) == 60'506'624);
  CHECK(t5.transformer.encoder_layers == 6);
  CHECK(t5.transformer.n_layers == 12);
  // mt5-small (untied head, gated-GELU, 6 heads of d_kv 64 = 384 wide on d_model 512): the full
  // model of a vocabulary-trimming study, "full": 300176768 with "embedding": 256114688 for
  // vocab_size 250112 (index ids 3786641187, 3920077423). By hand: 2·250112·512 = 256,114,688
  // for the shared table and lm_head; an encoder block 4·512·384 + 3·512·1024 + 2·512 =
  // 2,360,320, a decoder block 2·786,432 + 1,572,864 + 3·512 = 3,147,264; per stack 6·32 + 512:
  // 256,114,688 + 8·2,360,320 + 8·3,147,264 + 2·704 = 300,176,768.
  CHECK(Total(LoadModelFile(Hf("mt5-small.json"))) == 300'176'768);
  // T5 v1.1 small and FLAN-T5-small are mt5-small's layout with T5's 32128-token vocabulary:
  // 300,176,768 - 2·(250112 - 32128)·512 = 76,961,152, as printed for FLAN-T5-Small ("All model
  // parameters: 76961152", index id 33397144715; "num_parameters": 76961152, 55595612657) and
  // T5 v1.1 small (a training-time table, `76961152`, index id 46124504).
  CHECK(Total(Edited("mt5-small.json", {{"\"vocab_size\": 250112", "\"vocab_size\": 32128"}})) == 76'961'152);
  // UMT5 keeps a relative bias in every self-attention (modeling_umt5.py, UMT5LayerSelfAttention:
  // has_relative_attention_bias=True): 10 more tables of 32·8 = 60,506,624 + 2,560 (by hand).
  CHECK(Total(Edited("t5-small.json", {{"\"t5\"", "\"umt5\""},
                                       {"T5ForConditionalGeneration", "UMT5ForConditionalGeneration"}})) == 60'509'184);
  // num_decoder_layers 8 beside num_layers 6: two decoder blocks more, 60,506,624 + 2·4,195,840
  // = 68,898,304 (by hand).
  CHECK(Total(Edited("t5-small.json", {{"\"num_layers\": 6,", "\"num_decoder_layers\": 8, \"num_layers\": 6,"}})) ==
        68'898'304);
}

TEST_CASE("encoder-decoders: BART") {
  // bart-base as BartModel (its config's architectures): facebook/bart-base 139420416 in a
  // transformers model-size docstring (index id 2228351197). By hand (modeling_bart.py): shared
  // 50265·768 = 38,603,520; two position tables of (1024 + 2)·768 = 787,968; two embedding
  // LayerNorms 2·768; an encoder layer q, k, v, o 4·(768² + 768) + fc1 768·3072 + 3072 + fc2
  // 3072·768 + 768 + 2 LayerNorms 2·1,536 = 7,087,872; a decoder layer adds cross-attention
  // 2,362,368 and a LayerNorm 1,536: 9,451,776.
  // 38,603,520 + 2·787,968 + 2·1,536 + 6·7,087,872 + 6·9,451,776 = 139,420,416.
  const ModelSpec bare = LoadModelFile(Hf("bart-base.json"));
  CHECK(Total(bare) == 139'420'416);
  // BartForConditionalGeneration: lm_head tied to the shared embedding, final_logits_bias a buffer,
  // so the same parameters; the head adds 2·t·768·50265 forward FLOPs (t = 4 target tokens).
  const ModelSpec lm = Edited("bart-base.json", {{"\"BartModel\"", "\"BartForConditionalGeneration\""}});
  CHECK(Total(lm) == 139'420'416);
  const Settings s = Seqs(8, 4);
  CHECK(SummaryOf(lm, s)->flops.forward - SummaryOf(bare, s)->flops.forward == 2ULL * 4 * 768 * 50265);
  // bart-large's shapes in the same file (d_model 1024, 16 heads, ffn 4096, 12 + 12 layers):
  // facebook/bart-large 406291456 in the same docstring (index id 2228351197).
  CHECK(Total(Edited("bart-base.json", {{"\"d_model\": 768", "\"d_model\": 1024"},
                                        {"\"decoder_attention_heads\": 12", "\"decoder_attention_heads\": 16"},
                                        {"\"decoder_ffn_dim\": 3072", "\"decoder_ffn_dim\": 4096"},
                                        {"\"decoder_layers\": 6", "\"decoder_layers\": 12"},
                                        {"\"encoder_attention_heads\": 12", "\"encoder_attention_heads\": 16"},
                                        {"\"encoder_ffn_dim\": 3072", "\"encoder_ffn_dim\": 4096"},
                                        {"\"encoder_layers\": 6", "\"encoder_layers\": 12"}})) == 406'291'456);
  // The decoder's 6 self-attention caches, 2·768 elements a token each at bf16: 18,432 bytes.
  CHECK(KvBytesPerToken(testing::MemoryOf(bare, s), DType::kBf16) == 18'432);
  // The decoder's learned positions bound the target too.
  CHECK_THROWS_WITH_AS(ResolvedGraph(bare, Seqs(8, 1025)),
                       "tally: error: --target-seq: 1025 is longer than the 1024 learned positions of 'bart-base'",
                       InputError);
  CHECK_THROWS_WITH_AS(
      Edited("bart-base.json", {{"\"decoder_attention_heads\": 12", "\"decoder_attention_heads\": 16"}}),
      "bart-base.json:14:30: error: 'decoder_attention_heads' differs from 'encoder_attention_heads'; "
      "tally models stacks of one width and head count",
      InputError);
}

TEST_CASE("encoder-decoders: Whisper") {
  // whisper-large-v3 (WhisperForConditionalGeneration), by hand from modeling_whisper.py and the
  // module printout of the same source (index id 9937374558): conv1 128·1280·3 + 1280 = 492,800;
  // conv2 1280·1280·3 + 1280 = 4,916,480; sinusoidal positions 1500·1280 = 1,920,000 (a frozen
  // parameter); an encoder layer q, v, o 3·(1280² + 1280) + k 1280² + fc1 1280·5120 + 5120 + fc2
  // 5120·1280 + 1280 + 2 LayerNorms 2·2560 = 19,676,160; a decoder layer adds cross-attention
  // 6,557,440 and a LayerNorm 2560: 26,236,160; the decoder's tokens 51866·1280 = 66,388,480 and
  // positions 448·1280 = 573,440; a final LayerNorm per stack 2560; proj_out tied:
  // 492,800 + 4,916,480 + 1,920,000 + 32·19,676,160 + 32·26,236,160 + 66,388,480 + 573,440 + 2·2,560
  // = 1,543,490,560.
  const ModelSpec whisper = LoadModelFile(Hf("whisper-large-v3.json"));
  Settings s;
  const LayerGraph g = ResolvedGraph(whisper, s);
  CHECK(CountParams(g).total == 1'543'490'560);
  CHECK(CountParams(g).trainable == 1'543'490'560 - 1'920'000);
  // The encoder reads 3000 mel frames (1500 positions); the target defaults to the decoder's 448.
  CHECK(g.seq == 1500);
  CHECK(g.target_seq == 448);
  // The stem's forward FLOPs: 2·3000·1280·(128·3) + 2·1500·1280·(1280·3).
  CHECK(SummaryOf(whisper, s)->flops.forward_by_component.at(Component::kConv2d) ==
        2ULL * 3000 * 1280 * 384 + 2ULL * 1500 * 1280 * 3840);
  // Inference: 32 decoder layers of 2·1280 K and V elements at bf16 (the config's fp16 weights, the
  // default activation dtype): 448 target tokens and 1500 source tokens.
  s.kv_dtype = DType::kBf16;
  const InferMemory m = InferenceMemory(whisper, s, testing::MemoryOf(whisper, s), 1);
  CHECK(m.kv_cache == 32ULL * 2560 * 448 * 2);
  CHECK(m.cross_kv_cache == 32ULL * 2560 * 1500 * 2);
  s.seq = 1000;
  CHECK_THROWS_WITH_AS(ResolvedGraph(whisper, s),
                       "tally: error: --seq: 'whisper-large-v3' reads exactly 3000 mel frames, 1500 positions after "
                       "its convolutions; --seq 1000 is not that",
                       InputError);
}

TEST_CASE("encoder-decoders: forward FLOPs over a source and a target") {
  const ModelSpec t5 = LoadModelFile(Hf("t5-small.json"));
  // Source 512, target 128, by hand: an encoder block's linears 2·512·(4·512·512 + 2·512·2048) =
  // 3,221,225,472 and QK^T + AV 2·2·512·512·64·8 = 536,870,912. A decoder block: self q, k, v, o
  // 2·128·4·512·512 = 268,435,456; cross q and o 2·128·2·512·512 = 134,217,728; cross k and v
  // over the source 2·512·2·512·512 = 536,870,912; wi, wo 2·128·2·512·2048 = 536,870,912; self
  // QK^T + AV 2·2·128·128·512 = 33,554,432; cross 2·2·128·512·512 = 134,217,728. The head
  // 2·128·512·32128 = 4,211,081,216.
  const uint64_t encoder = 3'221'225'472ULL + 536'870'912ULL;
  const uint64_t decoder =
      268'435'456ULL + 134'217'728ULL + 536'870'912ULL + 536'870'912ULL + 33'554'432ULL + 134'217'728ULL;
  const uint64_t forward = 6 * encoder + 6 * decoder + 4'211'081'216ULL;
  CHECK(forward == 36'624'662'528ULL);
  Settings s = Seqs(512, 128);
  CHECK(SummaryOf(t5, s)->flops.forward == forward);
  // --causal halves the decoder's self-attention only (6·33,554,432 / 2): the encoder and the
  // cross-attention see every source token.
  s.causal = true;
  CHECK(SummaryOf(t5, s)->flops.forward == forward - 3 * 33'554'432ULL);
  // The target defaults to the source's length.
  Settings same;
  same.seq = 64;
  Settings explicit_target = Seqs(64, 64);
  CHECK(SummaryOf(t5, same)->flops.forward == SummaryOf(t5, explicit_target)->flops.forward);
}

TEST_CASE("encoder-decoders: the KV cache and the cross-attention KV cache") {
  const ModelSpec t5 = LoadModelFile(Hf("t5-small.json"));
  Settings s = Seqs(512, 128);
  const MemoryModel model = testing::MemoryOf(t5, s);
  // Self-attention K and V of the 6 decoder blocks, 2·8·64 = 1,024 elements a token at bf16:
  // 6·1,024·2 = 12,288 bytes per generated token; the encoder keeps none.
  CHECK(KvBytesPerToken(model, DType::kBf16) == 12'288);
  const InferMemory m = InferenceMemory(t5, s, model, 1);
  // At the 128-token target: 12,288·128 = 1,572,864 bytes; the cross-attention caches K and V of
  // the 512 source tokens in each decoder block: 12,288·512 = 6,291,456 bytes.
  CHECK(m.kv_cache == 1'572'864);
  CHECK(m.cross_kv_cache == 6'291'456);
  CHECK(m.total == m.weights + m.kv_cache + m.cross_kv_cache + m.activations + m.overhead);
}

TEST_CASE("encoder-decoders: the CLI") {
  const auto cross = testing::RunTally({"memory", Hf("t5-small.json"), "--seq", "512", "--target-seq", "128", "--mode",
                                        "infer", "--get", "memory.infer.cross_kv_cache"});
  CHECK(cross.out == "6291456\n");
  CHECK(testing::RunTally({"estimate", Hf("t5-small.json"), "--seq", "128", "--target-seq", "32", "--tp", "2"}).code ==
        0);
  CHECK(testing::RunTally({"estimate", Hf("mt5-small.json"), "--seq", "256", "--batch", "2", "--attention", "eager"})
            .code == 0);
  CHECK(testing::RunTally({"estimate", Hf("bart-base.json"), "--seq", "256", "--target-seq", "64", "--tp", "2"}).code ==
        0);
  const auto decoder = testing::RunTally({"flops", "gpt2-small", "--target-seq", "16"});
  CHECK(decoder.code == 2);
  CHECK(decoder.err ==
        "tally: error: --target-seq: 'gpt2-small' has no decoder stack over a separate target (it is not an "
        "encoder-decoder); --seq sets its tokens\n");
  const auto infer =
      testing::RunTally({"time", Hf("t5-small.json"), "--hardware", "h100-sxm", "--mode", "infer", "--seq", "64"});
  CHECK(infer.code == 0);  // tests/unit/encdec_time_test.cc derives its decode step
  const auto pp = testing::RunTally({"memory", Hf("t5-small.json"), "--seq", "64", "--pp", "2", "--gpus", "2"});
  CHECK(pp.code == 2);
  CHECK(pp.err.find("--pp: pipeline stages of an encoder-decoder") != std::string::npos);
}

TEST_CASE("encoder-decoders: what tally does not read is an error at its line") {
  CHECK_THROWS_WITH_AS(Edited("t5-small.json", {{"T5ForConditionalGeneration", "T5EncoderModel"}}),
                       "t5-small.json:2:20: error: unsupported architecture 'T5EncoderModel'; tally reads "
                       "T5ForConditionalGeneration",
                       InputError);
  CHECK_THROWS_WITH_AS(Edited("mt5-small.json", {{"gated-gelu", "gated-swish"}}),
                       "mt5-small.json:11:24: error: unsupported feed_forward_proj 'gated-swish'; tally reads relu, "
                       "gelu, gated-gelu and gated-silu",
                       InputError);
}

}  // namespace
}  // namespace tally
