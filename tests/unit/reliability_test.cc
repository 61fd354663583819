// Issue 20's reproducers, one test each, grouped by class: no impossible number printed, linear
// time on large inputs, bounded measurement, terminal-safe text, the right thing blamed, no hang.
// Each failed on the code before the fix; expected values are derived in the comments.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/app.h"
#include "config/hardware.h"
#include "config/load_config.h"
#include "config/resolve.h"
#include "estimate/estimate_graph.h"
#include "graph/build_graph.h"
#include "report/format.h"
#include "report/report.h"
#include "unit/test_util.h"
#include "util/error.h"
#include "util/text.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

struct Run {
  int code = 0;
  std::string out, err;
};

Run Tally(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Run r;
  r.code = RunMain(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// A failing run: exit 2, nothing on stdout, exactly `message` on stderr.
void CheckRefused(const std::vector<std::string>& args, const std::string& message) {
  const Run r = Tally(args);
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == message + "\n");
}

double Seconds(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const std::vector<std::string> kTime = {"time", "gpt2-small", "--hardware", "h100-sxm"};

std::vector<std::string> With(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

Report EstimateGraphForTest(const ModelSpec& spec) {
  Evaluation evaluation(spec);
  return EstimateReport(evaluation, ResolveSettings({}, spec), {});
}

// A hardware file in the configs/hardware schema; `extra` replaces nothing, it adds keys.
std::string Hardware(const std::string& bandwidth, const std::string& extra = "") {
  return "memory_bytes: 85899345920\nmemory_bandwidth: " + bandwidth + "\npeak_flops:\n  bf16: 989.5e12\n" + extra;
}

}  // namespace

TEST_CASE("reliability: the report refuses a non-finite number as tally's own bug") {
  Report r;
  CHECK_THROWS_AS(r.Set("x", "x", std::numeric_limits<double>::infinity(), Unit::kRatio), std::logic_error);
  CHECK_THROWS_AS(r.Set("y", "y", std::nan(""), Unit::kRatio), std::logic_error);
  ReportNode& g = r.Group("g");
  CHECK_THROWS_AS(g.AddLeaf("z", "z", -std::numeric_limits<double>::infinity(), Unit::kRatio), std::logic_error);
  CHECK_NOTHROW(r.Set("finite", "finite", 1e308, Unit::kRatio));
}

TEST_CASE("reliability: time flags that would give an impossible number are refused, naming the flag") {
  // 1e300 tokens x 6 x 124M parameters overflows a double: FLOPs inf, MFU NaN before.
  CheckRefused(With(kTime, {"--tokens", "1e300"}),
               "tally: error: --tokens: out of range: the FLOPs in all would be infinite");
  CheckRefused(With(kTime, {"--mfu", "1e-320"}),
               "tally: error: --mfu: '1e-320' is not a ratio in [1e-6, 1], such as 0.4");
  CheckRefused(With(kTime, {"--tokens", "5e-324", "--format", "json"}),
               "tally: error: --tokens: '5e-324' is not at least 1 token, such as 2T, 300B or 1.5e12");
  // gpt2-small: about 2.2 us of one H100 per token at MFU 0.4, so 1e30 tokens in 8.64 s need
  // ~2.5e23 devices, past 2^63 (the conversion to an integer was undefined behaviour).
  CheckRefused(With(kTime, {"--tokens", "1e30", "--days", "0.0001"}),
               "tally: error: --tokens: 1e+30 tokens in 8.64 s need more than 2^63 devices");
  // 1 PFLOP/s is above the H100 SXM's dense bf16 peak of 989.5 TFLOP/s: an MFU of 1.01.
  CheckRefused(With(kTime, {"--achieved", "1P", "--tokens", "1e9"}),
               "tally: error: --achieved: 1e+15 FLOP/s is above the device's dense peak of 9.895e+14 FLOP/s");
}

TEST_CASE("reliability: one token in a day needs one device, not zero") {
  const Run r = Tally(With(kTime, {"--tokens", "1", "--days", "1", "--get", "time.gpus"}));
  CHECK(r.code == 0);
  CHECK(r.out == "1\n");
}

TEST_CASE("reliability: a hardware file with a zero bandwidth or an achieved rate of 0 or above the peak") {
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("0")),
                       "hw.yaml:2:19: error: 'memory_bandwidth' must be a number >= 1 such as 989.5e12, got '0'",
                       InputError);
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("3.35e12", "achieved_flops: {bf16: 0}\n")),
                       "hw.yaml:5:24: error: 'bf16' must be a number >= 1 such as 989.5e12, got '0'", InputError);
  CHECK_THROWS_WITH_AS(LoadHardwareText("hw.yaml", Hardware("3.35e12", "achieved_flops: {bf16: 1e15}\n")),
                       "hw.yaml:5:24: error: 'bf16' in 'achieved_flops' (1e15) is above its 'peak_flops' (989.5e12)",
                       InputError);
  CHECK(LoadHardwareText("hw.yaml", Hardware("3.35e12", "achieved_flops: {bf16: 400e12}\n"))
            .achieved_flops.at(GemmDType::kBf16) == 400e12);
}

