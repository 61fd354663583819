// The bad-input corpus: each file in tests/data/bad/ holds one defect, and its full one-line
// message (FILE:LINE:COL: error: ...) is asserted here, as ninja's ParserTest.Errors does.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include "cli/app.h"
#include "config/load_config.h"
#include "config/syntax_scan.h"
#include "config/yaml_reader.h"
#include "graph/build_graph.h"
#include "unit/test_util.h"
#include "util/error.h"

namespace tally {
namespace {

using testing::ResolvedGraph;

// Shape chaining is checked by the graph builder, so some defects survive loading.
enum class Stage { kLoad, kBuild };

struct BadCase {
  const char* file;     // under tests/data/bad/
  Stage stage;          // where the defect must be reported
  const char* message;  // the diagnostic after "PATH:"
};

// Every position is 1-based and points at the offending key or value; a missing key points at
// the map that lacks it.
const BadCase kCases[] = {
    // Syntax, through yaml-cpp for both YAML and JSON.
    {"yaml_syntax_error.yaml", Stage::kLoad, "3:11: error: syntax error: illegal map value"},
    {"yaml_tab_indent.yaml", Stage::kLoad, "2:1: error: syntax error: illegal tab when looking for indentation"},
    {"json_syntax_error.json", Stage::kLoad, "1:1: error: syntax error: '{' is never closed"},
    // Where the mistake is, not where yaml-cpp notices it (the next line), or would accept it.
    {"yaml_unclosed_bracket.yaml", Stage::kLoad, "2:10: error: syntax error: '[' is never closed"},
    {"yaml_unterminated_quote.yaml", Stage::kLoad, "1:9: error: syntax error: '\"' is never closed"},
    {"yaml_unterminated_single_quote.yaml", Stage::kLoad, "2:7: error: syntax error: \"'\" is never closed"},
    {"json_missing_comma.json", Stage::kLoad, "3:17: error: syntax error: expected ',' or '}'"},
    {"json_missing_colon.json", Stage::kLoad, "2:11: error: syntax error: expected ':' after the key"},
    {"json_mismatched_bracket.json", Stage::kLoad, "2:18: error: syntax error: '}' does not close the '[' at 2:13"},
    {"json_unterminated_string.json", Stage::kLoad,
     "2:13: error: syntax error: '\"' is never closed (a JSON string ends on its line)"},
    {"json_bad_value.json", Stage::kLoad, "3:14: error: syntax error: expected a value, got '@'"},
    // The shape of the document.
    {"empty.yaml", Stage::kLoad, "1:1: error: the config is empty"},
    {"root_is_list.yaml", Stage::kLoad, "1:1: error: a model config must be a map of keys to values, got a list"},
    // Hugging Face config.json: unknown keys are ignored, used ones checked.
    {"hf_missing_vocab_size.json", Stage::kLoad, "1:1: error: missing required key 'vocab_size' in 'config.json'"},
    {"hf_unknown_model_type.json", Stage::kLoad,
     "3:17: error: unsupported model_type 'xlnet' (and not a generic decoder: no 'hidden_size', "
     "'num_attention_heads', 'num_hidden_layers', 'intermediate_size' or 'vocab_size'); tally reads "
     "apertus, bailing_moe_v2, bart, bert, bloom, cohere, cohere2, dbrx, deberta-v2, deepseek_v2, "
     "deepseek_v3, distilbert, dots1, ernie4_5, ernie4_5_moe, exaone, exaone4, falcon, falcon_h1, "
     "falcon_mamba, gemma, gemma2, gemma3, gemma3_text, gemma3n, gemma3n_text, glm, glm4, glm4_moe, gpt2, "
     "gpt_bigcode, gpt_neox, "
     "gpt_oss, gptj, granite, granitemoe, granitemoehybrid, hunyuan_v1_dense, hunyuan_v1_moe, idefics3, "
     "internlm2, internvl, jamba, kimi_k2, kimi_linear, lfm2, llama, llama4, llama4_text, llava, mamba, "
     "mamba2, minicpm, minimax, minimax_m1, minimax_m2, mistral, mistral3, mixtral, mllama, modernbert, mt5, "
     "nemotron, nemotron_h, "
     "olmo, olmo2, olmo3, olmoe, opt, phi, phi-msft, phi3, phimoe, qwen2, qwen2_5_vl, qwen2_moe, qwen2_vl, "
     "qwen3, qwen3_moe, qwen3_next, qwen3_vl, qwen3_vl_moe, recurrent_gemma, RefinedWeb, RefinedWebModel, "
     "roberta, seed_oss, smollm3, smolvlm, stablelm, starcoder2, t5, umt5, vit, whisper, xlm-roberta, "
     "zamba2; for another model, write a tally YAML config (docs/models.md, \"Model configs\")"},
    {"hf_t5_missing_d_kv.json", Stage::kLoad, "1:1: error: missing required key 'd_kv' in 'config.json'"},
    {"hf_quoted_heads.json", Stage::kLoad,
     "7:26: error: 'num_attention_heads' must be a positive whole number, got the string \"32\""},
    {"hf_kv_heads_not_divisible.json", Stage::kLoad,
     "8:26: error: the 32 attention heads are not divisible by the 6 key/value heads"},
    {"hf_experts_top_k.json", Stage::kLoad, "11:26: error: 'num_experts_per_tok' is more than 'num_local_experts'"},
    {"missing_family.yaml", Stage::kLoad,
     "1:1: error: missing required key 'family' in 'model' (transformer or sequential)"},
    {"unknown_family.yaml", Stage::kLoad,
     "1:9: error: 'family' must be transformer or sequential, got 'transfromer' (did you mean "
     "'transformer'?)"},
    // Keys.
    {"unknown_key_n_head.yaml", Stage::kLoad, "6:1: error: unknown key 'n_head' in 'model' (did you mean 'n_heads'?)"},
    {"json_unknown_key.json", Stage::kLoad, "6:3: error: unknown key 'n_layer' in 'model' (did you mean 'n_layers'?)"},
    {"dup_key.yaml", Stage::kLoad, "7:1: error: duplicate key 'n_heads' (first at 6:1)"},
    {"missing_n_layers.yaml", Stage::kLoad, "1:1: error: missing required key 'n_layers' in 'model'"},
    // Values: type, range, size.
    {"quoted_int.yaml", Stage::kLoad, "5:11: error: 'n_layers' must be a positive whole number, got the string \"12\""},
    {"list_for_int.yaml", Stage::kLoad, "5:11: error: 'n_layers' must be a positive whole number, got a list"},
    {"zero_size.yaml", Stage::kLoad, "7:7: error: 'd_ff' must be a positive whole number, got '0'"},
    {"negative_size.yaml", Stage::kLoad, "7:7: error: 'd_ff' must be a positive whole number, got '-256'"},
    {"fractional_size.yaml", Stage::kLoad, "5:11: error: 'n_layers' must be a positive whole number, got '12.5'"},
    {"huge_number.yaml", Stage::kLoad,
     "2:13: error: 'vocab_size' is too large: 9223372036854775808 (at most 2^63 - 1)"},
    {"huge_number_over_u64.yaml", Stage::kLoad,
     "2:13: error: 'vocab_size' is too large: 100000000000000000000 (at most 2^63 - 1)"},
    {"bad_enum_mlp.yaml", Stage::kLoad,
     "8:6: error: 'mlp' must be one of gelu, relu, swiglu, geglu, relu2, xielu, got 'swigl' (did you mean 'swiglu'?)"},
    {"bad_bool.yaml", Stage::kLoad, "8:7: error: 'bias' must be true or false, got 'yes'"},
    {"dropout_out_of_range.yaml", Stage::kLoad, "8:10: error: 'dropout' must be a probability in [0, 1), got '1.5'"},
    // Transformer rules across keys, reported at the second key.
    {"heads_not_divisible.yaml", Stage::kLoad,
     "6:10: error: 'd_model' (64) is not divisible by 'n_heads' (5); set 'head_dim' to use another head "
     "size"},
    {"kv_heads_not_divisible.yaml", Stage::kLoad, "8:13: error: 'n_heads' (4) is not divisible by 'n_kv_heads' (3)"},
    // Sequential layers.
    {"unknown_layer.yaml", Stage::kLoad,
     "5:5: error: unknown layer 'rleu' (did you mean 'relu'?); layers are linear, conv2d, pool, "
     "adaptive_pool, flatten, relu, gelu, silu, tanh, sigmoid, relu6, hardswish, hardsigmoid, layernorm, "
     "batchnorm, dropout, repeat, residual, parallel, patch_embed, encoder, class_token"},
    {"unknown_layer_option.yaml", Stage::kLoad, "4:22: error: unknown key 'bais' in 'linear' (did you mean 'bias'?)"},
    {"layer_is_list.yaml", Stage::kLoad,
     "4:5: error: a layer must be a name such as 'relu' or a map with one key such as "
     "'linear: {out: 10}', got a list"},
    {"linear_missing_out.yaml", Stage::kLoad, "4:13: error: missing required key 'out' in 'linear'"},
    {"pool_missing_kernel.yaml", Stage::kLoad, "4:11: error: missing required key 'kernel' in 'pool'"},
    {"input_not_list.yaml", Stage::kLoad,
     "2:8: error: 'input' must be one sample's shape, such as [512] or [3, 32, 32], got '16'"},
    {"repeat_too_many_layers.yaml", Stage::kLoad, "5:14: error: 'repeat' expands to more than 100000 layers"},
    // Shapes that do not chain: found by the graph builder, reported at the layer or its `in`.
    {"linear_in_mismatch.yaml", Stage::kBuild,
     "5:18: error: linear 'in' is 16 but its input gives 8 (input shape [8])"},
    {"conv_after_flatten.yaml", Stage::kBuild,
     "5:5: error: conv2d needs a [channels, height, width] input, but the previous layer gives [192]"},
    {"conv_groups_not_dividing.yaml", Stage::kBuild,
     "4:5: error: conv2d groups (2) must divide both the 3 input and 4 output channels"},
    {"kernel_larger_than_input.yaml", Stage::kBuild, "4:5: error: conv2d kernel 7 is larger than its padded input 6"},
    // One document per config: YAML streams and trailing JSON are not silently cut short.
    {"json_trailing_content.json", Stage::kLoad,
     "10:1: error: a config holds one document, but a second one starts here"},
    {"multiple_documents.yaml", Stage::kLoad, "5:1: error: a config holds one document, but a second one starts here"},
    {"empty_layers.yaml", Stage::kLoad, "3:9: error: 'layers' must be a non-empty list of layers, got an empty list"},
    {"input_empty_list.yaml", Stage::kLoad,
     "2:8: error: 'input' must be one sample's shape, such as [512] or [3, 32, 32], got an empty list"},
    // A forgotten '-' merges two layers into one map.
    {"layer_map_two_keys.yaml", Stage::kLoad,
     "4:5: error: a layer is a map with one key, got the keys 'linear', 'relu' (is a '-' missing before "
     "the second?)"},
    {"layer_name_not_scalar.yaml", Stage::kLoad,
     "4:6: error: a layer name must be a plain name such as 'linear', got a list"},
    // Plain layers past the limit are caught too, not only repeats.
    {"repeat_limit_bypassed.yaml", Stage::kLoad, "5:5: error: the model has more than 100000 layers"},
    // Numbers that are not numbers: NaN, infinity, out of double range, hex, booleans, nothing.
    {"nan_size.yaml", Stage::kLoad, "4:10: error: 'd_model' must be a positive whole number, got '.nan'"},
    {"inf_size.yaml", Stage::kLoad, "5:11: error: 'n_layers' must be a positive whole number, got '.inf'"},
    {"nan_dropout.yaml", Stage::kLoad, "8:10: error: 'dropout' must be a probability in [0, 1), got 'nan'"},
    {"float_out_of_range.yaml", Stage::kLoad, "8:10: error: 'dropout' must be a probability in [0, 1), got '1e400'"},
    {"hex_number.yaml", Stage::kLoad, "4:10: error: 'd_model' must be a positive whole number, got '0x40'"},
    {"bool_for_int.yaml", Stage::kLoad, "5:11: error: 'n_layers' must be a positive whole number, got 'true'"},
    {"null_value.yaml", Stage::kLoad, "6:1: error: 'n_layers' must be a positive whole number, got nothing (null)"},
    {"hf_negative_layers.json", Stage::kLoad,
     "6:24: error: 'num_hidden_layers' must be a positive whole number, got '-32'"},
    {"hf_nan_rotary_factor.json", Stage::kLoad,
     "8:28: error: 'partial_rotary_factor' must be a fraction in (0, 1], got 'NaN'"},
    // Not text: binary garbage (a gzip stream), Latin-1, a NUL byte.
    {"binary_garbage.bin", Stage::kLoad, "1:1: error: the file is not UTF-8 text (byte 0x1F)"},
    {"non_utf8.yaml", Stage::kLoad, "1:10: error: the file is not UTF-8 text (byte 0xE9)"},
    {"nul_byte.yaml", Stage::kLoad, "5:12: error: the file is not UTF-8 text (byte 0x00)"},
    // Found by fuzzing: yaml-cpp 0.7 looped forever, allocating, on a stray ','.
    {"stray_comma.yaml", Stage::kLoad, "1:1: error: syntax error: unexpected ','"},
    {"json_stray_comma.json", Stage::kLoad, "4:2: error: syntax error: unexpected ','"},
    // Found by fuzzing: a newline in a quoted key made the message two lines.
    {"quoted_key_newline.yaml", Stage::kLoad,
     "5:1: error: unknown key 'n_\\nlayers' in 'model' (did you mean 'n_layers'?)"},
    {"key_not_scalar.yaml", Stage::kLoad, "4:1: error: keys must be plain names"},
    {"undefined_alias.yaml", Stage::kLoad, "4:10: error: syntax error: the referenced anchor is not defined"},
    // Nesting past yaml-cpp's depth guard, reported at the value that holds it.
    {"deep_nesting.yaml", Stage::kLoad, "2:13: error: syntax error: values are nested too deeply"},
    {"deep_nesting_json.json", Stage::kLoad, "1:39: error: syntax error: values are nested too deeply"},
    // Values that do not fit the rest of the model.
    {"hf_heads_not_dividing_hidden.json", Stage::kLoad,
     "7:26: error: the hidden size (4096) is not divisible by the number of heads (30)"},
    {"moe_top_k_too_large.yaml", Stage::kLoad, "8:26: error: 'top_k' (3) is more than the 2 experts"},
    {"moe_shared_gate_without_shared.yaml", Stage::kLoad,
     "8:42: error: 'shared_gate' gates the shared experts: give 'shared_d_ff'"},
    {"rotary_dim_too_large.yaml", Stage::kLoad,
     "9:13: error: 'rotary_dim' (32) is larger than the head dimension (16)"},
    {"position_offset_needs_learned.yaml", Stage::kLoad, "9:18: error: 'position_offset' needs 'position: learned'"},
    {"conv_stride_zero.yaml", Stage::kLoad, "4:41: error: 'stride' must be a positive whole number, got '0'"},
    {"repeat_zero_times.yaml", Stage::kLoad, "4:21: error: 'times' must be a positive whole number, got '0'"},
    {"pool_kernel_too_large.yaml", Stage::kBuild, "4:5: error: pool kernel 9 is larger than its padded input 8"},
    // JSON's trailing comma, which yaml-cpp's flow style would accept.
    {"json_trailing_comma.json", Stage::kLoad, "8:14: error: syntax error: a trailing ',' is not allowed in JSON"},
    // A count past 2^64 names the file (which of its sizes is to blame is a product, not a key).
    {"params_overflow.yaml", Stage::kBuild,
     " error: parameters of 'embed.tokens' would exceed 2^64 - 1 and cannot be counted exactly; reduce "
     "the model or the batch/sequence"},
    {"input_elements_overflow.yaml", Stage::kBuild,
     " error: a count of 'layers.0' would exceed 2^64 - 1 and cannot be counted exactly; reduce the "
     "model or the batch/sequence"},
    // Issue 20: blame the key the file has (GPT-2 and BLOOM say n_head), describe a tagged value as
    // tagged, refuse what PyTorch refuses, and check UTF-16 text like UTF-8.
    {"hf_gpt2_heads_not_dividing.json", Stage::kLoad,
     "7:13: error: the hidden size (768) is not divisible by the number of heads (7)"},
    {"hf_bloom_heads_not_dividing.json", Stage::kLoad,
     "6:13: error: the hidden size (1024) is not divisible by the number of heads (24)"},
    {"tagged_str_size.yaml", Stage::kLoad,
     "4:10: error: 'd_model' must be a positive whole number, got '64' tagged !!str"},
    // torch.nn.MaxPool2d(3, padding=2): "pad should be at most half of effective kernel size".
    {"pool_padding_over_half.yaml", Stage::kBuild,
     "4:5: error: pool padding 2 is more than half its kernel 3 (PyTorch allows at most kernel / 2, rounded down)"},
    {"utf16_control_char.yaml", Stage::kLoad, "2:9: error: the file is not UTF-16 text (character U+001B)"},
};

std::string BadPath(const char* file) { return std::string(TALLY_TEST_DATA) + "/bad/" + file; }

void CheckCase(const BadCase& c) {
  const std::string path = BadPath(c.file);
  const std::string expected = path + ":" + c.message;
  CAPTURE(path);
  if (c.stage == Stage::kLoad) {
    CHECK_THROWS_WITH_AS(LoadModelFile(path), expected.c_str(), InputError);
    return;
  }
  // A build-stage defect must load cleanly, so the row also pins down where it is caught.
  ModelSpec spec;
  REQUIRE_NOTHROW(spec = LoadModelFile(path));
  CHECK_THROWS_WITH_AS(ResolvedGraph(spec), expected.c_str(), InputError);
}

std::vector<std::string> FilesUnder(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST_CASE("config errors: each bad file gives its full message") {
  for (const BadCase& c : kCases) CheckCase(c);
}

// What a user sees: `tally params FILE` exits 2 with one line on stderr that names the file and
// nothing on stdout, at once. The bound is a sanity check against hangs, not a benchmark.
void CheckCommandLine(const std::string& path) {
  CAPTURE(path);
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  const int code = RunMain({"params", path}, out, err);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  CHECK(code == 2);
  CHECK(out.str().empty());
  const std::string text = err.str();
  CAPTURE(text);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(!text.empty());
  CHECK(text.back() == '\n');
  CHECK(text.rfind(path + ":", 0) == 0);
  CHECK(elapsed.count() < 1.0);
}

TEST_CASE("config errors: on the command line, each bad file exits 2 with one line naming it") {
  for (const BadCase& c : kCases) CheckCommandLine(BadPath(c.file));
}

// Defects git cannot hold: made in a scratch directory for the test, removed after it.
class ScratchDir {
 public:
  ScratchDir() : path_(std::filesystem::temp_directory_path() / ("tally-bad-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::permissions(path_ / "unreadable.yaml", std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void CheckMade(const std::string& path, const std::string& message) {
  const std::string expected = path + ": error: " + message;
  CHECK_THROWS_WITH_AS(LoadModelFile(path), expected.c_str(), InputError);
  CheckCommandLine(path);
}

TEST_CASE("config errors: a directory, an unreadable file, an enormous file") {
  ScratchDir dir;
  SUBCASE("a directory instead of a file") {
    std::filesystem::create_directory(dir / "config.yaml");
    CheckMade(dir / "config.yaml", "is a directory, not a config file");
  }
  SUBCASE("a missing file") { CheckMade(dir / "missing.yaml", "no such file"); }
  SUBCASE("an unreadable file") {
    // root reads any file whatever its mode, so there is nothing to test as root.
    if (::geteuid() == 0) {
      MESSAGE("skipped: running as root, which can read a file with mode 000");
      return;
    }
    std::ofstream(dir / "unreadable.yaml") << "family: sequential\ninput: [16]\nlayers: [relu]\n";
    std::filesystem::permissions(dir / "unreadable.yaml", std::filesystem::perms::none);
    CheckMade(dir / "unreadable.yaml", "permission denied");
  }
  SUBCASE("an enormous file") {
    // A valid config followed by 17 MiB of comments: refused by size before it is parsed.
    std::ofstream big(dir / "enormous.yaml", std::ios::binary);
    big << "family: sequential\ninput: [16]\nlayers: [relu]\n";
    const std::string comment = "#" + std::string(1022, 'x') + "\n";
    for (int i = 0; i < 17 * 1024; ++i) big << comment;
    big.close();
    CheckMade(dir / "enormous.yaml", "is larger than 16 MiB, the most a config file may be");
  }
}

// The UTF-8 check stops at what is not text, not at other encodings yaml-cpp decodes.
TEST_CASE("config errors: UTF-16 with a byte order mark, and UTF-8 with one, are text") {
  const std::string config = "family: sequential\ninput: [16]\nlayers: [relu]\n";
  std::string utf16 = "\xFF\xFE";  // UTF-16LE: each ASCII character, then a zero byte
  for (char c : config) utf16 += std::string{c, '\0'};
  CHECK(LoadModelText("utf16.yaml", utf16).family == Family::kSequential);
  CHECK(LoadModelText("bom.yaml", "\xEF\xBB\xBF" + config).family == Family::kSequential);
  CHECK_THROWS_WITH_AS(LoadModelText("latin1.yaml", "name: caf\xE9\n" + config),
                       "latin1.yaml:1:10: error: the file is not UTF-8 text (byte 0xE9)", InputError);
}

// Found by fuzzing: a character device reads forever; only regular files are read.
// Issue 28: a file mistaken for a config (tally params /etc/passwd) is quoted up to 80 bytes, not whole.
TEST_CASE("config errors: a quote of the input stops at 80 bytes") {
  std::string text, folded;  // 40 passwd-like lines: one plain scalar, its lines joined by spaces
  for (int i = 0; i < 40; ++i) {
    const std::string line = "user" + std::to_string(i) + ":x:" + std::to_string(1000 + i) + ":100::/home/u:/bin/sh";
    text += line + "\n";
    folded += (i == 0 ? "" : " ") + line;
  }
  REQUIRE(text.size() > 1000);
  CHECK_THROWS_WITH_AS(
      LoadModelText("passwd", text),
      ("passwd:1:1: error: a model config must be a map of keys to values, got '" + folded.substr(0, 80) + "...'")
          .c_str(),
      InputError);
  // Cut at a character boundary: a 2-byte character across byte 80 is left out whole.
  const std::string e_acute = "\xC3\xA9";  // U+00E9 in UTF-8
  CHECK(QuoteInput(std::string(79, 'a') + e_acute + "b") == std::string(79, 'a') + "...");
  CHECK(QuoteInput(std::string(80, 'a')) == std::string(80, 'a'));
}

TEST_CASE("config errors: a Hugging Face config without model_type says so") {
  const std::string hint =
      ": error: this Hugging Face config has no 'model_type', which names its architecture; 'tally models' "
      "lists the model types tally reads (hf_model_types)";
  CHECK_THROWS_WITH_AS(LoadModelText("snap/config.json", R"({"hidden_size": 8, "num_hidden_layers": 2})"),
                       ("snap/config.json:1:1" + hint).c_str(), InputError);
  CHECK_THROWS_WITH_AS(LoadModelText("m.json", R"({"architectures": ["X"], "hidden_size": 8})"),
                       ("m.json:1:1" + hint).c_str(), InputError);
  // tally's own config without a family keeps its message.
  CHECK_THROWS_WITH_AS(LoadModelText("m.yaml", "name: x\n"),
                       "m.yaml:1:1: error: missing required key 'family' in 'model' (transformer or sequential)",
                       InputError);
}

TEST_CASE("config errors: an endless device is refused") {
  if (!std::filesystem::exists("/dev/zero")) return;
  CheckMade("/dev/zero", "is not a regular file (a FIFO, a device or a socket); configs are read from files");
}

TEST_CASE("config errors: every bad file has exactly one row") {
  std::vector<std::string> rows;
  for (const BadCase& c : kCases) rows.emplace_back(c.file);
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TALLY_TEST_DATA) + "/bad")) {
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    CHECK(std::count(rows.begin(), rows.end(), name) == 1);
  }
  // And no row names a file that is gone.
  for (const std::string& row : rows) {
    CAPTURE(row);
    CHECK(std::filesystem::is_regular_file(BadPath(row.c_str())));
  }
}

TEST_CASE("config errors: the bracket and quote scans leave valid YAML and JSON alone") {
  // Quotes inside plain scalars and comments, escaped quotes, block scalars, nested flow, '#'
  // inside a scalar: none is a quote or bracket left open.
  const char* const yaml[] = {"name: Llama's 7B\n",
                              "# don't [\nfamily: transformer\n",
                              "a: 'it''s'\nb: \"x\\\"y\"\n",
                              "text: |\n  an unclosed \" and [\nnext: 1\n",
                              "a: [1, {b: 'c', d: [2, 3]}]\n",
                              "url: http://x#y [\n",
                              "k: a]b\nl: a'b\n",
                              "list:\n  - 'one'\n  - \"two\"\n  - [3, 4]\n",
                              "multi: \"a\n  b\"\n"};
  for (const char* text : yaml) {
    CAPTURE(text);
    CHECK_NOTHROW(CheckYamlClosed("ok.yaml", text));
  }
  const char* const json[] = {"{}",
                              "[]",
                              "{\"a\": [1, -2.5e3, true, null, {\"b\": \"}]\\\"\"}]}",
                              " {\"a\": 1}\n\n",
                              "{\"a\": 1}\n{\"b\": 2}",
                              "\"x\"",
                              "NaN"};
  for (const char* text : json) {
    CAPTURE(text);
    CHECK_NOTHROW(CheckJsonSyntax("ok.json", text));
  }
  CHECK_THROWS_WITH_AS(CheckJsonSyntax("x.json", "[1, 2,]"),
                       "x.json:1:6: error: syntax error: a trailing ',' is not allowed in JSON", InputError);
  CHECK_THROWS_WITH_AS(CheckJsonSyntax("x.json", "{\"a\": [1, 2"),
                       "x.json:1:7: error: syntax error: '[' is never closed", InputError);
  CHECK_THROWS_WITH_AS(CheckJsonSyntax("x.json", "{1: 2}"),
                       "x.json:1:2: error: syntax error: expected a quoted key, got '1'", InputError);
  CHECK_THROWS_WITH_AS(CheckYamlClosed("x.yaml", "a: {b: [1, 2]\nc: 3\n"),
                       "x.yaml:1:4: error: syntax error: '{' is never closed", InputError);
}

TEST_CASE("config errors: valid YAML that looks unclosed to a scan is read as yaml-cpp reads it") {
  // Quotes and brackets inside plain scalars, after anchors and tags, in block scalars, on
  // continuation lines (found in review); each must parse, with its quote or bracket as text.
  const char* const texts[] = {"years: 2019, '20\n",
                               "note: what?'s up\n",
                               "note: really? 'tis so\n",
                               "title: A - 'B\n",
                               "note: x - [draft\n",
                               "note: a,[b\n",
                               "k: a{'b\n",
                               "k: [a:'b]\n",
                               "note: the model\n  's weights\n",
                               "k: !!str \"a: 'b\"\n",
                               "k: &a 'a, [b'\nl: *a\n",
                               "text: &t |\n  'starts a line\n",
                               "text: !!str >\n  [starts a line\n",
                               "description: Llama 3 8B, '24 release (GQA)\n"};
  for (const char* text : texts) {
    CAPTURE(text);
    CHECK_NOTHROW(ParseYaml("ok.yaml", text));
  }
  // JSON with a UTF-8 byte order mark, which RFC 8259 §8.1 lets a parser ignore.
  CHECK_NOTHROW(ParseYaml("bom.json", "\xEF\xBB\xBF{\"model_type\": \"llama\"}\n"));
  // UTF-16LE JSON: the structure scan leaves it to yaml-cpp, which decodes it.
  static const char kUtf16[] =
      "{\0\"\0a\0\"\0:\0 \0"
      "1\0}\0";
  const std::string utf16(kUtf16, sizeof kUtf16 - 1);
  CHECK_NOTHROW(CheckJsonSyntax("utf16.json", utf16));
  // What yaml-cpp accepts but is not closed: a quote still open at the end of the file.
  CHECK_THROWS_WITH_AS(ParseYaml("x.yaml", "a: 1\nb: &x 'open\n"),
                       "x.yaml:2:7: error: syntax error: \"'\" is never closed", InputError);
}

// bloaty's fuzz_driver idea over real files: bad input may only ever be an InputError.
TEST_CASE("config errors: every config loads and builds or throws InputError") {
  std::vector<std::string> files = FilesUnder(TALLY_TEST_DATA);
  const std::vector<std::string> presets = FilesUnder(std::string(TALLY_SOURCE_DIR) + "/configs/models");
  CHECK(!presets.empty());
  files.insert(files.end(), presets.begin(), presets.end());
  for (const std::string& path : files) {
    CAPTURE(path);
    try {
      ResolvedGraph(LoadModelFile(path));
    } catch (const InputError& e) {
      // Expected for the bad corpus; the message must stay on one line.
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    } catch (const std::exception& e) {
      FAIL_CHECK("not an InputError: " << typeid(e).name() << ": " << e.what());
    } catch (...) {
      FAIL_CHECK("threw something that is not a std::exception");
    }
  }
}

}  // namespace
}  // namespace tally
