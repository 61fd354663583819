// Report keys at many settings of one model, without building reports: sweep's path. Each key is
// looked up once in the sections' key tables (the rows the report itself is presented from); a
// point then runs only the estimators its keys read, once each, and calls the rows' getters.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimate/evaluation.h"
#include "estimate/time_request.h"
#include "sections/key_table.h"

namespace tally {

// The sections over one estimator's result as the reader sees them: their key tables' rows.
class SectionReader {
 public:
  virtual ~SectionReader() = default;
  // The row for `key` (a family's row for one of its entries: `entry` gets the entry's key), or -1.
  virtual int Find(const std::string& key, std::string& entry) const = 0;
  // Every key the table spells (a family as PREFIX.*), for suggestions.
  virtual void Keys(std::vector<std::string>& out) const = 0;
  // Forgets the last point's result.
  virtual void Reset() = 0;
  // Row `row`'s value at `settings`, computing the section's result on first use after Reset.
  virtual Cell Get(int row, const std::string& entry, Evaluation& evaluation, const Settings& settings) = 0;
};

template <typename R>
class TableReader final : public SectionReader {
 public:
  using Compute = std::function<R(Evaluation&, const Settings&)>;
  TableReader(std::initializer_list<const KeyTable<R>*> tables, Compute compute) : compute_(std::move(compute)) {
    for (const KeyTable<R>* table : tables) {
      for (const KeyRow<R>& row : *table) rows_.push_back(&row);
    }
  }

  int Find(const std::string& key, std::string& entry) const override {
    for (size_t i = 0; i < rows_.size(); ++i) {
      const KeyRow<R>& row = *rows_[i];
      if (row.IsGroup()) continue;
      if (row.entries == nullptr && row.key == key) return static_cast<int>(i);
      if (row.entries != nullptr && key.size() > row.key.size() + 1 && key.compare(0, row.key.size(), row.key) == 0 &&
          key[row.key.size()] == '.') {
        entry = key.substr(row.key.size() + 1);
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  void Keys(std::vector<std::string>& out) const override {
    for (const KeyRow<R>* row_of : rows_) {
      const KeyRow<R>& row = *row_of;
      if (!row.IsGroup()) out.push_back(std::string(row.key) + (row.entries != nullptr ? ".*" : ""));
    }
  }
  void Reset() override { result_.reset(); }
  Cell Get(int row, const std::string& entry, Evaluation& evaluation, const Settings& settings) override {
    if (!result_) result_.emplace(compute_(evaluation, settings));
    const KeyRow<R>& r = *rows_[static_cast<size_t>(row)];
    if (r.entries == nullptr) return r.value(*result_);
    for (KeyEntry& e : r.entries(*result_)) {
      if (e.key == entry) return std::move(e.value);
    }
    return std::nullopt;
  }

 private:
  std::vector<const KeyRow<R>*> rows_;
  Compute compute_;
  std::optional<R> result_;
};

// Every section a sweep can read, one reader each; time.* keys answer `time` (its flags' request).
std::vector<std::unique_ptr<SectionReader>> AllSections(const TimeRequest& time = {});

class KeyReader {
 public:
  // Throws InputError "--keys: unknown key" (with a suggestion) for a key no table spells.
  KeyReader(Evaluation& evaluation, const std::vector<std::string>& keys, const TimeRequest& time = {});

  // The keys' values at `settings` (resolved) into `out`, one per key; nullopt where the point lacks
  // the key.
  void Read(const Settings& settings, std::vector<Cell>& out);
  std::vector<Cell> Read(const Settings& settings) {
    std::vector<Cell> out;
    Read(settings, out);
    return out;
  }

  // Whether a table spells `key`.
  static bool Known(const std::string& key);

 private:
  struct Slot {
    size_t section;
    int row;
    std::string entry;
  };
  Evaluation& evaluation_;
  std::vector<std::unique_ptr<SectionReader>> sections_;
  std::vector<Slot> slots_;
};

}  // namespace tally
