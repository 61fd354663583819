#include "sections/explain_text.h"

#include "config/names.h"
#include "util/units.h"

namespace tally {

std::string Grouped(uint64_t n) { return FormatGrouped(n); }

std::string SumText(const std::map<Component, uint64_t>& parts, uint64_t total) {
  std::string out;
  for (const auto& [component, n] : parts) {
    if (n == 0) continue;
    out += (out.empty() ? "" : " + ") + std::string(ComponentName(component)) + " " + Grouped(n);
  }
  return out + " = " + Grouped(total);
}

}  // namespace tally
