#include "estimate/checkpoint_report.h"

#include "util/units.h"

namespace tally {

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
  for (const auto& [dtype, bytes] : c.bytes_by_dtype) sum += (sum.empty() ? "" : " + ") + dtype + " " + FormatGrouped(bytes);
  r.Set("checkpoint.bytes", "tensor data", c.bytes, Unit::kByte, sum + " = " + FormatGrouped(c.bytes));
  r.Group("checkpoint.dtypes", "by dtype");
  for (const auto& [dtype, bytes] : c.bytes_by_dtype) r.Set("checkpoint.dtypes." + dtype, dtype, bytes, Unit::kByte);
}

}  // namespace tally