TEST_CASE("reliability: fit says when the answer is its search cap, not the memory limit") {
  const Run r = Tally({"fit", "seed-mlp", "--memory", "9000000TB"});
  CHECK(r.code == 0);
  CHECK(r.err == "tally: warning: the search stops at 2^40; the memory limit allows more\n");
}

TEST_CASE("reliability: dtypes --value inf stores NaN in e4m3 and prints no NaN error") {
  const Run r = Tally({"dtypes", "--value", "inf"});
  CHECK(r.code == 0);
  // e4m3 (OCP FP8, E4M3): no infinity encoding, the all-ones pattern is NaN; int8 saturates at 127.
  CHECK(r.out.find("  fp8_e4m3     8  1  4   3        NaN               -  overflow to NaN\n") != std::string::npos);
  CHECK(r.out.find("  int8         8  1  0   7        127               -  saturated\n") != std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
  const Run json = Tally({"dtypes", "--value", "inf", "--format", "json"});
  CHECK(json.out.find("null") == std::string::npos);
  CHECK(json.out.find("\"value\": \"inf\"") != std::string::npos);
}

TEST_CASE("reliability: check shows no percentage of a limit near zero") {
  const Run r = Tally({"check", "gpt2-small", "--max", "flops.approx.six_nd_ratio=1e-320"});
  CHECK(r.code == 1);
  CHECK(r.out.find("inf") == std::string::npos);
  CHECK(r.out.find("false  -1.674\n") != std::string::npos);  // the margin: the limit is 1.674 short
}

// Seconds to read a config.json with `n` keys tally ignores.
double ReadKeys(int n, std::string* text = nullptr) {
  std::string json =
      "{\"model_type\": \"gpt2\", \"vocab_size\": 100, \"n_positions\": 64, \"n_embd\": 64, "
      "\"n_layer\": 2, \"n_head\": 4";
  for (int i = 0; i < n; ++i) json += ", \"unused_" + std::to_string(i) + "\": 1";
  const auto start = std::chrono::steady_clock::now();
  CHECK(LoadModelText("many/config.json", json + "}").transformer.d_model == 64);
  if (text != nullptr) *text = json;
  return Seconds(start);
}

TEST_CASE("reliability: 100,000 keys are read in linear time") {
  // Before: every key was compared with every earlier one, 5e9 comparisons (10 s); now a hash set.
  // Ten times the keys must take about ten times as long, not a hundred (the quadratic ratio):
  // a ratio, not a wall-time bound, so that a loaded machine or a sanitizer build cannot fail it.
  std::string json;
  const double small = ReadKeys(10000), large = ReadKeys(100000, &json);
  CAPTURE(small);
  CAPTURE(large);
  CHECK(large < 30 * small + 0.5);
  // The duplicate is found at the end all the same: the first "unused_0" is on line 1, column 105.
  CHECK_THROWS_WITH_AS(LoadModelText("many/config.json", json + ",\n\"unused_0\": 2}"),
                       "many/config.json:2:1: error: duplicate key 'unused_0' (first at 1:103)", InputError);
}

// Seconds to refuse a budget whose max map has `n` keys and then a duplicate of the first.
double ReadBudgetKeys(int n) {
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-budget-" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(file);
    out << "model: gpt2-small\nmax:\n";
    for (int i = 0; i < n; ++i) out << "  k" << i << ": 1\n";
    out << "  k0: 2\n";  // line n + 3
  }
  const auto start = std::chrono::steady_clock::now();
  CheckRefused({"check", "--budget", file.string()},
               file.string() + ":" + std::to_string(n + 3) + ":3: error: duplicate key 'k0' (first at 3:3)");
  const double seconds = Seconds(start);
  std::filesystem::remove(file);
  return seconds;
}

