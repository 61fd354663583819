#include "sections/key_table.h"

namespace tally::detail {

void OpenGroups(const std::string& key, const std::vector<GroupTitle>& titles, Report& r) {
  for (const GroupTitle& t : titles) {
    if (key.size() > t.key.size() && key.compare(0, t.key.size(), t.key) == 0 && key[t.key.size()] == '.') {
      ReportNode& group = r.Group(t.key, t.label);
      group.ledger = group.ledger || t.ledger;
    }
  }
}

}  // namespace tally::detail
