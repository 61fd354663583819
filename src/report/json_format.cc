// JSON: base units, exact integers, keys in report order, a schema tag for consumers. A table node
// is an array of objects, or an object keyed by its first column; streamed, each row is dumped
// alone and indented to its depth, which gives the bytes of the whole-document dump.
#include <nlohmann/json.hpp>
#include <ostream>

#include "report/format.h"
#include "report/writer.h"

namespace tally {
namespace {

using Json = nlohmann::ordered_json;

Json ToJson(const Value& value) {
  if (const auto* n = std::get_if<uint64_t>(&value)) return *n;
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* b = std::get_if<bool>(&value)) return *b;
  if (const auto* shape = std::get_if<std::vector<uint64_t>>(&value)) return *shape;
  return std::get<std::string>(value);
}

// Names and paths come from the user's files and may not be UTF-8: invalid bytes print as U+FFFD.
std::string Dump(const Json& json, int indent) { return json.dump(indent, ' ', false, Json::error_handler_t::replace); }

std::vector<std::string> SplitDots(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

// One row as an object: a keyed table's first column is its name outside the object. An absent
// cell is null in an array's objects (each has every key) and left out of a keyed table's.
Json RowJson(const Table& table, const std::vector<Cell>& row) {
  Json out = Json::object();
  for (size_t i = table.keyed ? 1 : 0; i < row.size(); ++i) {
    if (!row[i] && table.keyed) continue;
    Json value = row[i] ? ToJson(*row[i]) : Json(nullptr);
    if (table.flat_keys) {
      out[table.columns[i].key] = std::move(value);
      continue;
    }
    Json* at = &out;
    for (const std::string& part : SplitDots(table.columns[i].key)) at = &(*at)[part];
    *at = std::move(value);
  }
  return out;
}

std::string RowName(const std::vector<Cell>& row) { return row.empty() || !row[0] ? "" : ValueText(*row[0]); }

Json TableJson(const Table& table) {
  Json out = table.keyed ? Json::object() : Json::array();
  for (const std::vector<Cell>& row : table.rows) {
    if (table.keyed) {
      out[RowName(row)] = RowJson(table, row);
    } else {
      out.push_back(RowJson(table, row));
    }
  }
  return out;
}

Json ToJson(const ReportNode& node) {
  if (node.table != nullptr) return TableJson(*node.table);
  if (!node.is_group) return ToJson(node.value);
  Json out = Json::object();
  for (const ReportNode& c : node.children) out[c.key] = ToJson(c);
  return out;
}

Json Preamble() { return {{"schema", "tally/1"}, {"tally_version", TALLY_VERSION}}; }

class JsonLinesWriter : public BufferedTableWriter {
 public:
  JsonLinesWriter(std::ostream& out, const Table& header)
      : BufferedTableWriter(out), table_{.columns = header.columns} {
    table_.flat_keys = header.flat_keys;
  }
  void Row(const std::vector<Cell>& row) override {
    buffer_ += Dump(RowJson(table_, row), -1);
    buffer_ += '\n';
    FlushIfFull();
  }
  void End() override { Flush(); }

 private:
  Table table_;
};

// {"schema", "tally_version", path: [rows]} with nlohmann's two-space layout, written row by row.
class JsonWriter : public BufferedTableWriter {
 public:
  JsonWriter(std::ostream& out, const std::string& path, const Table& header)
      : BufferedTableWriter(out), table_{.columns = header.columns}, depth_(SplitDots(path).size()) {
    table_.keyed = header.keyed;
    table_.flat_keys = header.flat_keys;
    std::string open = Dump(Preamble(), 2);
    buffer_ = open.substr(0, open.size() - 2);  // less "\n}"
    const std::vector<std::string> parts = SplitDots(path);
    for (size_t i = 0; i < parts.size(); ++i) {
      buffer_ += (i == 0 ? ",\n" : "\n") + std::string(2 * (i + 1), ' ') + Dump(Json(parts[i]), -1) + ": ";
      if (i + 1 < parts.size()) buffer_ += "{";
    }
    buffer_ += table_.keyed ? "{" : "[";
  }
  void Row(const std::vector<Cell>& row) override {
    const std::string indent(2 * (depth_ + 1), ' ');
    buffer_ += rows_++ == 0 ? "\n" : ",\n";
    buffer_ += indent;
    if (table_.keyed) buffer_ += Dump(Json(RowName(row)), -1) + ": ";
    for (char c : Dump(RowJson(table_, row), 2)) {
      buffer_ += c;
      if (c == '\n') buffer_ += indent;  // strings hold no raw line breaks: JSON escapes them
    }
    FlushIfFull();
  }
  void End() override {
    if (rows_ > 0) buffer_ += "\n" + std::string(2 * depth_, ' ');
    buffer_ += table_.keyed ? "}" : "]";
    for (size_t d = depth_; d-- > 0;) buffer_ += "\n" + std::string(2 * d, ' ') + "}";
    buffer_ += "\n";
    Flush();
  }

 private:
  Table table_;
  size_t depth_;
  uint64_t rows_ = 0;
};

}  // namespace

std::unique_ptr<TableWriter> MakeJsonLinesWriter(std::ostream& out, const Table& header) {
  return std::make_unique<JsonLinesWriter>(out, header);
}

std::unique_ptr<TableWriter> MakeJsonWriter(std::ostream& out, const std::string& path, const Table& header) {
  return std::make_unique<JsonWriter>(out, path, header);
}

std::string FormatJson(const Report& report) {
  Json doc = Preamble();
  for (const ReportNode& c : report.root().children) doc[c.key] = ToJson(c);
  if (!report.notes.empty()) doc["notes"] = report.notes;
  return Dump(doc, 2) + "\n";
}

}  // namespace tally
