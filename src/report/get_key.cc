#include "report/format.h"
#include "util/error.h"
#include "util/spellcheck.h"
#include "util/units.h"

namespace tally {

std::string GetKey(const Report& report, const std::string& key) {
  const ReportNode* node = report.Find(key);
  if (node == nullptr) {
    if (const Cell* cell = report.FindCell(key)) {
      if (!*cell) throw InputError("--get: '" + key + "' has no value");
      return ValueText(**cell) + "\n";
    }
    throw InputError("--get: unknown key '" + key + "'" + DidYouMean(key, report.LeafKeys()) +
                     "; '--format json' shows every key");
  }
  if (const Table* table = node->table.get()) {
    // A few of its cells: TABLE.ROW.COLUMN, the row by name when keyed, by index otherwise.
    const std::string& column = table->columns[table->keyed && table->columns.size() > 1 ? 1 : 0].key;
    std::string keys;
    for (size_t r = 0; r < table->rows.size() && r < 3; ++r) {
      const Cell& name = table->rows[r][0];
      keys.append(keys.empty() ? "" : ", ").append(key).append(".");
      keys.append(table->keyed && name ? ValueText(*name) : std::to_string(r)).append(".").append(column);
    }
    throw InputError("--get: '" + key + "' is a table, not a number; its keys are like " + keys);
  }
  if (node->is_group) {
    std::string keys;
    for (const ReportNode& c : node->children) keys += (keys.empty() ? "" : ", ") + key + "." + c.key;
    throw InputError("--get: '" + key + "' is a group, not a number; its keys are " + keys);
  }
  return ValueText(node->value) + "\n";
}

}  // namespace tally
