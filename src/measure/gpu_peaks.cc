#include "measure/gpu_peaks.h"

#include "config/hardware.h"

namespace tally {
namespace {

// Substrings of driver names, most specific first: the first match wins.
struct GpuName {
  const char* match;
  const char* catalog;
};
constexpr GpuName kNames[] = {
    {"H100 PCIe", "h100-pcie"},
    {"H100", "h100-sxm"},
    {"H200", "h200"},
    {"H800", "h800"},
    {"H20", "h20"},  // after H200, which contains it
    {"GB200", "gb200"},
    {"B200", "b200"},
    {"B300", "b300"},
    {"A100-SXM4-80GB", "a100-80gb"},
    {"A100 80GB", "a100-80gb"},
    {"A100", "a100-40gb"},
    {"A10G", "a10g"},
    {"L40S", "l40s"},
    {"L40", "l40"},
    {"L4", "l4"},
    {"RTX 5090", "rtx-5090"},
    {"RTX 4090", "rtx-4090"},
    {"RTX 3090", "rtx-3090"},
    {"RTX A6000", "rtx-a6000"},
    {"V100", "v100-sxm2"},
    {" T4", "t4"},  // "Tesla T4"
    {"MI355X", "mi355x"},
    {"MI325X", "mi325x"},
    {"MI300X", "mi300x"},
    {"MI250X", "mi250x"},
};

}  // namespace

std::string CatalogNameForGpu(const std::string& device_name) {
  for (const GpuName& n : kNames) {
    if (device_name.find(n.match) != std::string::npos) return n.catalog;
  }
  return "";
}

double GpuDatasheetPeak(const std::string& device_name, GemmDType dtype, std::string* source) {
  const std::string name = CatalogNameForGpu(device_name);
  if (name.empty()) return 0;
  const HardwareSpec hw = ResolveHardware(name);
  const std::optional<double> peak = hw.Peak(dtype);
  if (!peak) return 0;
  if (source != nullptr) *source = hw.source;
  return *peak;
}

}  // namespace tally
