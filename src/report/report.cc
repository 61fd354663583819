#include "report/report.h"

#include <cmath>
#include <stdexcept>

#include "report/format.h"

namespace tally {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

ReportNode* Child(ReportNode& node, const std::string& key) {
  for (ReportNode& c : node.children) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

void CollectLeaves(const ReportNode& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const ReportNode& c : node.children) {
    std::string key = prefix.empty() ? c.key : prefix + "." + c.key;
    if (c.table != nullptr) {
      if (!c.table->keyed) continue;  // an array's cells are reached by index, not listed
      for (const std::vector<Cell>& row : c.table->rows) {
        for (size_t i = 1; i < row.size(); ++i) {
          if (row[i]) out.push_back(key + "." + (row[0] ? ValueText(*row[0]) : "") + "." + c.table->columns[i].key);
        }
      }
    } else if (c.is_group) {
      CollectLeaves(c, key, out);
    } else {
      out.push_back(key);
    }
  }
}

// The one gate every reported number passes: inputs are validated where they enter, so an
// infinite or NaN value here is tally's own bug (exit 4), never something to print as inf or null.
void CheckFinite(const std::string& key, const Value& v) {
  const double* d = std::get_if<double>(&v);
  if (d != nullptr && !std::isfinite(*d)) {
    throw std::logic_error("report: '" + key + "' is " + (std::isnan(*d) ? "not a number" : "infinite"));
  }
}

}  // namespace

const char* UnitName(Unit unit) {
  switch (unit) {
    case Unit::kByte:
      return "byte";
    case Unit::kFlop:
      return "flop";
    case Unit::kMac:
      return "mac";
    case Unit::kRatio:
    case Unit::kTimes:
      return "ratio";
    case Unit::kSecond:
      return "second";
    default:
      return "count";
  }
}

Unit UnitFromName(const std::string& name) {
  for (Unit u : {Unit::kByte, Unit::kFlop, Unit::kMac, Unit::kRatio, Unit::kSecond, Unit::kCount}) {
    if (name == UnitName(u)) return u;
  }
  return Unit::kText;
}

Unit Table::UnitOf(size_t r, size_t c) const {
  const Column& col = columns[c];
  if (col.unit_column.empty()) return col.unit;
  const size_t u = ColumnIndex(col.unit_column);
  if (u == columns.size() || !rows[r][u]) return col.unit;
  const auto* name = std::get_if<std::string>(&*rows[r][u]);
  return name == nullptr ? col.unit : UnitFromName(*name);
}

size_t Table::ColumnIndex(const std::string& key) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].key == key) return i;
  }
  return columns.size();
}

ReportNode& Report::Group(const std::string& path, const std::string& label) {
  ReportNode* node = &root_;
  for (const std::string& part : Split(path)) {
    ReportNode* next = Child(*node, part);
    if (next == nullptr) {
      node->children.push_back(ReportNode{.key = part});
      next = &node->children.back();
    }
    if (!next->is_group) throw std::logic_error("report: " + path + " is a leaf");
    node = next;
  }
  if (!label.empty()) node->label = label;
  return *node;
}

void Report::Set(const std::string& path, const std::string& label, Value value, Unit unit,
                 const std::string& explain) {
  size_t dot = path.rfind('.');
  ReportNode& parent = dot == std::string::npos ? root_ : Group(path.substr(0, dot));
  std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
  if (Child(parent, key) != nullptr) throw std::logic_error("report: " + path + " set twice");
  CheckFinite(path, value);
  parent.children.push_back(ReportNode{
      .key = key, .label = label, .is_group = false, .value = std::move(value), .unit = unit, .explain = explain});
}

const ReportNode* ReportNode::Child(const std::string& child_key) const {
  for (const ReportNode& c : children) {
    if (c.key == child_key) return &c;
  }
  return nullptr;
}

namespace {

const ReportNode* FindUnder(const ReportNode& node, std::string_view path) {
  if (path.empty()) return &node;
  for (const ReportNode& c : node.children) {
    if (path.substr(0, c.key.size()) != c.key) continue;
    std::string_view rest = path.substr(c.key.size());
    if (rest.empty()) return &c;
    if (rest[0] != '.') continue;
    if (const ReportNode* found = FindUnder(c, rest.substr(1))) return found;
  }
  return nullptr;
}

}  // namespace

const ReportNode* Report::Find(const std::string& path) const { return FindUnder(root_, path); }

Table& Report::AddTable(const std::string& path, const std::string& label, std::vector<Column> columns) {
  size_t dot = path.rfind('.');
  ReportNode& parent = dot == std::string::npos ? root_ : Group(path.substr(0, dot));
  std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
  if (Child(parent, key) != nullptr) throw std::logic_error("report: " + path + " set twice");
  auto table = std::make_shared<Table>();
  table->columns = std::move(columns);
  parent.children.push_back(ReportNode{.key = key, .label = label, .is_group = false, .table = table});
  return *table;
}

namespace {

const ReportNode* FirstTableUnder(const ReportNode& node) {
  for (const ReportNode& c : node.children) {
    if (c.table != nullptr) return &c;
    if (const ReportNode* t = FirstTableUnder(c)) return t;
  }
  return nullptr;
}

// The cell at `rest` (ROW.COLUMN) of `table`.
const Cell* CellAt(const Table& table, std::string_view rest, Unit* unit) {
  for (size_t r = 0; r < table.rows.size(); ++r) {
    std::string name = table.keyed ? (table.rows[r][0] ? ValueText(*table.rows[r][0]) : "") : std::to_string(r);
    if (rest.size() <= name.size() || rest.substr(0, name.size()) != name || rest[name.size()] != '.') continue;
    const size_t c = table.ColumnIndex(std::string(rest.substr(name.size() + 1)));
    if (c == table.columns.size()) continue;
    if (unit != nullptr) *unit = table.UnitOf(r, c);
    return &table.rows[r][c];
  }
  return nullptr;
}

const Cell* FindCellUnder(const ReportNode& node, std::string_view path, Unit* unit) {
  for (const ReportNode& c : node.children) {
    if (path.size() <= c.key.size() || path.substr(0, c.key.size()) != c.key || path[c.key.size()] != '.') continue;
    std::string_view rest = path.substr(c.key.size() + 1);
    if (c.table != nullptr) {
      if (const Cell* cell = CellAt(*c.table, rest, unit)) return cell;
    } else if (const Cell* cell = FindCellUnder(c, rest, unit)) {
      return cell;
    }
  }
  return nullptr;
}

}  // namespace

const ReportNode* Report::FirstTable() const { return FirstTableUnder(root_); }

const Cell* Report::FindCell(const std::string& path, Unit* unit) const { return FindCellUnder(root_, path, unit); }

std::vector<std::string> Report::LeafKeys() const {
  std::vector<std::string> keys;
  CollectLeaves(root_, "", keys);
  return keys;
}

}  // namespace tally
