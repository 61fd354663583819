// The command line: the input is argv, one argument per NUL-separated piece, run through RunMain
// with string streams. The contract checked on every run:
//   - the exit code is 0, 1, 2 or 3; 4 means an exception that is not an InputError or a
//     RuntimeError escaped to the catch site, which is a bug;
//   - bad input (2) and runtime failures (3) print nothing on stdout and one line on stderr;
//   - JSON output (--format json, no --get) parses.
// Bounded so that fuzzing never touches the machine: no 'measure' (GEMM benchmarks, --plot and
// --calibrate write files), and no argument with a '/' (no paths outside the working directory,
// which scripts/fuzz makes an empty scratch directory).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "fuzz_util.h"

namespace {

void Require(bool ok) {
  if (!ok) __builtin_trap();
}

std::vector<std::string> SplitArgs(const std::string& text) {
  std::vector<std::string> args;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    args.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return args;
}

// Sweeps are bounded too: a grid of 10^7 points is legitimate work, but minutes under ASan.
bool Allowed(const std::vector<std::string>& args) {
  size_t commas = 0;
  for (const std::string& a : args) {
    if (a.find("measure") != std::string::npos || a.find('/') != std::string::npos) return false;
    commas += static_cast<size_t>(std::count(a.begin(), a.end(), ','));
  }
  return commas <= 32;
}

bool WantsJson(const std::vector<std::string>& args) {
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--get" || args[i].rfind("--get=", 0) == 0) return false;
    if (args[i] == "--format=json" || (args[i] == "--format" && i + 1 < args.size() && args[i + 1] == "json")) {
      json = true;
    }
  }
  return json;
}

size_t Lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1024) return -1;
  const std::vector<std::string> args = SplitArgs(tally::fuzz::Text(data, size));
  if (!Allowed(args)) return -1;
  std::ostringstream out;
  std::ostringstream err;
  const int code = tally::RunMain(args, out, err);
  Require(code >= 0 && code <= 3);
  if (code >= 2) {
    Require(out.str().empty());
    Require(Lines(err.str()) == 1 && err.str().back() == '\n');
  }
  // --help and --version print text whatever the format.
  const bool help = out.str().find("Usage:") != std::string::npos || out.str().rfind("tally ", 0) == 0;
  if (code <= 1 && WantsJson(args) && !help) {
    Require(nlohmann::json::accept(out.str()));
  }
  return 0;
}
