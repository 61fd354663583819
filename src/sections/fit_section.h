// `tally fit`'s report: the memory report at the answer with fit.* (the search's answer and, for a
// decoder's inference, the KV cache and decode step a server gets), presented from a FitEstimate.
#pragma once

#include <string>

#include "estimate/fit.h"
#include "report/report.h"
#include "sections/key_table.h"

namespace tally {

// fit.*: the limit, the verdict, the settings at the answer, the serving figures.
const KeyTable<FitEstimate>& FitKeys();

// The memory report at the answer (no params or FLOPs) with fit.* and the search's notes.
Report FitReport(Evaluation& evaluation, const FitEstimate& fit);

// Why nothing fits, for stderr: the smallest value tried and what might help.
std::string FitFailure(const ModelSpec& spec, const FitEstimate& fit);

}  // namespace tally
