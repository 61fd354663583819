// Graph summaries kept by their GraphSettings for Evaluation: bounded, hashed, and quick for a sweep
// that comes back to thousands of graphs in the same order again and again.
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "graph/build_graph.h"

namespace tally {

struct GraphSummary;

class SummaryCache {
 public:
  explicit SummaryCache(size_t capacity) : capacity_(capacity) {}

  // The summary kept for `key`, or null.
  std::shared_ptr<const GraphSummary> Find(const GraphSettings& key);
  // Keeps `summary` for `key`: while there is room; when full, in place of one not used lately if
  // evicting, else not at all.
  void Keep(const GraphSettings& key, const std::shared_ptr<const GraphSummary>& summary);
  // At most `capacity` from now on, evicting when full.
  void Evicting(size_t capacity);
  size_t capacity() const { return capacity_; }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Slot {
    GraphSettings key;
    std::shared_ptr<const GraphSummary> summary;
    bool used = true;     // since the clock hand last passed
    size_t next = kNone;  // the slot asked for right after this one, last time
  };
  std::shared_ptr<const GraphSummary> Use(size_t slot);

  std::vector<Slot> slots_;
  std::unordered_map<GraphSettings, size_t, GraphSettingsHash> index_;  // key -> its slot
  size_t capacity_;
  bool evict_ = false;
  size_t hand_ = 0;
  size_t last_ = kNone;  // the slot answered last
};

}  // namespace tally