TEST_CASE("reliability: a budget's max map of 100,000 keys is read in linear time") {
  const double small = ReadBudgetKeys(10000), large = ReadBudgetKeys(100000);  // as above: a ratio
  CAPTURE(small);
  CAPTURE(large);
  CHECK(large < 30 * small + 0.5);
}

TEST_CASE("reliability: measure refuses what would exhaust memory or run far past --budget") {
  // 3 x 100000^2 x 4 bytes = 111.76 GiB of fp32 operands, before any allocation.
  const Run big = Tally({"measure", "--sizes", "100000", "--dtype", "fp32"});
  if (big.err.find("OpenBLAS") != std::string::npos) {
    MESSAGE("skipped: no OpenBLAS to measure with");
    return;
  }
  CHECK(big.code == 2);
  CHECK(big.err.rfind("tally: error: --sizes/--shapes: the fp32 GEMM 100000x100000x100000 needs 111.76 GiB for its "
                      "operands; the machine has ",
                      0) == 0);
  // 2 x 8192^2 x 65536 = 8.8e12 FLOPs on one thread: about a minute at any core's fp32 rate, and
  // 4 runs at least. Its 4.5 GiB of operands may exceed a small machine: that refusal is right too.
  const Run slow =
      Tally({"measure", "--shapes", "8192x8192x65536", "--dtype", "fp32", "--threads", "1", "--budget", "0.01"});
  CAPTURE(slow.err);
  CHECK(slow.code == 2);
  CHECK((slow.err.rfind("tally: error: --budget: the fp32 GEMM 8192x8192x65536 takes about ", 0) == 0 ||
         slow.err.rfind("tally: error: --sizes/--shapes: the fp32 GEMM 8192x8192x65536 needs ", 0) == 0));
}

TEST_CASE("reliability: measure runs a repeated dtype once and blames --peak for its own dtype") {
  CheckRefused({"measure", "--peak", "fp99=1e12"},
               "tally: error: --peak: unknown dtype 'fp99' (did you mean 'fp32'?); use one of fp32, fp64, bf16, fp16, "
               "tf32, fp8");
  const Run r = Tally(
      {"measure", "--dtype", "fp32,fp32", "--sizes", "8,8", "--threads", "1", "--budget", "0.001", "--format", "csv"});
  if (r.err.find("OpenBLAS") != std::string::npos) return;
  CHECK(r.code == 0);
  // One header and one row: fp32 once, size 8 once.
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);
}

TEST_CASE("reliability: control characters are escaped in table and CSV output") {
  CHECK(EscapeControl("a\x1b[2Jb\nc\td\re") == "a\\x1B[2Jb\\nc\\td\\re");
  CHECK(EscapeControl("\x7f\xc2\x9b ok \xc3\xa9 \xff") == "\\x7F\\u009B ok \xc3\xa9 \\xFF");
  CHECK(EscapeControl("line\nbreak", true) == "line\nbreak");
  const ModelSpec spec =
      LoadModelText("esc.yaml", "family: sequential\nname: \"\\e[2J\\e[31mred\"\ninput: [16]\nlayers: [relu]\n");
  const Report report = EstimateGraphForTest(spec);
  const std::string table = FormatReport(report, {.format = OutputFormat::kTable});
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find("\\x1B[2J\\x1B[31mred") != std::string::npos);
  const std::string csv = FormatReport(report, {.format = OutputFormat::kCsv});
  CHECK(csv.find('\x1b') == std::string::npos);
  CHECK(csv.find("\\x1B[2J\\x1B[31mred,") != std::string::npos);
}

