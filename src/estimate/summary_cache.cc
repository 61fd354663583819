#include "estimate/summary_cache.h"

#include "estimate/evaluation.h"

namespace tally {

std::shared_ptr<const GraphSummary> SummaryCache::Find(const GraphSettings& key) {
  // A sweep asks for its graphs in the same order at each pass: try the one that came next last time
  // before the hash (whose lookup misses the cache several times once thousands of graphs are kept).
  if (last_ != kNone) {
    const size_t next = slots_[last_].next;
    if (next != kNone && slots_[next].key == key) return Use(next);
  }
  if (auto it = index_.find(key); it != index_.end()) return Use(it->second);
  return nullptr;
}

std::shared_ptr<const GraphSummary> SummaryCache::Use(size_t slot) {
  if (last_ != kNone) slots_[last_].next = slot;
  last_ = slot;
  slots_[slot].used = true;
  return slots_[slot].summary;
}

void SummaryCache::Keep(const GraphSettings& key, const std::shared_ptr<const GraphSummary>& summary) {
  size_t slot = slots_.size();
  if (slots_.size() < capacity_) {
    slots_.push_back({key, summary});
  } else if (evict_) {
    // CLOCK (Corbató 1968), nearly least recently used: the hand clears each used slot it passes and
    // stops at the first one unused since it last passed.
    while (slots_[hand_].used) {
      slots_[hand_].used = false;
      hand_ = (hand_ + 1) % slots_.size();
    }
    slot = hand_;
    hand_ = (hand_ + 1) % slots_.size();
    index_.erase(slots_[slot].key);
    slots_[slot] = {key, summary};
  } else {
    last_ = kNone;
    return;
  }
  index_.emplace(key, slot);
  Use(slot);
}

void SummaryCache::Evicting(size_t capacity) {
  capacity_ = std::max<size_t>(capacity, 1);
  evict_ = true;
  if (slots_.size() > capacity_) {
    slots_.clear();
    index_.clear();
    hand_ = 0;
    last_ = kNone;
  }
}

}  // namespace tally
