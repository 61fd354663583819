#include "estimate/validation_band.h"

#include <string>

namespace tally {
namespace {

struct BandRow {
  const char* regime;
  int runs;
  double low, median, high;
};

#include "estimate/validation_bands.inc"

constexpr std::string_view kOneH100 = "eager PyTorch on one H100 SXM";
constexpr std::string_view kOneH200 = "eager PyTorch on one H200";
constexpr std::string_view kMoe = "MoE training";
constexpr std::string_view kA100 = "dense training on A100";
constexpr std::string_view kHopper = "dense training on H100 and H200";
constexpr std::string_view kBlackwell = "dense training on B200 and GB200";
constexpr std::string_view kServing = "serving";

std::optional<ValidationBand> Lookup(std::string_view regime) {
  for (const BandRow& row : kValidationBands) {
    if (regime == row.regime) return ValidationBand{regime, row.runs, row.low, row.median, row.high};
  }
  return std::nullopt;
}

bool Among(const std::string& name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (name == n) return true;
  }
  return false;
}

}  // namespace

std::optional<ValidationBand> TrainingBand(const HardwareSpec& hw, const Settings& s, bool moe, Kernels kernels) {
  const bool a100 = Among(hw.name, {"a100-80gb", "a100-40gb"});
  const bool hopper = Among(hw.name, {"h100-sxm", "h200", "h800"});
  const bool blackwell = Among(hw.name, {"b200", "gb200"});
  if (!moe && s.gpus == 1 && kernels == Kernels::kEager && Among(hw.name, {"h100-sxm", "h200"})) {
    return Lookup(hw.name == "h200" ? kOneH200 : kOneH100);
  }
  if (!(a100 || hopper || blackwell)) return std::nullopt;
  if (moe) return Lookup(kMoe);
  return Lookup(a100 ? kA100 : hopper ? kHopper : kBlackwell);
}

std::optional<ValidationBand> ServingBand(const HardwareSpec& hw) {
  if (hw.kind != "gpu") return std::nullopt;
  return Lookup(kServing);
}

std::vector<std::string_view> BandRegimes() { return {kOneH100, kOneH200, kMoe, kA100, kHopper, kBlackwell, kServing}; }

std::optional<ValidationBand> BandNamed(std::string_view regime) { return Lookup(regime); }

}  // namespace tally
