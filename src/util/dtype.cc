#include "util/dtype.h"

#include "util/any_case.h"
#include "util/checked_math.h"

namespace tally {

DType ParseDType(const std::string& text, const std::string& flag, const std::vector<DType>& allowed) {
  return ParseNameAnyCase<DType>(text, "--" + flag, allowed, "dtype");
}

uint64_t BytesOfSlow(uint64_t elements, DType d, std::string_view what) {
  u128 bits = static_cast<u128>(elements) * BitsPer(d);
  u128 bytes = (bits + 7) / 8;
  if (bytes > UINT64_MAX) throw OverflowError(what);
  return static_cast<uint64_t>(bytes);
}

}  // namespace tally
