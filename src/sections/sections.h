// The key tables of the report's sections, each over the typed result its estimator returns. A
// section presents and never computes: its rows read fields, and format the --explain text.
#pragma once

#include "estimate/model_estimate.h"
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

// A per-token (or per-sample) figure: an exact integer when it divides evenly (always, for
// transformers), else a double.
Value PerUnit(uint64_t total, uint64_t units);

// The --layers table: each node of the graph, blocks expanded.
void AddLayersTable(const LayerGraph& graph, const Settings& settings, Report& r);

}  // namespace tally
