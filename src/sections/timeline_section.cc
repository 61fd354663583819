// The training step's events as a table (memory --timeline with --format json or csv): one row per
// event, its phase and node, and the bytes live in each category (docs/timeline.md).
#include "estimate/step_timeline.h"
#include "sections/sections.h"

namespace tally {

void AddTimelineTable(const StepTimeline& timeline, Report& r) {
  std::vector<Column> columns = {{.key = "phase"}, {.key = "node"}};
  for (size_t c = 0; c < kLiveCategories; ++c) {
    columns.push_back({.key = LiveCategoryName(static_cast<LiveCategory>(c)), .unit = Unit::kByte});
  }
  columns.push_back({.key = "total", .unit = Unit::kByte});
  Table& t = r.AddTable("memory.train.timeline", "Training step, event by event", std::move(columns));
  for (const StepEvent& e : timeline.events) {
    std::vector<Cell> row = {std::string(StepPhaseName(e.phase)), e.node};
    for (uint64_t bytes : e.live.bytes) row.emplace_back(bytes);
    row.emplace_back(e.live.Total());
    t.rows.push_back(std::move(row));
  }
}

}  // namespace tally
