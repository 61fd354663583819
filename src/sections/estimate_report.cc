#include "sections/estimate_report.h"

#include "estimate/model_estimate.h"
#include "sections/sections.h"
#include "util/checked_math.h"

namespace tally {
namespace {

// What the figures were computed at that the user may not have meant: said as warnings.
void AddSequenceNotes(const ModelEstimate& e, Report& r) {
  const LayerGraph& graph = e.graph();
  const ModelSpec& spec = *e.spec;
  const std::optional<VisionSpec>& vision = spec.transformer.vision;
  if (vision && graph.images && graph.seq < *graph.images * vision->tokens_per_image) {
    r.notes.push_back("sequence length " + std::to_string(graph.seq) + " cannot hold the " +
                      std::to_string(*graph.images * vision->tokens_per_image) +
                      " image tokens of its image(s); the vision tower is still counted over them");
  }
  // A model without attention (Mamba) has no context limit: its context_length is only --seq's default.
  if (graph.family == Family::kTransformer && spec.transformer.n_heads > 0 &&
      graph.seq > spec.transformer.context_length) {
    r.notes.push_back("sequence length " + std::to_string(graph.seq) + " exceeds the context length " +
                      std::to_string(spec.transformer.context_length) + " of '" + spec.name + "'");
  }
}

Report EstimateOnce(Evaluation& evaluation, const Settings& settings, const ReportRequest& request) {
  const ModelSpec& spec = evaluation.spec();
  const ModelEstimate e = EstimateModel(evaluation, settings);
  Report r;
  Present(ModelKeys(), e, r);
  if (request.settings) Present(SettingsKeys(), e, r);
  if (request.memory) r.Group("settings");  // the memory settings join it below: its place is here
  if (request.params) Present(ParamsKeys(), e, r);
  if (request.params) Present(CheckpointKeys(), e, r);
  if (request.flops) Present(FlopsKeys(), e, r);
  // After the FLOPs: of two figures past 2^64, the error names the one the report reaches first.
  if (request.memory) {
    const MemoryEstimate memory = EstimateMemory(evaluation, settings, {.events = request.timeline});
    Present(MemorySettingsKeys(), memory, r);
    AddMemoryNotes(memory, r);
    Present(MemoryKeys(), memory, r);
    Present(MemoryStepKeys(), memory, r);
    if (request.timeline && memory.step) AddTimelineTable(memory.step->step, r);
  }
  if (request.layers) {
    const std::shared_ptr<const LayerGraph> graph = evaluation.Graph(GraphSettingsOf(settings));
    AddLayersTable(*graph, settings, r);
    AddCheckpointMatch(spec, MatchCheckpoint(spec, *graph), r);
  }
  r.notes.insert(r.notes.end(), spec.notes.begin(), spec.notes.end());
  r.notes.insert(r.notes.end(), settings.notes.begin(), settings.notes.end());
  AddSequenceNotes(e, r);
  return r;
}

}  // namespace

// A count past 2^64 comes from the model's sizes with the batch and sequence: its config is named.
Report EstimateReport(Evaluation& evaluation, const Settings& settings, const ReportRequest& request) {
  return BlameOverflowOn(evaluation.spec().source, [&] { return EstimateOnce(evaluation, settings, request); });
}

}  // namespace tally
