// The pieces --explain texts are written with: grouped integers and sums over components.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "graph/layer.h"

namespace tally {

// 1,234,567
std::string Grouped(uint64_t n);
// "a 1 + b 2 = 3" over a component map; zero parts left out.
std::string SumText(const std::map<Component, uint64_t>& parts, uint64_t total);

}  // namespace tally
