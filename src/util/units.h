// Human units for tables: SI for counts and FLOPs, IEC or SI for bytes (util/parse.h reads them back).
#pragma once

#include <cstdint>
#include <string>

#include "util/names.h"

namespace tally {

enum class UnitSystem { kIec, kSi };

template <>
struct EnumNames<UnitSystem> {
  static constexpr NameEntry<UnitSystem> kTable[] = {{UnitSystem::kIec, "iec"}, {UnitSystem::kSi, "si"}};
};

// 124439808 -> "124,439,808".
std::string FormatGrouped(uint64_t n);
// 124439808 -> "124.44 M", 6738415616 -> "6.74 B"; values below 1000 print exactly ("768").
std::string FormatCount(uint64_t n);
// 291648307200 -> "291.65 GFLOP".
std::string FormatFlops(double flops);
// 1073741824 -> "1.00 GiB" (IEC) or "1.07 GB" (SI).
std::string FormatBytes(uint64_t bytes, UnitSystem units);
// 0.0171 -> "17.1 ms", 7.33e6 -> "84.8 days".
std::string FormatDuration(double seconds);
// 9.895e14 -> "989.50 TFLOP/s".
std::string FormatRate(double flop_per_s);

// The shortest decimal text that reads back as the same double (std::to_chars).
std::string FormatDouble(double value);
// Fixed two decimals: 1.50679 -> "1.51".
std::string FormatFixed(double value, int decimals = 2);

}  // namespace tally
