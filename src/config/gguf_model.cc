// GGUF metadata -> ModelSpec. Keys are those llama.cpp writes (src/llama-arch.cpp LLM_KV_NAMES,
// "%s" being general.architecture); layout facts that have no key (biases, a tied head) are read
// from which tensors the file holds (llama-arch.cpp LLM_TENSOR_NAMES: "blk.%d.attn_q.bias", "output").
#include <algorithm>
#include <filesystem>
#include <set>

#include "config/gguf.h"
#include "util/checked_math.h"

namespace tally {
namespace {

// The architectures whose layout TransformerSpec expresses today, and the transformers family each
// follows. Others (qwen3's q/k norms, gemma2's extra norms and soft-capping, falcon's variants) are refused.
const std::vector<std::string> kArchitectures = {"llama", "mistral", "qwen2", "gemma", "phi3", "gpt2"};

class GgufSpecReader {
 public:
  GgufSpecReader(const GgufFile& g, const std::string& file) : g_(g), file_(file) {}

  ModelSpec Read() {
    const std::string arch = Arch();
    ModelSpec spec;
    spec.family = Family::kTransformer;
    spec.source = file_;
    spec.name = Has("general.name") ? Text("general.name") : std::filesystem::path(file_).stem().string();
    spec.description = "GGUF, general.architecture " + arch;
    TransformerSpec& t = spec.transformer;
    const std::string p = arch + ".";
    t.n_layers = Count(p + "block_count");
    t.d_model = Count(p + "embedding_length");
    t.d_ff = Count(p + "feed_forward_length");
    t.n_heads = Count(p + "attention.head_count");
    t.n_kv_heads = Has(p + "attention.head_count_kv") ? Count(p + "attention.head_count_kv") : t.n_heads;
    t.context_length = Count(p + "context_length");
    t.vocab_size = Vocab(p);
    t.tied_embeddings = !Holds("output.weight");
    // The file's attn_qkv tensor is the source model's one fused projection (GPT-2's c_attn, Phi-3's
    // qkv_proj); attn_q, attn_k and attn_v are three.
    t.qkv_fused = Holds("blk.0.attn_qkv.weight");
    // Phi-3's gate_up_proj stays one tensor, ffn_up, with no ffn_gate beside it.
    t.gate_up_fused = arch == "phi3" && !Holds("blk.0.ffn_gate.weight");
    if (arch == "gpt2") {
      // modeling_gpt2.py: learned positions, LayerNorm, GELU, biases everywhere.
      t.head_dim = HeadDim(t, p);
      CheckTensors(t, p);
      return spec;
    }
    t.position = PositionKind::kRope;
    t.norm = NormKind::kRmsNorm;
    t.mlp = arch == "gemma" ? MlpKind::kGeglu : MlpKind::kSwiglu;
    t.head_dim = Has(p + "attention.key_length") ? Count(p + "attention.key_length") : HeadDim(t, p);
    if (Has(p + "rope.dimension_count") && Count(p + "rope.dimension_count") < t.head_dim) {
      t.rotary_dim = Count(p + "rope.dimension_count");
    }
    t.qkv_bias = Holds(t.qkv_fused ? "blk.0.attn_qkv.bias" : "blk.0.attn_q.bias");
    t.out_bias = Holds("blk.0.attn_output.bias");
    t.mlp_bias = Holds("blk.0.ffn_down.bias") || Holds("blk.0.ffn_up.bias");
    if (Has(p + "attention.sliding_window")) t.sliding_window = Count(p + "attention.sliding_window");
    if (Has(p + "expert_count") && Count(p + "expert_count") > 0) {
      t.n_experts = Count(p + "expert_count");
      t.top_k = Count(p + "expert_used_count");
      if (t.top_k > t.n_experts) Fail(p + "expert_used_count", "is more than " + p + "expert_count");
    }
    if (t.n_heads % t.n_kv_heads != 0) Fail(p + "attention.head_count_kv", "does not divide the head count");
    CheckTensors(t, p);
    return spec;
  }

 private:
  [[noreturn]] void Fail(const std::string& key, const std::string& message) const {
    auto it = g_.metadata.find(key);
    const uint64_t at = it == g_.metadata.end() ? 0 : it->second.offset;
    throw InputError({file_, 0, 0}, "at byte " + std::to_string(at) + ": metadata '" + key + "' " + message);
  }

  bool Has(const std::string& key) const { return g_.metadata.count(key) > 0; }

  // Whether the file holds a tensor of this name. A scan, asked a handful of times: cheaper than
  // building a set of every name (tens of thousands in a mixture of experts).
  bool Holds(std::string_view name) const {
    const auto& tensors = g_.checkpoint.tensors;
    return std::any_of(tensors.begin(), tensors.end(), [&](const CheckpointTensor& t) { return t.name == name; });
  }

