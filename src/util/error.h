// Errors that library code throws; cli/app.cc is the one place that turns them into exit codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tally {

// A position in an input file; line and column are 1-based, 0 means unknown.
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;
};

// Bad input from the user: a config, a flag, a preset name or a key. Exit code 2.
class InputError : public std::runtime_error {
 public:
  // An error in a file: printed as "FILE:LINE:COL: error: MESSAGE".
  InputError(SourceLoc loc, const std::string& message);
  // An error without a file position (a flag, a preset name): "tally: error: MESSAGE".
  explicit InputError(const std::string& message);

  const SourceLoc& loc() const { return loc_; }
  const std::string& message() const { return message_; }

 private:
  SourceLoc loc_;
  std::string message_;
};

// A count past 2^64 - 1 (util/checked_math.h): bad input like any InputError (exit 2), and a type of
// its own so that a search (estimate/fit.cc) can tell "too big at this size" from a bad setting.
class CountOverflow : public InputError {
 public:
  using InputError::InputError;
};

// An error at byte offset `byte` of a binary file (a GGUF file, a safetensors header):
// "FILE: error: at byte N: MESSAGE".
InputError AtByte(const std::string& file, uint64_t byte, const std::string& message);

// The environment failed us: a write error, a missing library or device. Exit code 3.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What an error quotes of its input (a scalar, a key, a file's first line): at most kQuoteMax bytes,
// cut at a UTF-8 character boundary and ended with "..." when longer, so that a whole file
// mistaken for a config is not echoed back.
inline constexpr size_t kQuoteMax = 80;
std::string QuoteInput(std::string_view text);

// The one-line diagnostic for an InputError, as printed on stderr.
std::string FormatDiagnostic(const InputError& e);

}  // namespace tally
