// Report: the tree of named quantities every formatter reads. Keys are the dotted JSON keys
// (`params.total`); leaves carry a value and its unit, groups carry children, and table nodes carry
// lists (typed columns, one row of cells per item).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tally {

enum class Unit {
  kCount,   // a count shown with an SI prefix in tables (124.44 M)
  kNumber,  // a number shown exactly as is: an integer (batch 8), a double in full (a dtype's stored value)
  kFlop,
  kMac,  // multiply-accumulates: FLOPs / 2, labelled as such
  kByte,
  kRatio,   // approximate by nature: a double
  kTimes,   // a ratio of two like quantities read as a multiple (measured / predicted): 1.10x in tables
  kReal,    // a real number of any magnitude (a dtype's max, eps): four significant digits in tables
  kSecond,  // a duration (double)
  kFlopPerSecond,
  kBytePerSecond,
  kHertz,      // a clock rate (3.54 GHz)
  kMegahertz,  // a clock rate counted in MHz, as /proc/cpuinfo gives it
  kText,
  kBool,
  kShape,  // tensor dimensions: 1x64x32x32 in text, an array of integers in JSON
};

// A unit's name in machine output (check's results carry it): byte, flop, count, ...
const char* UnitName(Unit unit);
// The unit a name stands for; kText when the name is none of UnitName's.
Unit UnitFromName(const std::string& name);

using Value = std::variant<uint64_t, double, std::string, bool, std::vector<uint64_t>>;
// A table cell: nullopt is "no value" (an invalid sweep point, a device without an fp8 peak).
using Cell = std::optional<Value>;

struct Column {
  std::string key;    // dotted: JSON nests at the dots (unless the table's keys are flat); CSV's header
  std::string label;  // the human table's header; the key when empty
  Unit unit = Unit::kText;
  bool shown = true;  // in the human table; JSON, CSV and --get hold every column
  // When the unit varies by row (check's value and limit): the key of the text column naming it.
  std::string unit_column;

  const std::string& Label() const { return label.empty() ? key : label; }
};

// A list (presets, dtypes, hardware, check and measure results, sweep points, layers): typed
// columns and one row of cells per item. JSON writes it as an array of objects, or, when `keyed`,
// as an object keyed by the first column (models.<name>.*); CSV/TSV as a header and one line per row.
struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> explain;  // per row (lines split at '\n'), for --explain; may be shorter
  bool keyed = false;
  bool flat_keys = false;  // column keys are JSON names as a whole, dots and all (sweep's report keys)

  // The unit of row `r`'s cell in column `c`.
  Unit UnitOf(size_t r, size_t c) const;
  // The index of the column `key`, or columns.size().
  size_t ColumnIndex(const std::string& key) const;
};

struct ReportNode {
  std::string key;    // one segment: "total"
  std::string label;  // what the table prints; the key when empty
  bool is_group = true;
  Value value;
  Unit unit = Unit::kText;
  std::vector<ReportNode> children;
  std::string explain;  // the formula with its numbers and its source, for --explain
  bool ledger = false;  // a group whose byte lines are shares of its `total` (table: share and bar)
  // Set on a table node (is_group false, no value). Copies of a report share it: a table is filled
  // once, where the report is built.
  std::shared_ptr<Table> table;

  const std::string& Label() const { return label.empty() ? key : label; }

  // The child with key `child_key` (which may itself hold dots: a preset named "pythia-1.4b"), or null.
  const ReportNode* Child(const std::string& child_key) const;
};

class Report {
 public:
  // Adds (or finds) the group at dotted `path`, creating parents; `label` titles it in tables.
  ReportNode& Group(const std::string& path, const std::string& label = "");
  // Adds a leaf at dotted `path`; its parent groups must exist or are created unlabelled.
  void Set(const std::string& path, const std::string& label, Value value, Unit unit, const std::string& explain = "");

  // The node at dotted `path`; a key that holds dots itself matches as a whole.
  const ReportNode* Find(const std::string& path) const;
  // Adds a table node at dotted `path` (parents created unlabelled) with these columns.
  Table& AddTable(const std::string& path, const std::string& label, std::vector<Column> columns);
  // The first table node in report order, or null: CSV/TSV print it instead of the leaves.
  const ReportNode* FirstTable() const;
  // A table cell at dotted `path`: TABLE.ROWNAME.COLUMN when keyed, TABLE.INDEX.COLUMN otherwise.
  // Null when there is none; `unit` gets its unit.
  const Cell* FindCell(const std::string& path, Unit* unit = nullptr) const;
  // Every leaf's dotted key, in report order, and each cell of a keyed table.
  std::vector<std::string> LeafKeys() const;

  const ReportNode& root() const { return root_; }

  std::vector<std::string> notes;  // warnings: printed on stderr, carried in JSON

 private:
  ReportNode root_;
};

}  // namespace tally
