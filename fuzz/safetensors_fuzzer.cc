// safetensors headers: the input is a whole file (8-byte length, JSON, data), and its length the
// file's size, so that truncation, trailing bytes and every offset check are reached.
#include <string>

#include "config/safetensors.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > tally::fuzz::kMaxInput) return -1;
  const std::string file = tally::fuzz::Text(data, size);
  tally::fuzz::Expect([&] { tally::ParseSafetensorsHeader("model.safetensors", file, file.size()); });
  return 0;
}
