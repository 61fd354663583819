// Shared by the libFuzzer targets: bad input may only ever be an InputError (or, from the
// environment, a RuntimeError); anything else escapes the target, and libFuzzer reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/error.h"

namespace tally::fuzz {

// Inputs larger than this are skipped: configs, flags and numbers are short, and the
// interesting defects show up in a few kilobytes.
constexpr size_t kMaxInput = 4096;

inline std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `body`; InputError and RuntimeError are the answers tally is allowed to give, and an
// InputError's message is one line (util/error.cc escapes the line breaks of its input).
template <typename F>
void Expect(F&& body) {
  try {
    body();
  } catch (const InputError& e) {
    if (std::string_view(e.what()).find('\n') != std::string_view::npos) __builtin_trap();
  } catch (const RuntimeError&) {
  }
}

}  // namespace tally::fuzz
