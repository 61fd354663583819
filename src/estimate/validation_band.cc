#include "estimate/validation_band.h"

#include <string>

namespace tally {
namespace {

struct BandRow {
  const char* kind;  // dense, moe, one-gpu-eager, serving
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
  std::string_view kind = "serving";
  if (q.training) {
    if (q.moe && s.ep <= 1) return std::nullopt;
    kind = q.moe ? "moe" : s.gpus == 1 && kernels == Kernels::kEager ? "one-gpu-eager" : "dense";
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