  const GgufValue& Get(const std::string& key) const {
    auto it = g_.metadata.find(key);
    if (it == g_.metadata.end()) throw InputError({file_, 0, 0}, "metadata key '" + key + "' is missing");
    return it->second;
  }

  std::string Text(const std::string& key) const {
    const auto* s = std::get_if<std::string>(&Get(key).scalar);
    if (s == nullptr) Fail(key, "must be a string");
    return *s;
  }

  // A positive integer of any integer type (a per-layer array is refused: one value per model).
  uint64_t Count(const std::string& key) const {
    const GgufValue& v = Get(key);
    uint64_t n = 0;
    if (const auto* u = std::get_if<uint64_t>(&v.scalar))
      n = *u;
    else if (const auto* i = std::get_if<int64_t>(&v.scalar); i != nullptr && *i > 0)
      n = static_cast<uint64_t>(*i);
    else if (v.array_length > 0)
      Fail(key, "is a per-layer list; tally models one value for every layer");
    else
      Fail(key, "must be a positive integer");
    if (n == 0) Fail(key, "must be a positive integer");
    return n;
  }

  std::string Arch() const {
    std::string arch = Text("general.architecture");
    if (std::find(kArchitectures.begin(), kArchitectures.end(), arch) == kArchitectures.end()) {
      std::string list;
      for (const std::string& a : kArchitectures) list.append(list.empty() ? "" : ", ").append(a);
      Fail("general.architecture", "is '" + arch + "', which tally does not model from GGUF (it reads " + list + ")");
    }
    return arch;
  }

  uint64_t HeadDim(const TransformerSpec& t, const std::string& p) const {
    if (t.d_model % t.n_heads != 0) {
      Fail(p + "attention.head_count", "is " + std::to_string(t.n_heads) + ", which does not divide " + p +
                                           "embedding_length " + std::to_string(t.d_model));
    }
    return t.d_model / t.n_heads;
  }

  // <arch>.vocab_size, else the tokenizer's token list, else the embedding's rows (ne[1]).
  uint64_t Vocab(const std::string& p) const {
    if (Has(p + "vocab_size")) return Count(p + "vocab_size");
    if (Has("tokenizer.ggml.tokens") && Get("tokenizer.ggml.tokens").array_length > 0) {
      return Get("tokenizer.ggml.tokens").array_length;
    }
    for (const CheckpointTensor& t : g_.checkpoint.tensors) {
      if (t.name == "token_embd.weight" && t.shape.size() == 2 && t.shape[1] > 0) return t.shape[1];
    }
    throw InputError({file_, 0, 0}, "no vocabulary size: neither '" + p +
                                        "vocab_size', tokenizer.ggml.tokens "
                                        "nor a token_embd.weight tensor");
  }

  // The metadata must agree with the tensors it describes (llama-model.cpp creates each tensor with
  // these shapes, ne[0] first): a hostile block_count or feed_forward_length would otherwise be believed.
  // A file with no tensors (vocabulary only) has nothing to compare.
  void CheckTensors(const TransformerSpec& t, const std::string& p) const {
    if (g_.checkpoint.tensors.empty()) return;
    CheckBlocks(t, p);
    const std::string kv_key = Has(p + "attention.head_count_kv") ? "attention.head_count_kv" : "attention.head_count";
    for (const CheckpointTensor& c : g_.checkpoint.tensors) {
      const std::string_view role = Role(c.name);
      if (c.name == "token_embd.weight") {
        Agree(p + "embedding_length", t.d_model, c, 0, "");  // {n_embd, n_vocab}
      } else if (role == "ffn_down.weight" || role == "ffn_down_exps.weight") {
        Agree(p + "feed_forward_length", t.d_ff, c, 0, "");  // {n_ff, n_embd(, n_expert)}
      } else if (role == "attn_q.weight") {                  // {n_embd, n_head x head_dim}
        const u128 wide = static_cast<u128>(t.n_heads) * t.head_dim;
        Agree(p + "attention.head_count", wide, c, 1, HeadsNote(wide, t));
      } else if (role == "attn_k.weight") {  // {n_embd, n_head_kv x head_dim}
        const u128 wide = static_cast<u128>(t.n_kv_heads) * t.head_dim;
        Agree(p + kv_key, wide, c, 1, HeadsNote(wide, t));
      }
    }
  }

  // block_count must be the number of distinct blk.N indices, 0 to N - 1.
  void CheckBlocks(const TransformerSpec& t, const std::string& p) const {
    std::set<uint64_t> blocks;
    for (const CheckpointTensor& c : g_.checkpoint.tensors) {
      if (uint64_t n = 0; BlockIndex(c.name, &n)) blocks.insert(n);
    }
    if (blocks.empty())
      Fail(p + "block_count", "is " + std::to_string(t.n_layers) + ", but no tensor is named blk.N.*");
    if (t.n_layers != blocks.size() || *blocks.rbegin() + 1 != blocks.size()) {
      const std::string first = "blk." + std::to_string(*blocks.begin());
      const std::string held = blocks.size() == 1 ? "1 distinct block, " + first
                                                  : std::to_string(blocks.size()) + " distinct blocks, " + first +
                                                        " to blk." + std::to_string(*blocks.rbegin());
      Fail(p + "block_count", "is " + std::to_string(t.n_layers) + ", but the tensors hold " + held);
    }
  }