TEST_CASE("reliability: check's table escapes a model name's control characters") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-esc-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "family: sequential\nname: \"\\e[2Jred\"\ninput: [16]\nlayers: [relu]\n";
  const Run r = Tally({"check", file.string(), "--max", "params.total=1"});
  CHECK(r.code == 0);
  CHECK(r.out.find("\\x1B[2Jred  params.total") != std::string::npos);
  CHECK(r.out.find('\x1b') == std::string::npos);
  std::filesystem::remove(file);
}

TEST_CASE("reliability: a warning on stderr escapes a model name's control characters") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-warn-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "family: transformer\nname: \"x\\e[31m\"\nvocab_size: 100\ncontext_length: 16\nd_model: 64\n"
                         "n_layers: 1\nn_heads: 4\nd_ff: 128\nposition: rope\n";
  const Run w = Tally({"estimate", file.string(), "--seq", "32", "--format", "json"});
  CHECK(w.code == 0);
  CHECK(w.err == "tally: warning: sequence length 32 exceeds the context length 16 of 'x\\x1B[31m'\n");
  std::filesystem::remove(file);
}

TEST_CASE("reliability: a JSON surrogate pair is one character") {
  // Python's json.dumps("x\N{GRINNING FACE}") writes "x\ud83d\ude00"; U+1F600 is F0 9F 98 80 in UTF-8.
  const std::string json =
      "{\"model_type\": \"gpt2\", \"_name_or_path\": \"x\\ud83d\\ude00\", \"vocab_size\": 100, "
      "\"n_positions\": 64, \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4";
  CHECK(LoadModelText("emoji/config.json", json + "}").name == "x\xF0\x9F\x98\x80");
  // Positions after the pair, on its line, stay as written: n_inner's 0 is at column 148.
  CHECK_THROWS_WITH_AS(LoadModelText("emoji/config.json", json + ", \"n_inner\": 0}"),
                       "emoji/config.json:1:148: error: 'n_inner' must be a positive whole number, got '0'",
                       InputError);
  // A lone surrogate is still an error (yaml-cpp's).
  CHECK_THROWS_AS(LoadModelText("lone/config.json", "{\"model_type\": \"gpt2\", \"_name_or_path\": \"\\ud83d\"}"),
                  InputError);
}

TEST_CASE("reliability: UTF-16 text is checked like UTF-8") {
  const std::string config = "family: sequential\ninput: [16]\nlayers: [relu]\n";
  std::string big_endian = "\xFE\xFF";
  for (char c : config) big_endian += std::string{'\0', c};
  CHECK(LoadModelText("be.yaml", big_endian).family == Family::kSequential);
  // An unpaired high surrogate (D800) in UTF-16LE.
  CHECK_THROWS_WITH_AS(
      LoadModelText("lone.yaml", std::string("\xFF\xFEn\0a\0\x00\xD8", 8)),
      "lone.yaml: error: the file is not UTF-16 text (an unpaired surrogate or a code point past U+10FFFF)",
      InputError);
}

TEST_CASE("reliability: tally params with no MODEL names MODEL") {
  CheckRefused({"params"}, "tally: error: MODEL is required; run 'tally params --help' for usage");
}

