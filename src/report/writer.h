// The table writers behind MakeTableWriter, and the whole-document path over them: formatters
// render a table node by handing each of its rows to the same writer sweep streams through.
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include "report/format.h"

namespace tally {

std::unique_ptr<TableWriter> MakeDelimitedWriter(std::ostream& out, char separator, const Table& header);
std::unique_ptr<TableWriter> MakeJsonLinesWriter(std::ostream& out, const Table& header);
// A JSON document holding only `header`'s table at dotted `path`.
std::unique_ptr<TableWriter> MakeJsonWriter(std::ostream& out, const std::string& path, const Table& header);

// Every row of `table` through the writer `make(stream)` returns, as one string.
template <class Make>
std::string WriteWhole(const Table& table, Make make) {
  std::ostringstream out;
  std::unique_ptr<TableWriter> writer = make(out);
  for (const std::vector<Cell>& row : table.rows) writer->Row(row);
  writer->End();
  return out.str();
}

}  // namespace tally
