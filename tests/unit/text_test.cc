// Terminal-safe text: control characters escaped, and so in table and CSV output (issue 20).
#include "util/text.h"

#include <doctest/doctest.h>

#include <string>

#include "config/load_config.h"
#include "report/format.h"
#include "unit/test_util.h"

namespace tally {
namespace {

using testing::ReportOf;

}  // namespace

TEST_CASE("text: control characters are escaped in table and CSV output") {
  CHECK(EscapeControl("a\x1b[2Jb\nc\td\re") == "a\\x1B[2Jb\\nc\\td\\re");
  CHECK(EscapeControl("\x7f\xc2\x9b ok \xc3\xa9 \xff") == "\\x7F\\u009B ok \xc3\xa9 \\xFF");
  CHECK(EscapeControl("line\nbreak", true) == "line\nbreak");
  const ModelSpec spec =
      LoadModelText("esc.yaml", "family: sequential\nname: \"\\e[2J\\e[31mred\"\ninput: [16]\nlayers: [relu]\n");
  const Report report = ReportOf(spec);
  const std::string table = FormatReport(report, {.format = OutputFormat::kTable});
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find("\\x1B[2J\\x1B[31mred") != std::string::npos);
  const std::string csv = FormatReport(report, {.format = OutputFormat::kCsv});
  CHECK(csv.find('\x1b') == std::string::npos);
  CHECK(csv.find("\\x1B[2J\\x1B[31mred,") != std::string::npos);
}

}  // namespace tally
