#include "estimate/checkpoint_report.h"

#include <array>
#include <map>
#include <tuple>
#include <utility>

#include "util/checked_math.h"
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

int StoredRole(const std::string& name, int64_t& block) {
  const auto [b, role] = Place(name);
  block = b;
  if (b >= 0) return static_cast<int>(role);
  const int kind = KindOf(name);
  return kind == 0 ? -1 : 10 + kind;
}

int GraphRole(Component c, bool in_block) {
  if (in_block) return static_cast<int>(RoleOf(c));
  const int kind = KindOf(c);
  return kind == 0 ? -1 : 10 + kind;
}

void AddCheckpoint(const ModelSpec& spec, Report& r) {
  if (spec.quantization) r.Set("model.quantization", "quantization_config", spec.quantization->name, Unit::kText);
  if (!spec.checkpoint) return;
  const CheckpointInfo& c = *spec.checkpoint;
  const std::string files = std::to_string(c.files.size()) + (c.files.size() == 1 ? " file" : " files");
  // params.total counts what the modeling code instantiates, a tied head once; the checkpoint
  // counts what is stored, so a duplicated tied head, buffers and extra modules make it larger.
  std::string explain = "Σ elements over the " + FormatGrouped(c.tensors.size()) + " tensors in " + files + " = " +
                        FormatGrouped(c.elements);
  const ReportNode* total = r.Find("params.total");
  const uint64_t* graph = total == nullptr ? nullptr : std::get_if<uint64_t>(&total->value);
  if (graph != nullptr && *graph != c.elements) {
    const bool more = c.elements > *graph;
    explain += "; " + FormatGrouped(more ? c.elements - *graph : *graph - c.elements) +
               (more ? " more than params.total (tied copies, buffers or modules the graph does not build)"
                     : " fewer than params.total (parameters the checkpoint does not store)");
  }
  r.Set("params.checkpoint", "stored in the checkpoint (every tensor)", c.elements, Unit::kCount, explain);
  r.Group("checkpoint", "Checkpoint (" + c.format + " headers)");
  r.Set("checkpoint.format", "format", c.format, Unit::kText);
  r.Set("checkpoint.files", "files", static_cast<uint64_t>(c.files.size()), Unit::kNumber);
  r.Set("checkpoint.tensors", "tensors", static_cast<uint64_t>(c.tensors.size()), Unit::kNumber);
  std::string sum;
  for (const auto& [dtype, bytes] : c.bytes_by_dtype)
    sum += (sum.empty() ? "" : " + ") + dtype + " " + FormatGrouped(bytes);
  r.Set("checkpoint.bytes", "tensor data", c.bytes, Unit::kByte, sum + " = " + FormatGrouped(c.bytes));
  r.Group("checkpoint.dtypes", "by dtype");
  for (const auto& [dtype, bytes] : c.bytes_by_dtype) r.Set("checkpoint.dtypes." + dtype, dtype, bytes, Unit::kByte);
}

void AddCheckpointMatch(const ModelSpec& spec, const LayerGraph& graph, Report& r) {
  if (!spec.checkpoint) return;
  if (spec.quantization) {
    r.notes.push_back("--layers: the checkpoint's tensors are packed by " + spec.quantization->name +
                      ", so they are not compared with the graph's parameters");
    return;
  }
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
  Table table;  // added to the report only when it has rows
  auto where = [](uint64_t a, uint64_t b) { return std::string(a == 0 ? "graph" : b == 0 ? "checkpoint" : "-"); };
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
      table.rows.push_back({"blocks." + span + "." + kRoleNames[role], where(a.elements, b.elements), a.elements,
                            b.elements, std::to_string(a.tensors) + "/" + std::to_string(b.tensors), std::nullopt});
      table.explain.push_back("per block; elements summed over the block's " + std::string(kRoleNames[role]) +
                              " tensors");
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
    table.rows.push_back({t.name, std::string("checkpoint"), t.elements, uint64_t{0}, std::string("1/0"), t.shape});
    table.explain.push_back("a stored tensor outside the blocks with no graph parameter of its size");
  }
  for (const Loose& g : missing) {
    table.rows.push_back({g.name, std::string("graph"), uint64_t{0}, g.elements, std::string("0/1"), g.shape});
    table.explain.push_back("a graph parameter outside the blocks with no stored tensor of its size");
  }
  r.Set("checkpoint.unmatched", "unmatched tensors or groups (--layers lists them)",
        static_cast<uint64_t>(table.rows.size()), Unit::kNumber);
  if (table.rows.empty()) return;
  Table& out = r.AddTable("unmatched", "Checkpoint tensors the graph does not predict, graph parameters not stored",
                          {{.key = "tensor"},
                           {.key = "in", .label = "only in"},
                           {.key = "checkpoint", .label = "stored elements", .unit = Unit::kCount},
                           {.key = "graph", .label = "graph elements", .unit = Unit::kCount},
                           {.key = "tensors", .label = "tensors (stored/graph)"},
                           {.key = "shape", .unit = Unit::kShape}});
  out.rows = std::move(table.rows);
  out.explain = std::move(table.explain);
}

}  // namespace tally
