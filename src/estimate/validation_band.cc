#include "estimate/validation_band.h"

#include <algorithm>
#include <string>

namespace tally {
namespace {

// The kind of run a band stands for: scripts/validate-time writes these names, so a kind it
// misspells does not compile.
enum class BandKind { kDense, kMoe, kOneGpuEager, kServing };

struct BandRow {
  BandKind kind;
  const char* regime;
  const char* devices;
  const char* what;
  int runs;
  double low, median, high;
};

#include "estimate/validation_bands.inc"

ValidationBand BandOf(const BandRow& row) {
  return {row.regime, row.devices, row.what, row.runs, row.low, row.median, row.high};
}

// Whether `name` is one of the space-separated `devices`.
bool OnDevice(std::string_view devices, const std::string& name) {
  size_t at = 0;
  while (at <= devices.size()) {
    const size_t end = std::min(devices.find(' ', at), devices.size());
    if (devices.substr(at, end - at) == name) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

std::optional<ValidationBand> BandFor(const HardwareSpec& hw, const Settings& s, Kernels kernels, const BandQuery& q) {
  // The catalog's own device: a file given by path may hold other figures, whatever its name.
  if (!q.language_model || !hw.catalog) return std::nullopt;
  BandKind kind = BandKind::kServing;
  if (q.training) {
    if (q.moe && s.ep <= 1) return std::nullopt;
    kind = q.moe                                       ? BandKind::kMoe
           : s.gpus == 1 && kernels == Kernels::kEager ? BandKind::kOneGpuEager
                                                       : BandKind::kDense;
  }
  for (const BandRow& row : kValidationBands) {
    if (kind == row.kind && OnDevice(row.devices, hw.name)) return BandOf(row);
  }
  return std::nullopt;
}

std::vector<ValidationBand> AllBands() {
  std::vector<ValidationBand> out;
  for (const BandRow& row : kValidationBands) out.push_back(BandOf(row));
  return out;
}

std::optional<ValidationBand> BandNamed(std::string_view regime) {
  for (const BandRow& row : kValidationBands) {
    if (regime == row.regime) return BandOf(row);
  }
  return std::nullopt;
}

}  // namespace tally