  // "blk.12.attn_q.weight" -> 12; false for other names (or an index of over 18 digits).
  static bool BlockIndex(const std::string& name, uint64_t* n) {
    if (name.rfind("blk.", 0) != 0) return false;
    size_t i = 4;
    *n = 0;
    for (; i < name.size() && i < 4 + 18 && name[i] >= '0' && name[i] <= '9'; ++i)
      *n = *n * 10 + static_cast<uint64_t>(name[i] - '0');
    return i > 4 && i < name.size() && name[i] == '.';
  }

  // "blk.12.attn_q.weight" -> "attn_q.weight"; "" for names outside a block.
  static std::string_view Role(const std::string& name) {
    uint64_t n = 0;
    return BlockIndex(name, &n) ? std::string_view(name).substr(name.find('.', 4) + 1) : std::string_view();
  }

  // " (with heads of 64, 256 wide)": what a head count implies for an attention tensor.
  static std::string HeadsNote(u128 wide, const TransformerSpec& t) {
    return " (with heads of " + std::to_string(t.head_dim) + ", " +
           (wide > UINT64_MAX ? std::string("over 2^64") : std::to_string(static_cast<uint64_t>(wide))) + " wide)";
  }

  // The tensor's ne[dim] must be `want`, which `key` implies; names the key, its value and the shape.
  void Agree(const std::string& key, u128 want, const CheckpointTensor& c, size_t dim, const std::string& note) const {
    if (c.shape.size() <= dim || c.shape[dim] == want) return;
    Fail(key, "is " + std::to_string(Count(key)) + note + ", but '" + c.name + "' has ne[" + std::to_string(dim) +
                  "] " + std::to_string(c.shape[dim]));
  }

  const GgufFile& g_;
  std::string file_;
};

}  // namespace

ModelSpec GgufModelSpec(const GgufFile& gguf, const std::string& file) { return GgufSpecReader(gguf, file).Read(); }

namespace {

uint64_t SplitKey(const GgufFile& g, const std::string& key) {
  auto it = g.metadata.find(key);
  const uint64_t* v = it == g.metadata.end() ? nullptr : std::get_if<uint64_t>(&it->second.scalar);
  return v == nullptr ? 0 : *v;
}

// "-00002-of-00003.gguf": five digits at least.
std::string SplitTail(uint64_t i, uint64_t count) {
  auto pad = [](uint64_t n) {
    std::string d = std::to_string(n);
    return std::string(d.size() < 5 ? 5 - d.size() : 0, '0') + d;
  };
  return "-" + pad(i) + "-of-" + pad(count) + ".gguf";
}

// gguf-split's files, "<prefix>-00001-of-00003.gguf" (llama.cpp llama_split_path): the first holds
// the metadata, each holds its share of the tensors (split.no, split.count).
void AddSplits(const std::string& path, const GgufFile& first, CheckpointInfo& c) {
  const uint64_t count = SplitKey(first, "split.count");
  if (count <= 1) return;
  std::string tail = SplitTail(1, count);
  if (SplitKey(first, "split.no") != 0 || path.size() < tail.size() ||
      path.compare(path.size() - tail.size(), std::string::npos, tail) != 0) {
    throw InputError({path, 0, 0}, "is one of " + std::to_string(count) +
                                       " split files; give the first, named "
                                       "<prefix>" +
                                       tail);
  }
  const std::string prefix = path.substr(0, path.size() - tail.size());
  for (uint64_t i = 2; i <= count; ++i) {
    tail = SplitTail(i, count);
    GgufFile part = ReadGgufFile(prefix + tail);
    c.files.push_back(prefix + tail);
    c.elements = CheckedAdd(c.elements, part.checkpoint.elements, "the checkpoint's elements");
    c.bytes = CheckedAdd(c.bytes, part.checkpoint.bytes, "the checkpoint's bytes");
    for (const auto& [dtype, bytes] : part.checkpoint.bytes_by_dtype) c.bytes_by_dtype[dtype] += bytes;
    for (CheckpointTensor& t : part.checkpoint.tensors) c.tensors.push_back(std::move(t));
  }
}

}  // namespace

ModelSpec LoadGguf(const std::string& path) {
  GgufFile g = ReadGgufFile(path);
  AddSplits(path, g, g.checkpoint);
  ModelSpec spec = GgufModelSpec(g, path);
  spec.checkpoint = std::move(g.checkpoint);
  return spec;
}

}  // namespace tally
