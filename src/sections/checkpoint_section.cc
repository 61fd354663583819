#include "sections/explain_text.h"
#include "sections/sections.h"

namespace tally {
namespace {

using E = const ModelEstimate&;

const CheckpointInfo& C(E e) { return *e.spec->checkpoint; }
bool Read(E e) { return e.spec->checkpoint.has_value(); }

// params.total counts what the modeling code instantiates, a tied head once; the checkpoint
// counts what is stored, so a duplicated tied head, buffers and extra modules make it larger.
std::string StoredExplain(E e) {
  const CheckpointInfo& c = C(e);
  const uint64_t graph = e.summary->params.total;
  const std::string files = std::to_string(c.files.size()) + (c.files.size() == 1 ? " file" : " files");
  std::string explain =
      "Σ elements over the " + Grouped(c.tensors.size()) + " tensors in " + files + " = " + Grouped(c.elements);
  if (graph != c.elements) {
    const bool more = c.elements > graph;
    explain += "; " + Grouped(more ? c.elements - graph : graph - c.elements) +
               (more ? " more than params.total (tied copies, buffers or modules the graph does not build)"
                     : " fewer than params.total (parameters the checkpoint does not store)");
  }
  return explain;
}

std::vector<KeyEntry> Dtypes(E e) {
  std::vector<KeyEntry> out;
  if (!Read(e)) return out;
  for (const auto& [dtype, bytes] : C(e).bytes_by_dtype) out.push_back({dtype, dtype, bytes});
  return out;
}

std::string RowExplain(const UnmatchedRow& row) {
  switch (row.kind) {
    case UnmatchedRow::Kind::kBlockRole:
      return "per block; elements summed over the block's " + std::string(row.role) + " tensors";
    case UnmatchedRow::Kind::kStored:
      return "a stored tensor outside the blocks with no graph parameter of its size";
    case UnmatchedRow::Kind::kGraph:
      return "a graph parameter outside the blocks with no stored tensor of its size";
  }
  return "";
}

}  // namespace

const KeyTable<ModelEstimate>& CheckpointKeys() {
  // No model or params group title: these keys join the groups ModelKeys and ParamsKeys opened.
  static const KeyTable<ModelEstimate> kKeys = {
      {.key = "model.quantization",
       .label = "quantization_config",
       .value =
           [](E e) {
             return When(e.spec->quantization.has_value(), e.spec->quantization ? e.spec->quantization->name : "");
           }},
      {.key = "params.checkpoint",
       .label = "stored in the checkpoint (every tensor)",
       .unit = Unit::kCount,
       .value = [](E e) { return When(Read(e), Read(e) ? C(e).elements : 0); },
       .explain = StoredExplain},
      {.key = "checkpoint",
       .label_of = [](E e) { return "Checkpoint (" + (Read(e) ? C(e).format : "") + " headers)"; }},
      {.key = "checkpoint.format",
       .label = "format",
       .value = [](E e) { return When(Read(e), Read(e) ? C(e).format : ""); }},
      {.key = "checkpoint.files",
       .label = "files",
       .unit = Unit::kNumber,
       .value = [](E e) { return When(Read(e), static_cast<uint64_t>(Read(e) ? C(e).files.size() : 0)); }},
      {.key = "checkpoint.tensors",
       .label = "tensors",
       .unit = Unit::kNumber,
       .value = [](E e) { return When(Read(e), static_cast<uint64_t>(Read(e) ? C(e).tensors.size() : 0)); }},
      {.key = "checkpoint.bytes",
       .label = "tensor data",
       .unit = Unit::kByte,
       .value = [](E e) { return When(Read(e), Read(e) ? C(e).bytes : 0); },
       .explain =
           [](E e) {
             std::string sum;
             for (const auto& [dtype, bytes] : C(e).bytes_by_dtype)
               sum += (sum.empty() ? "" : " + ") + dtype + " " + Grouped(bytes);
             return sum + " = " + Grouped(C(e).bytes);
           }},
      {.key = "checkpoint.dtypes", .label = "by dtype"},
      {.key = "checkpoint.dtypes", .unit = Unit::kByte, .entries = Dtypes},
  };
  return kKeys;
}

void AddCheckpointMatch(const ModelSpec& spec, const CheckpointMatch& match, Report& r) {
  if (!spec.checkpoint) return;
  if (!match.compared) {
    r.notes.push_back("--layers: the checkpoint's tensors are packed by " + spec.quantization->name +
                      ", so they are not compared with the graph's parameters");
    return;
  }
  r.Set("checkpoint.unmatched", "unmatched tensors or groups (--layers lists them)",
        static_cast<uint64_t>(match.rows.size()), Unit::kNumber);
  if (match.rows.empty()) return;
  Table& out = r.AddTable("unmatched", "Checkpoint tensors the graph does not predict, graph parameters not stored",
                          {{.key = "tensor"},
                           {.key = "in", .label = "only in"},
                           {.key = "checkpoint", .label = "stored elements", .unit = Unit::kCount},
                           {.key = "graph", .label = "graph elements", .unit = Unit::kCount},
                           {.key = "tensors", .label = "tensors (stored/graph)"},
                           {.key = "shape", .unit = Unit::kShape}});
  for (const UnmatchedRow& row : match.rows) {
    const uint64_t a = row.stored_elements, b = row.graph_elements;
    const std::string only_in = a == 0 ? "graph" : b == 0 ? "checkpoint" : "-";
    const bool block = row.kind == UnmatchedRow::Kind::kBlockRole;
    out.rows.push_back({row.name, only_in, a, b,
                        std::to_string(row.stored_tensors) + "/" + std::to_string(row.graph_tensors),
                        block ? Cell() : Cell(row.shape)});
    out.explain.push_back(RowExplain(row));
  }
}

}  // namespace tally
