// Each formatter on a tiny hand-built report, asserted as exact text; and every command's JSON and
// CSV over every preset well formed.
#include "report/format.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "config/presets.h"
#include "unit/run_tally.h"
#include "util/error.h"

namespace tally {
namespace {

Report TinyReport() {
  Report r;
  r.Group("model", "Model");
  r.Set("model.name", "name", std::string("tiny, \"quoted\""), Unit::kText);
  r.Group("params", "Parameters");
  r.Set("params.total", "total", uint64_t{124'439'808}, Unit::kCount);
  r.Set("params.ratio", "ratio", 1.5, Unit::kRatio);
  r.Set("params.per_layer.forward", "per block", uint64_t{12}, Unit::kFlop);
  return r;
}

TEST_CASE("format: table") {
  CHECK(FormatTable(TinyReport(), UnitSystem::kIec) ==
        "Model\n"
        "  name                                       tiny, \"quoted\"\n"
        "\n"
        "Parameters\n"
        "  total                                           124.44 M           124,439,808\n"
        "  ratio                                              1.500\n"
        "  per block                                        12 FLOP\n");
}

TEST_CASE("format: a multiple reads 1.38x in a table and stays a number in JSON") {
  // Issue 28: measured / predicted printed as "1.38 s". A ratio of like quantities is a multiple.
  Report r;
  r.Set("measure.ratio", "measured / predicted", 1.3794, Unit::kTimes);
  CHECK(FormatTable(r, UnitSystem::kIec).find("measured / predicted") != std::string::npos);
  CHECK(FormatTable(r, UnitSystem::kIec).find("  1.38\u00d7\n") != std::string::npos);
  CHECK(FormatJson(r).find("\"ratio\": 1.3794\n") != std::string::npos);
}

TEST_CASE("format: JSON") {
  CHECK(FormatJson(TinyReport()) ==
        "{\n"
        "  \"schema\": \"tally/1\",\n"
        "  \"tally_version\": \"" TALLY_VERSION
        "\",\n"
        "  \"model\": {\n"
        "    \"name\": \"tiny, \\\"quoted\\\"\"\n"
        "  },\n"
        "  \"params\": {\n"
        "    \"total\": 124439808,\n"
        "    \"ratio\": 1.5,\n"
        "    \"per_layer\": {\n"
        "      \"forward\": 12\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("format: CSV quotes per RFC 4180, TSV replaces tabs") {
  CHECK(FormatDelimited(TinyReport(), ',') ==
        "model.name,params.total,params.ratio,params.per_layer.forward\n"
        "\"tiny, \"\"quoted\"\"\",124439808,1.5,12\n");
  Report r;
  r.Set("a", "", std::string("x\ty"), Unit::kText);
  CHECK(FormatDelimited(r, '\t') == "a\nx y\n");
}

TEST_CASE("format: CSV quotes line breaks per RFC 4180, in values and in list rows") {
  Report r;
  r.Set("a", "", std::string("two\nlines"), Unit::kText);
  r.Set("b", "", std::string("cr\rhere"), Unit::kText);
  r.Set("c", "", std::string("plain"), Unit::kText);
  CHECK(FormatDelimited(r, ',') == "a,b,c\n\"two\nlines\",\"cr\rhere\",plain\n");
  Report list;
  list.AddTable("list", "", {{.key = "name"}, {.key = "note"}}).rows = {{std::string("x,y"), std::string("say \"hi\"")},
                                                                        {std::string(), std::string("line\nbreak")}};
  CHECK(FormatDelimited(list, ',') == "name,note\n\"x,y\",\"say \"\"hi\"\"\"\n,\"line\nbreak\"\n");
}

TEST_CASE("format: JSON of text that is not UTF-8 (a path, a name) still parses") {
  Report r;
  r.Group("model");
  r.Set("model.source", "", std::string("caf\xE9.yaml"), Unit::kText);
  const std::string text = FormatJson(r);
  REQUIRE(nlohmann::json::accept(text));
  CHECK(nlohmann::json::parse(text)["model"]["source"] == "caf\xEF\xBF\xBD.yaml");  // U+FFFD
}

TEST_CASE("format: --get prints one bare value") {
  Report r = TinyReport();
  CHECK(GetKey(r, "params.total") == "124439808\n");
  CHECK(GetKey(r, "params.ratio") == "1.5\n");
  CHECK_THROWS_WITH_AS(GetKey(r, "params.totl"),
                       "tally: error: --get: unknown key 'params.totl' (did you mean 'params.total'?); "
                       "'--format json' shows every key",
                       InputError);
  CHECK_THROWS_WITH_AS(GetKey(r, "params.per_layer"),
                       "tally: error: --get: 'params.per_layer' is a group, not a number; its keys are "
                       "params.per_layer.forward",
                       InputError);
}

// A table node inside a group: bytes and seconds per column, a dotted key, a hidden column and a
// cell with no value.
Report TableReport() {
  Report r;
  r.Group("run", "Run");
  r.Set("run.clock", "clock", 3.54e9, Unit::kHertz);
  Table& t = r.AddTable("run.results", "Results",
                        {{.key = "name"},
                         {.key = "size", .unit = Unit::kByte},
                         {.key = "time.median", .label = "median", .unit = Unit::kSecond},
                         {.key = "note", .shown = false}});
  t.rows = {{std::string("a"), uint64_t{2048}, 0.0015, std::string("x,y")},
            {std::string("bb"), uint64_t{1}, Cell(), std::string()}};
  return r;
}

// Presets-like: an object keyed by the first column; a name holding a dot.
Report KeyedReport() {
  Report r;
  Table& t = r.AddTable(
      "models", "Presets",
      {{.key = "name"}, {.key = "params", .unit = Unit::kCount}, {.key = "peak.bf16", .unit = Unit::kRatio}});
  t.keyed = true;
  t.rows = {{std::string("gpt2"), uint64_t{124'439'808}, 1.5}, {std::string("pythia-1.4b"), uint64_t{7}, Cell()}};
  return r;
}

// Sweep-like: report keys kept whole as JSON names, an invalid point with no values.
Report SweepReport() {
  Report r;
  Table& t = r.AddTable("sweep", "", {{.key = "settings.batch"}, {.key = "status"}, {.key = "params.total"}});
  t.flat_keys = true;
  t.rows = {{std::string("1"), std::string("ok"), uint64_t{124'439'808}},
            {std::string("0"), std::string("invalid: --batch: must be positive"), Cell()}};
  return r;
}

TEST_CASE("format: a table node in the human table: one aligned line per row") {
  // 2048 B = 2.00 KiB; 0.0015 s = 1.50 ms; 3.54e9 Hz = 3.54 GHz; no value prints "-".
  CHECK(FormatTable(TableReport(), UnitSystem::kIec) ==
        "Run\n"
        "  clock                                           3.54 GHz\n"
        "  Results\n"
        "    name      size   median\n"
        "    a     2.00 KiB  1.50 ms\n"
        "    bb         1 B        -\n");
}

TEST_CASE("format: a table node in JSON: an array of objects, or an object keyed by name") {
  CHECK(FormatJson(TableReport()) ==
        "{\n"
        "  \"schema\": \"tally/1\",\n"
        "  \"tally_version\": \"" TALLY_VERSION
        "\",\n"
        "  \"run\": {\n"
        "    \"clock\": 3540000000.0,\n"
        "    \"results\": [\n"
        "      {\n"
        "        \"name\": \"a\",\n"
        "        \"size\": 2048,\n"
        "        \"time\": {\n"
        "          \"median\": 0.0015\n"
        "        },\n"
        "        \"note\": \"x,y\"\n"
        "      },\n"
        "      {\n"
        "        \"name\": \"bb\",\n"
        "        \"size\": 1,\n"
        "        \"time\": {\n"
        "          \"median\": null\n"
        "        },\n"
        "        \"note\": \"\"\n"
        "      }\n"
        "    ]\n"
        "  }\n"
        "}\n");
  // A keyed table leaves an absent cell out of its object.
  CHECK(FormatJson(KeyedReport()) ==
        "{\n"
        "  \"schema\": \"tally/1\",\n"
        "  \"tally_version\": \"" TALLY_VERSION
        "\",\n"
        "  \"models\": {\n"
        "    \"gpt2\": {\n"
        "      \"params\": 124439808,\n"
        "      \"peak\": {\n"
        "        \"bf16\": 1.5\n"
        "      }\n"
        "    },\n"
        "    \"pythia-1.4b\": {\n"
        "      \"params\": 7\n"
        "    }\n"
        "  }\n"
        "}\n");
}

TEST_CASE("format: a table node in CSV and TSV: its header of keys and a line per row") {
  CHECK(FormatDelimited(TableReport(), ',') == "name,size,time.median,note\na,2048,0.0015,\"x,y\"\nbb,1,,\n");
  CHECK(FormatDelimited(TableReport(), '\t') == "name\tsize\ttime.median\tnote\na\t2048\t0.0015\tx,y\nbb\t1\t\t\n");
  CHECK(FormatDelimited(KeyedReport(), ',') == "name,params,peak.bf16\ngpt2,124439808,1.5\npythia-1.4b,7,\n");
}

TEST_CASE("format: --get reads a table's cells by row name or index") {
  CHECK(GetKey(TableReport(), "run.results.0.size") == "2048\n");
  CHECK(GetKey(TableReport(), "run.results.1.note") == "\n");
  CHECK(GetKey(KeyedReport(), "models.pythia-1.4b.params") == "7\n");
  CHECK(GetKey(KeyedReport(), "models.gpt2.peak.bf16") == "1.5\n");
  CHECK_THROWS_WITH_AS(GetKey(TableReport(), "run.results.1.time.median"),
                       "tally: error: --get: 'run.results.1.time.median' has no value", InputError);
  CHECK_THROWS_WITH_AS(GetKey(KeyedReport(), "models.gpt2.parms"),
                       "tally: error: --get: unknown key 'models.gpt2.parms' (did you mean 'models.gpt2.params'?); "
                       "'--format json' shows every key",
                       InputError);
}

// The rows of `report`'s table at `path` through MakeTableWriter, one at a time.
std::string Streamed(const Report& report, const std::string& path, StreamFormat format) {
  const Table& table = *report.Find(path)->table;
  std::ostringstream out;
  std::unique_ptr<TableWriter> writer = MakeTableWriter(out, format, path, table);
  for (const std::vector<Cell>& row : table.rows) writer->Row(row);
  writer->End();
  return out.str();
}

TEST_CASE("format: a table streamed row by row equals the whole-document output") {
  for (const auto& entry : std::vector<std::pair<Report, std::string>>{
           {SweepReport(), "sweep"}, {KeyedReport(), "models"}, {TableReport(), "run.results"}}) {
    const Report& report = entry.first;
    const std::string& path = entry.second;  // not a structured binding: clang 14 cannot CAPTURE one
    CAPTURE(path);
    CHECK(Streamed(report, path, StreamFormat::kCsv) == FormatDelimited(report, ','));
    CHECK(Streamed(report, path, StreamFormat::kTsv) == FormatDelimited(report, '\t'));
  }
  // JSON: a document holding only the table, as FormatJson writes it (TableReport's also has a leaf).
  CHECK(Streamed(SweepReport(), "sweep", StreamFormat::kJson) == FormatJson(SweepReport()));
  CHECK(Streamed(KeyedReport(), "models", StreamFormat::kJson) == FormatJson(KeyedReport()));
  Report nested;
  nested.AddTable("run.results", "", TableReport().Find("run.results")->table->columns).rows =
      TableReport().Find("run.results")->table->rows;
  CHECK(Streamed(nested, "run.results", StreamFormat::kJson) == FormatJson(nested));
  Report empty;
  empty.AddTable("sweep", "", {{.key = "status"}});
  CHECK(Streamed(empty, "sweep", StreamFormat::kJson) == FormatJson(empty));
  // JSON Lines: one compact object per row, report keys kept whole, no value as null.
  CHECK(Streamed(SweepReport(), "sweep", StreamFormat::kJsonl) ==
        "{\"settings.batch\":\"1\",\"status\":\"ok\",\"params.total\":124439808}\n"
        "{\"settings.batch\":\"0\",\"status\":\"invalid: --batch: must be positive\",\"params.total\":null}\n");
}

TEST_CASE("format: names of formats and unit systems") {
  CHECK(ParseOutputFormat("csv") == OutputFormat::kCsv);
  CHECK_THROWS_WITH_AS(ParseOutputFormat("jsn"),
                       "tally: error: --format: unknown format 'jsn' (did you mean 'json'?); formats are table, "
                       "json, csv, tsv",
                       InputError);
  CHECK(ParseUnitSystem("si") == UnitSystem::kSi);
  CHECK_THROWS_AS(ParseUnitSystem("metric"), InputError);
}

// `estimate` (every key the others print) goes through RunTally's cross-format checks; params, flops
// and memory are parsed here only, which keeps the sanitizer pass of ~70 presets within minutes.
std::string Run(const std::vector<std::string>& args, int& code) {
  const testing::TallyRun run = args[0] == "estimate" ? testing::RunTally(args) : testing::RunRaw(args);
  code = run.code;
  return run.out;
}

TEST_CASE("format: every command's JSON parses and CSV has constant columns") {
  for (const std::string& name : PresetNames()) {
    for (const char* command : {"estimate", "params", "flops", "memory"}) {
      CAPTURE(name);
      CAPTURE(command);
      int code = -1;
      nlohmann::json doc = nlohmann::json::parse(Run({command, name, "--format", "json"}, code));
      CHECK(code == 0);
      CHECK(doc["schema"] == "tally/1");
      CHECK(doc["model"]["name"] == name);
      if (std::string(command) == "estimate" || std::string(command) == "params") {
        CHECK(doc["params"]["total"].is_number_unsigned());
      }
      if (std::string(command) == "estimate" || std::string(command) == "flops") {
        CHECK(doc["flops"]["forward"].is_number_unsigned());
      }
      if (std::string(command) == "estimate" || std::string(command) == "memory") {
        CHECK(doc["memory"]["train"]["total"].is_number_unsigned());
        CHECK(doc["memory"]["infer"]["total"].is_number_unsigned());
      }
      for (const char* extra : {"", "--layers"}) {
        std::vector<std::string> args = {command, name, "--format", "csv"};
        if (*extra) args.push_back(extra);
        std::istringstream csv(Run(args, code));
        CHECK(code == 0);
        std::string line;
        int rows = 0;
        size_t columns = 0;
        while (std::getline(csv, line)) {
          size_t commas = 0;
          bool quoted = false;
          for (char c : line) {
            if (c == '"') quoted = !quoted;
            if (c == ',' && !quoted) ++commas;
          }
          if (rows++ == 0) columns = commas;
          CHECK(commas == columns);
        }
        CHECK(rows >= 2);
      }
    }
  }
  int code = -1;
  nlohmann::json models = nlohmann::json::parse(Run({"models", "--format", "json"}, code));
  CHECK(code == 0);
  CHECK(models["models"]["gpt2-small"]["params"] == 124'439'808);
}

}  // namespace
}  // namespace tally
