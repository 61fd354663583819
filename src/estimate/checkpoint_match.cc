#include "estimate/checkpoint_match.h"

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "util/checked_math.h"
#include "util/error.h"
#include "util/units.h"

namespace tally {
namespace {

enum class Role { kNorm, kAttention, kMlp };
constexpr const char* kRoleNames[] = {"norm", "attention", "mlp"};

std::vector<std::string> Split(const std::string& name) {
  std::vector<std::string> out(1);
  for (char c : name) {
    if (c == '.') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

bool IsIndex(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool Has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The block a stored tensor belongs to (-1: outside the blocks) and its role there.
std::pair<int64_t, Role> Place(const std::string& name) {
  const std::vector<std::string> names = Split(name);
  for (size_t i = 1; i + 1 < names.size(); ++i) {
    const std::string& list = names[i - 1];
    if (!IsIndex(names[i]) ||
        (list != "layers" && list != "h" && list != "blk" && list != "blocks" && list != "layer")) {
      continue;
    }
    bool norm = false, attn = false;
    for (size_t j = i + 1; j < names.size(); ++j) {
      norm = norm || Has(names[j], "norm") || names[j].compare(0, 3, "ln_") == 0;
      attn = attn || Has(names[j], "attn") || Has(names[j], "attention");
    }
    return {std::stoll(names[i]), norm ? Role::kNorm : attn ? Role::kAttention : Role::kMlp};
  }
  return {-1, Role::kMlp};
}

Role RoleOf(Component c) {
  switch (c) {
    case Component::kNorm:
      return Role::kNorm;
    case Component::kAttention:
    case Component::kAttentionCore:
      return Role::kAttention;
    default:
      return Role::kMlp;
  }
}

struct Sum {
  uint64_t elements = 0, tensors = 0;
  bool operator==(const Sum&) const = default;
};
using BlockSums = std::map<int64_t, std::array<Sum, 3>>;

void Count(Sum& s, uint64_t elements) {
  s.elements = CheckedAdd(s.elements, elements, "a block's elements");
  ++s.tensors;
}

struct Loose {
  std::string name;
  std::vector<uint64_t> shape;
  uint64_t elements = 0;
  int kind = 0;  // 1 embedding, 2 head, 3 norm, 0 other: paired first with a tensor of its kind
};

int KindOf(const std::string& name) {
  if (Has(name, "norm") || Has(name, "ln_f")) return 3;
  if (Has(name, "embed") || Has(name, "wte") || Has(name, "wpe") || Has(name, "token_embd")) return 1;
  if (Has(name, "lm_head") || name.compare(0, 7, "output.") == 0) return 2;
  return 0;
}

int KindOf(Component c) {
  switch (c) {
    case Component::kEmbedding:
      return 1;
    case Component::kLmHead:
      return 2;
    case Component::kNorm:
      return 3;
    default:
      return 0;
  }
}

}  // namespace

namespace {

TensorRole InBlock(Role role) {
  return role == Role::kNorm        ? TensorRole::kBlockNorm
         : role == Role::kAttention ? TensorRole::kBlockAttention
                                    : TensorRole::kBlockMlp;
}

// A kind of KindOf outside the blocks: 1 embedding, 2 head, 3 norm, 0 none.
TensorRole Outside(int kind) {
  return kind == 1   ? TensorRole::kEmbedding
         : kind == 2 ? TensorRole::kHead
         : kind == 3 ? TensorRole::kNorm
                     : TensorRole::kNone;
}

}  // namespace

TensorRole StoredRole(const std::string& name, int64_t& block) {
  const auto [b, role] = Place(name);
  block = b;
  return b >= 0 ? InBlock(role) : Outside(KindOf(name));
}

TensorRole GraphRole(Component c, bool in_block) { return in_block ? InBlock(RoleOf(c)) : Outside(KindOf(c)); }

CheckpointMatch MatchCheckpoint(const ModelSpec& spec, const LayerGraph& graph) {
  CheckpointMatch match;
  if (!spec.checkpoint || spec.quantization) return match;
  match.compared = true;
  BlockSums stored, built;
  std::vector<Loose> stored_loose, built_loose;
  for (const CheckpointTensor& t : spec.checkpoint->tensors) {
    const auto [block, role] = Place(t.name);
    if (block < 0) {
      stored_loose.push_back({t.name, t.shape, t.elements, KindOf(t.name)});
    } else {
      Count(stored[block][static_cast<size_t>(role)], t.elements);
    }
  }
  for (const Layer& l : graph.Expanded()) {
    if (l.component == Component::kLora) continue;  // adapters are not in a base checkpoint
    for (size_t i = 0; i < l.param_tensors.size(); ++i) {
      const ParamTensor& t = l.param_tensors[i];
      uint64_t n = 1;
      for (uint64_t d : t.shape) n = CheckedMul(n, d, "a parameter tensor");
      if (l.block < 0) {
        built_loose.push_back(
            {l.param_tensors.size() == 1 ? l.path : l.path + "#" + std::to_string(i), t.shape, n, KindOf(l.component)});
      } else {
        Count(built[l.block][static_cast<size_t>(RoleOf(l.component))], n);
      }
    }
  }
  // Blocks: role by role, consecutive blocks that differ alike on one row.
  int64_t last = -1;
  if (!stored.empty()) last = stored.rbegin()->first;
  if (!built.empty()) last = std::max(last, built.rbegin()->first);
  for (size_t role = 0; role < 3; ++role) {
    int64_t first = -1;
    Sum a, b;
    auto flush = [&](int64_t end) {
      if (first < 0) return;
      const std::string span =
          end - 1 == first ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(end - 1);
      match.rows.push_back({.name = "blocks." + span + "." + kRoleNames[role],
                            .role = kRoleNames[role],
                            .stored_elements = a.elements,
                            .graph_elements = b.elements,
                            .stored_tensors = a.tensors,
                            .graph_tensors = b.tensors});
      first = -1;
    };
    for (int64_t block = 0; block <= last; ++block) {
      const Sum x = stored.count(block) ? stored[block][role] : Sum{};
      const Sum y = built.count(block) ? built[block][role] : Sum{};
      if (first >= 0 && (x != a || y != b)) flush(block);
      if (x.elements != y.elements && first < 0) {
        first = block;
        a = x;
        b = y;
      }
    }
    flush(last + 1);
  }
  // Outside the blocks: one to one by element count, a tensor of the same kind first.
  std::vector<bool> used(stored_loose.size(), false), paired(built_loose.size(), false);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t j = 0; j < built_loose.size(); ++j) {
      const Loose& g = built_loose[j];
      for (size_t i = 0; i < stored_loose.size() && !paired[j]; ++i) {
        if (used[i] || stored_loose[i].elements != g.elements || (pass == 0 && stored_loose[i].kind != g.kind))
          continue;
        used[i] = paired[j] = true;
      }
    }
  }
  std::vector<Loose> missing;
  for (size_t j = 0; j < built_loose.size(); ++j) {
    if (!paired[j]) missing.push_back(built_loose[j]);
  }
  for (size_t i = 0; i < stored_loose.size(); ++i) {
    if (used[i]) continue;
    const Loose& t = stored_loose[i];
    match.rows.push_back({.kind = UnmatchedRow::Kind::kStored,
                          .name = t.name,
                          .stored_elements = t.elements,
                          .stored_tensors = 1,
                          .shape = t.shape});
  }
  for (const Loose& g : missing) {
    match.rows.push_back({.kind = UnmatchedRow::Kind::kGraph,
                          .name = g.name,
                          .graph_elements = g.elements,
                          .graph_tensors = 1,
                          .shape = g.shape});
  }
  return match;
}

std::string DescribeRow(const UnmatchedRow& row) {
  if (row.kind == UnmatchedRow::Kind::kBlockRole) {
    return row.name + ": " + FormatGrouped(row.stored_elements) + " stored, " + FormatGrouped(row.graph_elements) +
           " in the graph (" + std::to_string(row.stored_tensors) + "/" + std::to_string(row.graph_tensors) +
           " tensors)";
  }
  std::string shape;
  for (uint64_t d : row.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  const bool stored = row.kind == UnmatchedRow::Kind::kStored;
  return row.name + " [" + shape + "]: only in the " + (stored ? "checkpoint" : "graph") + " (" +
         FormatGrouped(stored ? row.stored_elements : row.graph_elements) + " elements)";
}

void ConfirmGuessedLayout(ModelSpec& spec, const LayerGraph& graph) {
  if (spec.guessed_layout.empty()) return;
  const std::string warning = std::exchange(spec.guessed_layout, "");
  const CheckpointMatch match = MatchCheckpoint(spec, graph);
  if (!match.compared) return;  // no checkpoint, or a packed one: the warning's "verify" stands
  if (match.rows.empty()) {
    constexpr std::string_view kVerify = "verify against its checkpoint";
    for (std::string& note : spec.notes) {
      if (note != spec.source + ": " + warning) continue;
      note.replace(note.rfind(kVerify), kVerify.size(),
                   "matches the checkpoint exactly (" + std::to_string(spec.checkpoint->tensors.size()) + " tensors, " +
                       FormatGrouped(spec.checkpoint->elements) + " elements)");
    }
    return;
  }
  constexpr size_t kShown = 8;
  std::string rows;
  for (size_t i = 0; i < match.rows.size() && i < kShown; ++i) rows += "; " + DescribeRow(match.rows[i]);
  if (match.rows.size() > kShown) rows += "; and " + std::to_string(match.rows.size() - kShown) + " more";
  const std::string what = warning.substr(0, warning.rfind("; verify"));  // the warning without its advice
  throw InputError({spec.source, 0, 0}, what + ", but its checkpoint differs from that layout in " +
                                            std::to_string(match.rows.size()) +
                                            (match.rows.size() == 1 ? " place" : " places") + rows +
                                            "; write a tally YAML config for it (README, \"Model configs\")");
}

}  // namespace tally
