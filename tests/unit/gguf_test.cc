// GGUF headers: ggml type sizes, a tiny quantized Llama and GPT-2 small in sparse files, split
// files, and hostile headers.
#include "config/gguf.h"

#include <doctest/doctest.h>

#include "config/load_config.h"
#include "estimate/params.h"
#include "graph/build_graph.h"
#include "unit/test_util.h"
#include "weights_test_util.h"

namespace tally {
namespace {

namespace fs = std::filesystem;
using testing::Gguf;
using testing::Le;
using testing::Message;
using testing::ResolvedGraph;
using testing::TempDir;
using testing::WriteFile;

// A two-block Llama, d_model 256, 4 heads (2 KV) of 64, d_ff 512, vocabulary 100, quantized as
// llama.cpp's Q4_K_M mixes types (q4_K, q6_K, q8_0 and f32 norms).
// The metadata's values can be changed to contradict the tensors, which stay those of the two blocks.
struct TinyMeta {
  uint32_t blocks = 2, width = 256, ffn = 512, heads = 4, kv_heads = 2;
};
Gguf TinyLlama(const TinyMeta& m = {}) {
  Gguf g;
  g.Text("general.architecture", "llama").Text("general.name", "tiny").U32("llama.block_count", m.blocks);
  g.U32("llama.embedding_length", m.width).U32("llama.feed_forward_length", m.ffn);
  g.U32("llama.attention.head_count", m.heads).U32("llama.attention.head_count_kv", m.kv_heads);
  g.U32("llama.context_length", 256).Tokens(100);
  g.Tensor("token_embd.weight", {256, 100}, 12, 14400).Tensor("output_norm.weight", {256}, 0, 1024);
  g.Tensor("output.weight", {256, 100}, 14, 21000);
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    g.Tensor(b + "attn_norm.weight", {256}, 0, 1024).Tensor(b + "attn_q.weight", {256, 256}, 12, 36864);
    g.Tensor(b + "attn_k.weight", {256, 128}, 12, 18432).Tensor(b + "attn_v.weight", {256, 128}, 8, 34816);
    g.Tensor(b + "attn_output.weight", {256, 256}, 12, 36864).Tensor(b + "ffn_norm.weight", {256}, 0, 1024);
    g.Tensor(b + "ffn_gate.weight", {256, 512}, 12, 73728).Tensor(b + "ffn_up.weight", {256, 512}, 12, 73728);
    g.Tensor(b + "ffn_down.weight", {512, 256}, 14, 107520);
  }
  return g;
}

TEST_CASE("gguf: bytes per block of every ggml type match the published bits per weight") {
  // ggml-common.h's comments and llama.cpp's quantize table: bits per weight = 8 x bytes / block.
  const std::vector<std::pair<uint32_t, double>> bpw = {
      {0, 32},      {1, 16},      {30, 16},     {2, 4.5},     {3, 5},       {6, 5.5},     {7, 6},
      {8, 8.5},     {10, 2.625},  {11, 3.4375}, {12, 4.5},    {13, 5.5},    {14, 6.5625}, {16, 2.0625},
      {17, 2.3125}, {22, 2.5625}, {18, 3.0625}, {21, 3.4375}, {19, 1.5625}, {29, 1.75},   {20, 4.5},
      {23, 4.25},   {34, 1.6875}, {35, 2.0625}, {39, 4.25},   {15, 9.125}};
  for (const auto& entry : bpw) {
    const auto id = entry.first;  // not a structured binding: clang 14 cannot CAPTURE one
    const auto bits = entry.second;
    CAPTURE(id);
    const GgmlType* t = FindGgmlType(id);
    REQUIRE(t != nullptr);
    CHECK(8.0 * static_cast<double>(t->block_bytes) / static_cast<double>(t->block) == bits);
  }
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u}) CHECK(FindGgmlType(removed) == nullptr);
}

