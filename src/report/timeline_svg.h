// A training step's live bytes as a standalone SVG document: a stacked area chart over the step's
// events, as PyTorch's memory-snapshot viewer draws a real run, with the phases and the peak marked.
#pragma once

#include <string>

#include "estimate/step_timeline.h"

namespace tally {

// 960 × 480, no scripts and no external fonts; the same timeline gives the same bytes. The five
// categories are stacked in enum order (weights at the bottom) on a y axis of 4 to 6 gridlines at
// multiples of a power of two bytes. Past 4,000 events each pixel column draws the event of its
// highest total, so the peak keeps its height. No events: a document that says so.
std::string TimelineSvg(const StepTimeline& timeline, const std::string& title);

}  // namespace tally
