// The table writers behind MakeTableWriter, and the whole-document path over them: formatters
// render a table node by handing each of its rows to the same writer sweep streams through.
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include "report/format.h"

namespace tally {

// The writers' common part: text collected in 64 KiB blocks, written a block at a time.
class BufferedTableWriter : public TableWriter {
 protected:
  explicit BufferedTableWriter(std::ostream& out) : out_(out) {}
  void FlushIfFull() {
    if (buffer_.size() >= kBlock) Flush();
  }
  void Flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }
  std::string buffer_;

 private:
  static constexpr size_t kBlock = 1 << 16;
  std::ostream& out_;
};

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
