// The key tables of the report's sections, each over the typed result its estimator returns. A
// section presents and never computes: its rows read fields, and format the --explain text.
#pragma once

#include "estimate/checkpoint_match.h"
#include "estimate/memory_estimate.h"
#include "estimate/model_estimate.h"
#include "estimate/time_estimate.h"
#include "sections/key_table.h"

namespace tally {

// model.*: the model's name, family, source and the attention and expert layout it was read with.
const KeyTable<ModelEstimate>& ModelKeys();
// settings.*: the batch, sequence length and causality the figures were computed at.
const KeyTable<ModelEstimate>& SettingsKeys();
// params.*: total, embedding, non-embedding, per block, active and trainable, by component.
const KeyTable<ModelEstimate>& ParamsKeys();
// flops.*: forward, backward, recomputation and step, per token or sample, by component, and
// Kaplan's approximations beside the exact counts.
const KeyTable<ModelEstimate>& FlopsKeys();

// time.*: training time and its budget (the modelled step's breakdown, device-hours, energy, the
// memory fit), or inference latency by the roofline; none without a device.
const KeyTable<TimeEstimate>& TimeKeys();
// settings.* of inference: the workload its latency was computed at (batch, prompt, generated tokens).
const KeyTable<TimeEstimate>& InferenceSettingsKeys();

struct TimeView {
  bool settings = true;  // inference's settings.*: not where the report already has the estimate's
  bool layers = false;   // inference: the roofline of each node (--layers)
};
// Adds the time sections of `e` to `r`, with its notes.
void PresentTime(const TimeEstimate& e, const TimeView& view, Report& r);
// PresentTime(EstimateTime(...)) as `request` asks (request.layers: the roofline per node).
void AddTime(Evaluation& evaluation, const Settings& settings, const TimeRequest& request, Report& r);
// model.quantization, params.checkpoint and checkpoint.*: the checkpoint's own counts beside the
// graph's, when the model came with weights (after the params group: params.checkpoint follows it).
const KeyTable<ModelEstimate>& CheckpointKeys();

// memory.*, activations.*, kv_cache.*: the training and inference ledgers per device, one block's
// activations beside Korthikanti et al.'s formula, the KV cache per token, and with --hardware
// whether each ledger fits.
const KeyTable<MemoryEstimate>& MemoryKeys();
// The training step's peak and the device figures, the device's limit and whether each fits.
const KeyTable<MemoryEstimate>& MemoryStepKeys();
// The precision, optimizer and parallelism settings the ledgers use, echoed under settings.*.
const KeyTable<MemoryEstimate>& MemorySettingsKeys();
// The memory section's warnings: settings that change nothing, and with --hardware the verdicts.
void AddMemoryNotes(const MemoryEstimate& e, Report& r);

// With --layers and weights: the table `unmatched` and checkpoint.unmatched, its row count
// (estimate/checkpoint_match.h), or a note when the checkpoint is packed.
void AddCheckpointMatch(const ModelSpec& spec, const CheckpointMatch& match, Report& r);

// A per-token (or per-sample) figure: an exact integer when it divides evenly (always, for
// transformers), else a double.
Value PerUnit(uint64_t total, uint64_t units);

// The --layers table: each node of the graph, blocks expanded.
void AddLayersTable(const LayerGraph& graph, const Settings& settings, Report& r);

// The training step's events, one row each (memory --timeline with --format json or csv).
struct StepTimeline;
void AddTimelineTable(const StepTimeline& timeline, Report& r);

}  // namespace tally
