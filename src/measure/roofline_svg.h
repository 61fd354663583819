// A roofline chart (Williams, Waterman & Patterson 2009) as a standalone SVG document: arithmetic
// intensity against FLOP/s on log axes, with peak and memory-bandwidth roofs and measured points.
#pragma once

#include <string>
#include <vector>

namespace tally {

struct RooflinePoint {
  double intensity = 0;  // FLOP per byte moved
  double flop_per_s = 0;
  std::string series;  // one colour per series (a dtype)
  std::string label;   // the tooltip: shape, threads
};

struct RooflineRoof {
  std::string label;  // "fp32 computed peak"
  double flop_per_s = 0;
};

struct RooflineChart {
  std::string title;
  double bandwidth_bytes_per_s = 0;  // 0: no sloped roof
  std::vector<RooflineRoof> roofs;
  std::vector<RooflinePoint> points;
};

// Deterministic text: the same chart gives the same bytes.
std::string RooflineSvg(const RooflineChart& chart);

}  // namespace tally
