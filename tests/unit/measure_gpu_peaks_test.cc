// Driver device names map onto the hardware catalog's dense peaks.
#include <doctest/doctest.h>

#include "measure/gpu_peaks.h"

namespace tally {
namespace {

TEST_CASE("measure: GPU peaks come from the hardware catalog by driver name") {
  CHECK(CatalogNameForGpu("NVIDIA H100 80GB HBM3") == "h100-sxm");
  CHECK(CatalogNameForGpu("NVIDIA H100 PCIe") == "h100-pcie");
  CHECK(CatalogNameForGpu("NVIDIA A100-SXM4-80GB") == "a100-80gb");
  CHECK(CatalogNameForGpu("NVIDIA A100-SXM4-40GB") == "a100-40gb");
  CHECK(CatalogNameForGpu("NVIDIA L40S") == "l40s");
  CHECK(CatalogNameForGpu("NVIDIA GeForce RTX 4090") == "rtx-4090");
  // Names that contain another device's: H200 holds H20, GB200 holds B200, L40 holds L4.
  CHECK(CatalogNameForGpu("NVIDIA H200") == "h200");
  CHECK(CatalogNameForGpu("NVIDIA H20") == "h20");
  CHECK(CatalogNameForGpu("NVIDIA H800") == "h800");
  CHECK(CatalogNameForGpu("NVIDIA GB200") == "gb200");
  CHECK(CatalogNameForGpu("NVIDIA B300 SXM6 AC") == "b300");
  CHECK(CatalogNameForGpu("NVIDIA L40") == "l40");
  CHECK(CatalogNameForGpu("NVIDIA L4") == "l4");
  CHECK(CatalogNameForGpu("NVIDIA A10G") == "a10g");
  CHECK(CatalogNameForGpu("Tesla T4") == "t4");
  CHECK(CatalogNameForGpu("NVIDIA RTX A6000") == "rtx-a6000");
  CHECK(CatalogNameForGpu("NVIDIA GeForce RTX 5090") == "rtx-5090");
  CHECK(CatalogNameForGpu("Some Other GPU").empty());
  std::string source;
  CHECK(GpuDatasheetPeak("NVIDIA H100 80GB HBM3", GemmDType::kBf16, &source) == 989.5e12);
  CHECK(source == "configs/hardware/h100-sxm.yaml");
  CHECK(GpuDatasheetPeak("NVIDIA A100-SXM4-40GB", GemmDType::kBf16, nullptr) == 312e12);
  CHECK(GpuDatasheetPeak("NVIDIA A100-SXM4-40GB", GemmDType::kFp8, nullptr) == 0);  // no fp8 on Ampere
  CHECK(GpuDatasheetPeak("Some Other GPU", GemmDType::kBf16, nullptr) == 0);
}

}  // namespace
}  // namespace tally
