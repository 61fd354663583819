// A section's key table: one row per report key, {key, label, unit, value, explain}, read from the
// typed result an estimator returned. The same rows build the report (Present) and answer sweep's
// keys at millions of points (sections/key_reader.h), so every key is spelled once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace tally {

// One key of a family of keys under a row (params.components.<name>): its last segments, label, value.
struct KeyEntry {
  std::string key;
  std::string label;
  Value value;
};

template <typename R>
struct KeyRow {
  // Dotted report key. A row with neither `value` nor `entries` is a group: it titles the keys
  // under it and appears only when one of them does.
  std::string_view key;
  std::string_view label;
  Unit unit = Unit::kText;
  Cell (*value)(const R&) = nullptr;  // nullopt: the key is not in this report
  std::string (*explain)(const R&) = nullptr;
  std::string (*label_of)(const R&) = nullptr;  // when the label depends on the result
  std::vector<KeyEntry> (*entries)(const R&) = nullptr;
  bool ledger = false;  // a group whose byte lines are shares of its `total` (ReportNode::ledger)

  bool IsGroup() const { return value == nullptr && entries == nullptr; }
  std::string Label(const R& r) const { return label_of != nullptr ? label_of(r) : std::string(label); }
};

template <typename R>
using KeyTable = std::vector<KeyRow<R>>;

namespace detail {
struct GroupTitle {
  std::string key;
  std::string label;
  bool ledger = false;
};
// Creates the titled groups that `key` lies under (those it starts with, then a dot), outermost first.
void OpenGroups(const std::string& key, const std::vector<GroupTitle>& titles, Report& r);
}  // namespace detail

// Adds every row of `table` that `result` has to `r`, in table order.
template <typename R>
void Present(const KeyTable<R>& table, const R& result, Report& r) {
  std::vector<detail::GroupTitle> titles;
  for (const KeyRow<R>& row : table) {
    if (row.IsGroup()) {
      titles.push_back({std::string(row.key), row.Label(result), row.ledger});
      continue;
    }
    const std::string key(row.key);
    if (row.entries != nullptr) {
      const std::vector<KeyEntry> entries = row.entries(result);
      if (entries.empty()) continue;
      detail::OpenGroups(key + ".", titles, r);
      for (const KeyEntry& e : entries) r.Set(key + "." + e.key, e.label, e.value, row.unit);
      continue;
    }
    Cell value = row.value(result);
    if (!value) continue;
    detail::OpenGroups(key, titles, r);
    r.Set(key, row.Label(result), std::move(*value), row.unit, row.explain != nullptr ? row.explain(result) : "");
  }
}

// The optional value a row returns only under the report's condition for the key.
template <typename T>
Cell When(bool present, T value) {
  return present ? Cell(Value(std::move(value))) : std::nullopt;
}

}  // namespace tally
