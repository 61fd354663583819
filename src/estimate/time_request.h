// What a time estimate is asked for beyond the settings: the training budget's givens and the
// inference workload. TimeRequest{} is `tally time`'s defaults, which sweep's time.* keys use.
#pragma once

#include <cstdint>
#include <optional>

#include "estimate/train_time.h"

namespace tally {

struct TimeRequest {
  TrainQuery train;
  std::optional<double> mbu;       // memory-bandwidth utilization for the roofline (default kDefaultMbu)
  std::optional<uint64_t> prompt;  // default 512; an encoder–decoder's decoder: 1 (its start token)
  uint64_t generate = 128;
  bool layers = false;  // inference: the roofline of each node (--layers), a presentation choice
};

}  // namespace tally
