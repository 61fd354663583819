// The command line's help and first-contact messages: every --help fits 80 columns and ends with
// the command table's examples, each of which runs; unknown names get suggestions.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/help.h"
#include "config/hardware.h"
#include "run_tally.h"

namespace tally {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// An example's words ("fit gpt2-xl --memory 24GiB" -> fit, gpt2-xl, --memory, 24GiB).
std::vector<std::string> Words(std::string_view example) {
  std::vector<std::string> words;
  std::istringstream in{std::string(example)};
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

TEST_CASE("cli help: every help line fits 80 columns and the help ends with the examples") {
  std::vector<std::vector<std::string>> helps = {{"--help"}};
  for (const Command& c : Commands()) helps.push_back({std::string(c.name), "--help"});
  for (const auto& args : helps) {
    CAPTURE(args[0]);
    const testing::TallyRun r = testing::RunRaw(args);
    CHECK(r.code == 0);
    for (const std::string& line : Lines(r.out)) {
      CAPTURE(line);
      CHECK(DisplayWidth(line) <= 80);
    }
  }
  for (const Command& c : Commands()) {
    CAPTURE(c.name);
    CHECK(c.examples.size() >= 2);
    CHECK(c.examples.size() <= 3);
    const std::vector<std::string> lines = Lines(testing::RunRaw({std::string(c.name), "--help"}).out);
    REQUIRE(lines.size() > c.examples.size());
    CHECK(lines[lines.size() - c.examples.size() - 1] == "Examples:");
    for (size_t i = 0; i < c.examples.size(); ++i) {
      CHECK(lines[lines.size() - c.examples.size() + i] == "  tally " + std::string(c.examples[i]));
    }
  }
}

TEST_CASE("cli help: WrapHelp breaks at spaces under the description column") {
  // 2 + 28 columns of option, then a description of 60: the break falls at column 80's last space.
  const std::string option = "  --flag N" + std::string(20, ' ');
  const std::string line = option + std::string(45, 'a') + " " + std::string(14, 'b');
  CHECK(WrapHelp(line + "\n") ==
        option + std::string(45, 'a') + "\n" + std::string(30, ' ') + std::string(14, 'b') + "\n");
  CHECK(WrapHelp("short\n") == "short\n");
  CHECK(DisplayWidth("2·m·n·k") == 7);  // "·" is two bytes, one column
}

TEST_CASE("cli help: every example runs") {
  for (const Command& c : Commands()) {
    if (c.name == "measure") continue;  // times GEMMs: seconds, and no assertion on wall time
    for (std::string_view example : c.examples) {
      CAPTURE(example);
      std::vector<std::string> args = Words(example);
      for (std::string& a : args) {
        // ctest runs in the build folder; the examples' paths are the checkout's.
        if (a.rfind("configs/", 0) == 0 || a.rfind("tests/", 0) == 0) a = std::string(TALLY_SOURCE_DIR) + "/" + a;
      }
      const testing::TallyRun r = testing::RunRaw(args);
      CHECK(r.err.find("error") == std::string::npos);
      CHECK((r.code == 0 || r.code == 1));  // check's examples may fail a budget, fit's may not fit
    }
  }
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST_CASE("hardware names: case-insensitive, aliases from the catalog files, suggestions") {
  // configs/hardware/h100-sxm.yaml and a100-80gb.yaml list these aliases.
  CHECK(FindHardwareName("H100") == "h100-sxm");
  CHECK(FindHardwareName("h100") == "h100-sxm");
  CHECK(FindHardwareName("A100") == "a100-80gb");
  CHECK(FindHardwareName("MI300X") == "mi300x");
  CHECK(FindHardwareName("B200") == "b200");
  CHECK(FindHardwareName("h100-nvl").empty());
  CHECK(ResolveHardware("H200").name == "h200");
  SUBCASE("suggestions: prefix, family, spelling") {
    CHECK(HardwareSuggestion("mi30") == " (did you mean 'mi300x'?)");        // the one device it prefixes
    CHECK(HardwareSuggestion("h100-nvl") == " (did you mean 'h100-sxm'?)");  // family h100 = h100-sxm
    CHECK(HardwareSuggestion("a100-80g") == " (did you mean 'a100-80gb'?)");
    CHECK(HardwareSuggestion("v1000") == " (did you mean 'v100-sxm2'?)");  // one edit from the alias v100
    CHECK(HardwareSuggestion("yaml").empty());
  }
}

}  // namespace
}  // namespace tally