TEST_CASE("gguf: a tiny quantized Llama gives exact counts, bytes by type, and a ModelSpec") {
  TempDir tmp;
  uint64_t size = 0;
  const std::string header = TinyLlama().Bytes(&size);
  WriteFile(tmp.path() / "tiny.gguf", header, size);
  const ModelSpec spec = ResolveModel((tmp.path() / "tiny.gguf").string());
  REQUIRE(spec.checkpoint.has_value());
  const CheckpointInfo& c = *spec.checkpoint;
  CHECK(c.tensors.size() == 21);
  // Per block: norms 2 x 256, q 256², k and v 256 x 128, o 256², three MLP 256 x 512 = 590,336;
  // two blocks, an embedding and a head of 25,600 and a norm of 256.
  CHECK(c.elements == 1'232'128);
  // Bytes from ggml-common.h's blocks: q4_K 144 per 256, q6_K 210 per 256, q8_0 34 per 32, f32 4.
  CHECK(c.bytes_by_dtype.at("f32") == 5'120);     // 5 norms of 256
  CHECK(c.bytes_by_dtype.at("q4_k") == 493'632);  // 2 x (256 + 128 + 256 + 512 + 512) blocks x 144 + 100 x 144
  CHECK(c.bytes_by_dtype.at("q8_0") == 69'632);   // 2 x 1,024 blocks x 34
  CHECK(c.bytes_by_dtype.at("q6_k") == 236'040);  // 2 x 512 x 210 + 100 x 210
  CHECK(c.bytes == 804'424);
  const TransformerSpec& t = spec.transformer;
  CHECK(spec.name == "tiny");
  CHECK(t.n_layers == 2);
  CHECK(t.vocab_size == 100);
  CHECK(t.head_dim == 64);
  CHECK(t.n_kv_heads == 2);
  CHECK_FALSE(t.tied_embeddings);
  CHECK(t.mlp == MlpKind::kSwiglu);
  CHECK_FALSE(t.qkv_bias);
  // The graph instantiates exactly what the file stores.
  CHECK(CountParams(ResolvedGraph(spec)).total == 1'232'128);
}

TEST_CASE("gguf: GPT-2 small in F32 gives the published count, its vocabulary from the embedding") {
  // llama.cpp's gpt2 layout: fused attn_qkv, biases everywhere, learned positions, no output.weight
  // (the head is tied). No tokenizer metadata: the vocabulary is token_embd's ne[1].
  Gguf g;
  g.Text("general.architecture", "gpt2").U32("gpt2.block_count", 12).U32("gpt2.embedding_length", 768);
  g.U32("gpt2.feed_forward_length", 3072).U32("gpt2.attention.head_count", 12).U32("gpt2.context_length", 1024);
  g.Tensor("token_embd.weight", {768, 50257}, 0, 4 * 768 * 50257)
      .Tensor("position_embd.weight", {768, 1024}, 0, 4 * 768 * 1024);
  g.Tensor("output_norm.weight", {768}, 0, 4 * 768).Tensor("output_norm.bias", {768}, 0, 4 * 768);
  for (int i = 0; i < 12; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const char* norm : {"attn_norm", "ffn_norm"}) {
      g.Tensor(b + norm + ".weight", {768}, 0, 4 * 768).Tensor(b + norm + ".bias", {768}, 0, 4 * 768);
    }
    g.Tensor(b + "attn_qkv.weight", {768, 2304}, 0, 4 * 768 * 2304).Tensor(b + "attn_qkv.bias", {2304}, 0, 4 * 2304);
    g.Tensor(b + "attn_output.weight", {768, 768}, 0, 4 * 768 * 768).Tensor(b + "attn_output.bias", {768}, 0, 4 * 768);
    g.Tensor(b + "ffn_up.weight", {768, 3072}, 0, 4 * 768 * 3072).Tensor(b + "ffn_up.bias", {3072}, 0, 4 * 3072);
    g.Tensor(b + "ffn_down.weight", {3072, 768}, 0, 4 * 3072 * 768).Tensor(b + "ffn_down.bias", {768}, 0, 4 * 768);
  }
  TempDir tmp;
  uint64_t size = 0;
  const std::string header = g.Bytes(&size);
  WriteFile(tmp.path() / "gpt2.gguf", header, size);
  const ModelSpec spec = ResolveModel((tmp.path() / "gpt2.gguf").string());
  CHECK(spec.transformer.vocab_size == 50'257);
  CHECK(spec.transformer.position == PositionKind::kLearned);
  CHECK(spec.transformer.tied_embeddings);
  // 124,439,808: GPT-2 small's published parameter count (Hugging Face gpt2).
  CHECK(CountParams(ResolvedGraph(spec)).total == 124'439'808);
  CHECK(spec.checkpoint->elements == 124'439'808);
  CHECK(spec.checkpoint->bytes == 4 * 124'439'808ULL);
}

TEST_CASE("gguf: split files are read together from the first") {
  TempDir tmp;
  uint64_t size = 0;
  // The first split holds the metadata and the embedding; the second the rest of the tiny Llama.
  Gguf first = TinyLlama();
  first.U16("split.no", 0).U16("split.count", 2);
  std::string header = first.Bytes(&size);
  WriteFile(tmp.path() / "tiny-00001-of-00002.gguf", header, size);
  Gguf second;
  second.U16("split.no", 1).U16("split.count", 2).Tensor("extra.weight", {256}, 0, 1024);
  header = second.Bytes(&size);
  WriteFile(tmp.path() / "tiny-00002-of-00002.gguf", header, size);
  const ModelSpec spec = ResolveModel((tmp.path() / "tiny-00001-of-00002.gguf").string());
  CHECK(spec.checkpoint->files.size() == 2);
  CHECK(spec.checkpoint->elements == 1'232'128 + 256);
  CHECK(spec.checkpoint->bytes == 804'424 + 1'024);
  const std::string second_path = (tmp.path() / "tiny-00002-of-00002.gguf").string();
  CHECK(Message([&] { ResolveModel(second_path); }) ==
        second_path + ": error: is one of 2 split files; give the first, named <prefix>-00001-of-00002.gguf");
}

TEST_CASE("gguf: hostile headers are errors with the file and the byte") {
  auto parse = [](const std::string& bytes, uint64_t size = 0) {
    return Message([&] { ParseGguf("m.gguf", bytes, size == 0 ? bytes.size() : size); });
  };
  const std::string p = "m.gguf: error: at byte ";
  CHECK(parse("GGML" + Le(3, 4)) == p + "0: not a GGUF file (no 'GGUF' magic)");
  CHECK(parse("GGUF" + Le(1, 4)) == p + "4: GGUF version 1 is not supported (2 and 3 are)");
  CHECK(parse("GGUF" + Le(3, 4) + Le(0, 8) + Le(~0ULL, 8)) ==
        p + "16: key-value count 18446744073709551615 is more than the rest of the file (0 bytes) can hold");
  CHECK(parse("GGUF" + Le(3, 4) + Le(~0ULL, 8) + Le(0, 8)) ==
        p + "8: tensor count 18446744073709551615 is more than the rest of the file (0 bytes) can hold");
  const std::string one_kv = "GGUF" + Le(3, 4) + Le(0, 8) + Le(1, 8);
  CHECK(parse(one_kv + Le(1000, 8) + "abcde") ==
        p + "24: a key of 1000 bytes runs past the end of the file (37 bytes)");
  CHECK(parse(one_kv + Le(1, 8) + "k" + Le(9, 4) + Le(8, 4) + Le(~0ULL, 8)) ==
        p + "41: array length 18446744073709551615 is more than the rest of the file (0 bytes) can hold");
  uint64_t size = 0;
  std::string bad_type = Gguf().Tensor("w", {32}, 36, 18).Bytes(&size);
  // Header 24 bytes, then the name (8 + 1), n_dims (4), ne[0] (8): the type is at byte 45.
  CHECK(parse(bad_type, size) == p + "45: tensor 'w' has unknown ggml type 36");
  std::string bad_name = Gguf().Tensor("w\xc3", {32}, 0, 128).Bytes(&size);
  CHECK(parse(bad_name, size) == p + "24: a tensor name is not valid UTF-8");
  std::string ragged = Gguf().Tensor("w", {33}, 2, 18).Bytes(&size);
  CHECK(parse(ragged, size) == p + "45: tensor 'w': its first dimension 33 is not a multiple of Q4_0's block of 32");
  std::string cut = Gguf().Tensor("w", {32}, 0, 128).Bytes(&size);
  CHECK(parse(cut, size - 28) == p + std::to_string(size - 28) + ": the file is truncated: tensor 'w' ends at byte " +
                                     std::to_string(size) + ", the file has " + std::to_string(size - 28) + " bytes");
  CHECK(parse(Gguf().Text("general.architecture", "qwen3").Bytes(&size), size) == "(no error)");
  const GgufFile g = ParseGguf("m.gguf", Gguf().Text("general.architecture", "qwen3").Bytes(&size), size);
  CHECK(Message([&] { GgufModelSpec(g, "m.gguf"); }) ==
        p + "56: metadata 'general.architecture' is 'qwen3', which tally does not model from GGUF "
            "(it reads llama, mistral, qwen2, gemma, phi3, gpt2)");
}

TEST_CASE("gguf: a repeated tensor name is the error at its second entry, before anything later") {
  auto parse = [](const Gguf& g) {
    uint64_t size = 0;
    const std::string bytes = g.Bytes(&size);
    return Message([&] { ParseGguf("m.gguf", bytes, size); });
  };
  // After the 24-byte header, each info of a one-letter name and one dimension takes
  // 8 + 1 (name) + 4 (n_dims) + 8 (ne[0]) + 4 (type) + 8 (offset) = 33 bytes: they start at 24, 57, 90.
  const std::string p = "m.gguf: error: at byte ";
  CHECK(parse(Gguf().Tensor("w", {32}, 0, 128).Tensor("v", {32}, 0, 128).Tensor("w", {32}, 0, 128)) ==
        p + "90: tensor 'w' appears twice");
  // A later entry's unknown type (36) comes after the repeat; the repeat's own type, too.
  CHECK(parse(Gguf().Tensor("w", {32}, 0, 128).Tensor("w", {32}, 0, 128).Tensor("u", {32}, 36, 18)) ==
        p + "57: tensor 'w' appears twice");
  CHECK(parse(Gguf().Tensor("w", {32}, 0, 128).Tensor("w", {32}, 36, 18)) == p + "57: tensor 'w' appears twice");
  // An unknown type before the repeat comes first: its type field is at 57 + 8 + 1 + 4 + 8 = 78.
  CHECK(parse(Gguf().Tensor("w", {32}, 0, 128).Tensor("u", {32}, 36, 18).Tensor("w", {32}, 0, 128)) ==
        p + "78: tensor 'u' has unknown ggml type 36");
  // 20,000 names ("t0" to "t19999", infos of 8 + (1 + digits) + 4 + 8 + 4 + 8 bytes), then "t7"
  // again: the repeat's info starts after 24 + 20,000 x 33 bytes and the names' digits,
  // 10 + 90 x 2 + 900 x 3 + 9,000 x 4 + 10,000 x 5 = 88,890 of them.
  Gguf many;
  for (int i = 0; i < 20'000; ++i) many.Tensor("t" + std::to_string(i), {8}, 0, 32);
  uint64_t size = 0;
  const std::string bytes = many.Bytes(&size);
  const GgufFile g = ParseGguf("m.gguf", bytes, size);
  CHECK(g.checkpoint.tensors.size() == 20'000);
  CHECK(g.checkpoint.elements == 160'000);  // F32 [8] each
  CHECK(g.checkpoint.bytes == 640'000);
  CHECK(parse(many.Tensor("t7", {8}, 0, 32)) ==
        p + std::to_string(24 + 20'000 * 33 + 88'890) + ": tensor 't7' appears twice");
}

TEST_CASE("gguf: a big-endian file is named as such, not as an unknown version") {
  // ggml's gguf.md: v2 and v3 may be written big-endian; the uint32 version 3 then reads as 3 << 24.
  const std::string p = "m.gguf: error: at byte 4: big-endian GGUF (version ";
  const std::string be3 = "GGUF" + std::string("\0\0\0\3", 4) + Le(0, 8) + Le(0, 8);
  const std::string be2 = "GGUF" + std::string("\0\0\0\2", 4) + Le(0, 8) + Le(0, 8);
  CHECK(Message([&] { ParseGguf("m.gguf", be3, be3.size()); }) ==
        p + "3 byte-swapped) is not read; tally reads little-endian GGUF");
  CHECK(Message([&] { ParseGguf("m.gguf", be2, be2.size()); }) ==
        p + "2 byte-swapped) is not read; tally reads little-endian GGUF");
}

TEST_CASE("gguf: metadata that contradicts the tensors it describes is an error") {
  auto spec = [](const TinyMeta& m) {
    uint64_t size = 0;
    const std::string header = TinyLlama(m).Bytes(&size);
    const GgufFile g = ParseGguf("m.gguf", header, size);
    return Message([&] { GgufModelSpec(g, "m.gguf"); });
  };
  // The values' bytes, by hand: a 24-byte header, then per key 8 + its length + 4 (the type) before
  // the value. general.architecture's value at 56 (13 bytes), general.name's at 93 (12 bytes), then
  // uint32s: block_count at 134, embedding_length at 172, feed_forward_length at 213, head_count at
  // 255, head_count_kv at 300.
  const std::string p = "m.gguf: error: at byte ";
  CHECK(spec({}) == "(no error)");
  CHECK(spec({.blocks = 4'294'967'295}) ==
        p + "134: metadata 'llama.block_count' is 4294967295, but the tensors hold 2 distinct blocks, blk.0 to blk.1");
  CHECK(spec({.blocks = 1}) ==
        p + "134: metadata 'llama.block_count' is 1, but the tensors hold 2 distinct blocks, blk.0 to blk.1");
  CHECK(spec({.ffn = 4'000'000'000}) ==
        p + "213: metadata 'llama.feed_forward_length' is 4000000000, but 'blk.0.ffn_down.weight' has ne[0] 512");
  // 512 / 4 heads is 128 per head; the embedding is 256 wide.
  CHECK(spec({.width = 512}) ==
        p + "172: metadata 'llama.embedding_length' is 512, but 'token_embd.weight' has ne[0] 256");
  // 8 heads of 256 / 8 = 32 make the 2 KV heads 64 wide; attn_k is 128 (2 heads of 64).
  CHECK(spec({.heads = 8}) == p + "300: metadata 'llama.attention.head_count_kv' is 2 (with heads of 32, 64 wide), "
                                  "but 'blk.0.attn_k.weight' has ne[1] 128");
  // A layer index past block_count: blk.0 and blk.1 plus blk.7 is three blocks, not 0 to 2.
  uint64_t size = 0;
  const std::string with_gap = TinyLlama().Tensor("blk.7.attn_norm.weight", {256}, 0, 1024).Bytes(&size);
  const GgufFile gap = ParseGguf("m.gguf", with_gap, size);
  CHECK(Message([&] { GgufModelSpec(gap, "m.gguf"); }) ==
        p + "134: metadata 'llama.block_count' is 2, but the tensors hold 3 distinct blocks, blk.0 to blk.7");
}

TEST_CASE("gguf: heads that do not divide the width blame the head count") {
  uint64_t size = 0;
  const std::string header = TinyLlama({.heads = 3, .kv_heads = 1}).Bytes(&size);
  const GgufFile g = ParseGguf("m.gguf", header, size);
  CHECK(Message([&] { GgufModelSpec(g, "m.gguf"); }) ==
        "m.gguf: error: at byte 255: metadata 'llama.attention.head_count' is 3, which does not divide "
        "llama.embedding_length 256");
}

}  // namespace
}  // namespace tally
