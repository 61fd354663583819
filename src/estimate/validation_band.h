// How far the validated runs of a regime fell from tally's time: docs/validation-time.md's published
// runs and measured steps, grouped by regime, each as the run's time over tally's (generated into
// validation_bands.inc by scripts/validate-time, whose --check keeps it current). `time` reports the
// band of the regime a run falls in, so that a figure comes with the error it has had where it was
// checked, and only there: a band is given for the catalog devices its runs were on.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "config/hardware.h"
#include "config/settings.h"

namespace tally {

struct ValidationBand {
  std::string_view regime;   // "dense training on H100 and H200"
  std::string_view devices;  // the catalog devices its runs were on, space-separated
  std::string_view what;     // "published runs" or "measured steps"
  int runs = 0;
  double low = 0, median = 0, high = 0;  // a run's published (or measured) time over tally's
};

// What a time estimate is, for its band: training modelled from its parts or inference, of a
// decoder-only language model with attention in every block (the only kind validated: no encoder,
// encoder–decoder, state-space or vision tower), a mixture of experts or not.
struct BandQuery {
  bool training = true;
  bool language_model = false;
  bool moe = false;
};

// The band of the regime `q` falls in on `hw` at `s`: a mixture of experts with --ep > 1 (every MoE
// run sharded its experts); eager PyTorch on one device (the measured steps); other training (dense);
// inference (serving). Nothing where no band's runs were on this catalog device (a hardware file given
// by path is not the catalog's device, whatever its name), for other models, or for an MoE at --ep 1.
std::optional<ValidationBand> BandFor(const HardwareSpec& hw, const Settings& s, Kernels kernels, const BandQuery& q);

// Every band of the generated table, and one by regime name.
std::vector<ValidationBand> AllBands();
std::optional<ValidationBand> BandNamed(std::string_view regime);

}  // namespace tally
