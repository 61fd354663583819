// How far the validated runs of a regime fell from tally's time: docs/validation-time.md's published
// runs and measured steps, grouped by regime, each as the run's time over tally's (generated into
// validation_bands.inc by scripts/validate-time, whose --check keeps it current). `time` reports the
// band of the regime a run falls in, so that a figure comes with the error it has had where it was
// checked.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "config/hardware.h"
#include "config/settings.h"

namespace tally {

struct ValidationBand {
  std::string_view regime;
  int runs = 0;
  double low = 0, median = 0, high = 0;  // a run's published (or measured) time over tally's
};

// A training step modelled from its parts on `hw`: eager PyTorch on one H100 SXM or H200 (the
// measured steps), else a mixture of experts, else dense training by the device's family (A100;
// H100 SXM, H200, H800; B200, GB200). Nothing for other devices: no run validates them.
std::optional<ValidationBand> TrainingBand(const HardwareSpec& hw, const Settings& s, bool moe, Kernels kernels);

// Inference on a GPU (the serving runs: H100, H200, MI300X, RTX 4090).
std::optional<ValidationBand> ServingBand(const HardwareSpec& hw);

// Every regime the two above can name, and a regime's band by name (nothing when the generated table
// lacks it): each named regime has a row (a test checks).
std::vector<std::string_view> BandRegimes();
std::optional<ValidationBand> BandNamed(std::string_view regime);

}  // namespace tally