TEST_CASE("reliability: a budget file's sp is blamed at its line") {
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("tally-sp-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "model: gpt2-small\nsettings: {sp: true}\nmax:\n  params.total: 1B\n";
  CheckRefused({"check", "--budget", file.string()},
               file.string() + ":2:16: error: 'sp': sequence parallelism needs --tp above 1");
  std::filesystem::remove(file);
}

TEST_CASE("reliability: an overflow in an estimator names the config") {
  // d_model 2e9: each block's q, k, v and output projections hold 4 x (2e9)^2 = 1.6e19 weights,
  // which fit in 64 bits one block at a time; two blocks, 3.2e19, are past 2^64 = 1.8e19.
  const std::string yaml =
      "family: transformer\nvocab_size: 50257\ncontext_length: 1024\nd_model: 2000000000\n"
      "n_layers: 2\nn_heads: 4\nd_ff: 3072\n";
  const ModelSpec spec = LoadModelText("big.yaml", yaml);
  // (Its FLOPs at 1,024 tokens overflow first: 2 · 1024 · 2e9 · 6e9 > 2^64.)
  CHECK_THROWS_WITH_AS(EstimateGraphForTest(spec),
                       "big.yaml: error: the FLOPs of 'blocks.0.attn.qkv' would exceed 2^64 - 1 and cannot be "
                       "counted exactly; reduce the model or the batch/sequence",
                       InputError);
}

TEST_CASE("reliability: ./config.json is named after the working directory, not '.'") {
  const std::string json =
      "{\"model_type\": \"gpt2\", \"vocab_size\": 100, \"n_positions\": 64, \"n_embd\": 64, "
      "\"n_layer\": 2, \"n_head\": 4}";
  const std::string cwd = std::filesystem::current_path().filename().string();
  CHECK(LoadModelText("./config.json", json).name == cwd);
  CHECK(LoadModelText("gpt2-tiny/config.json", json).name == "gpt2-tiny");
}

TEST_CASE("reliability: d_model: !!int 64 is the integer 64") {
  const ModelSpec spec = LoadModelText("tagged.yaml",
                                       "family: transformer\nvocab_size: 1000\ncontext_length: 128\n"
                                       "d_model: !!int 64\nn_layers: 2\nn_heads: 4\nd_ff: 256\n");
  CHECK(spec.transformer.d_model == 64);
}

TEST_CASE("reliability: partial_rotary_factor 0.01 rotates int(head_dim x 0.01) = 0 dimensions") {
  // phi: head_dim 2560 / 32 = 80; int(80 x 0.01) = 0 as transformers computes it: no rotation.
  const std::string json =
      "{\"model_type\": \"phi\", \"vocab_size\": 51200, \"hidden_size\": 2560, "
      "\"intermediate_size\": 10240, \"num_hidden_layers\": 2, \"num_attention_heads\": 32, "
      "\"max_position_embeddings\": 2048, \"partial_rotary_factor\": 0.01}";
  const ModelSpec spec = LoadModelText("phi/config.json", json);
  CHECK(spec.transformer.rotary_dim == 0);
  CHECK(spec.transformer.position == PositionKind::kNone);
  const LayerGraph g = ResolvedGraph(spec);
  for (const Layer& l : g.layers) CHECK(l.kind != LayerKind::kRope);
}

TEST_CASE("reliability: sweep keys: the defaults fit either mode, an unknown key fails with every point invalid") {
  const Run infer = Tally({"sweep", "gpt2-small", "--mode", "infer"});
  CHECK(infer.code == 0);
  CHECK(infer.out.rfind("settings.mode,status,params.total,flops.step,memory.train.total,memory.infer.total\n", 0) ==
        0);
  CheckRefused({"sweep", "gpt2-small", "--keys", "nope", "--batch", "0"},
               "tally: error: --keys: unknown key 'nope'; 'tally estimate MODEL --format json' shows every key");
}

TEST_CASE("reliability: a FIFO, a symbolic link loop and a directory are refused at once") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tally-fifo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string fifo = (dir / "fifo.yaml").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(
      LoadModelFile(fifo),
      (fifo + ": error: is not a regular file (a FIFO, a device or a socket); configs are read from files").c_str(),
      InputError);
  CHECK(Seconds(start) < 5.0);
  std::filesystem::create_symlink("b.yaml", dir / "a.yaml");
  std::filesystem::create_symlink("a.yaml", dir / "b.yaml");
  const std::string loop = (dir / "a.yaml").string();
  CHECK_THROWS_WITH_AS(LoadModelFile(loop), (loop + ": error: too many symbolic links (is there a link loop?)").c_str(),
                       InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace tally
