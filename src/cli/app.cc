#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "cli/command.h"
#include "cli/exit_code.h"
#include "util/error.h"
#include "util/spellcheck.h"
#include "version.h"

namespace tally {
namespace {

constexpr const char* kFooter =
    "Conventions: a FLOP is one add or one multiply, so a GEMM (m x k)·(k x n) costs 2·m·n·k FLOPs;\n"
    "MACs are labelled MACs. Matmul FLOPs are the headline; softmax, norms, activations and adds are\n"
    "reported apart. Attention has no causal discount unless --causal. Backward counts dX and dW per GEMM.\n"
    "Memory defaults: mixed-bf16, adamw, flash attention, no recomputation, one device.\n"
    "Exit codes: 0 success, 1 budget failed or nothing fits, 2 bad input, 3 runtime failure, 4 internal error.";

// CLI11 words its errors in sentence case; tally's messages start in lower case.
std::string CliMessage(const CLI::ParseError& e) {
  std::string text = e.what();
  // "The following argument..." reads mid-sentence in lower case; "MODEL is required" keeps its name.
  const auto upper = [&](size_t i) { return i < text.size() && std::isupper(static_cast<unsigned char>(text[i])); };
  if (upper(0) && !upper(1)) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// CLI11 would call an unknown command a missing one; name it instead.
void CheckCommandName(const std::vector<std::string>& args) {
  if (args.empty() || args[0].empty() || args[0][0] == '-') return;
  std::vector<std::string> names;
  for (const Command& c : Commands()) names.emplace_back(c.name);
  if (std::find(names.begin(), names.end(), args[0]) != names.end()) return;
  std::string list;
  for (const std::string& c : names) list += (list.empty() ? "" : ", ") + c;
  throw InputError("unknown command '" + args[0] + "'" + DidYouMean(args[0], names) + "; commands are " + list);
}

// Parses argv and runs the chosen command; returns the text for stdout and sets `code`.
std::string Dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, int& code) {
  CLI::App app{"tally: parameters, FLOPs and memory of deep-learning models, exactly, from a config", "tally"};
  app.set_version_flag("--version", std::string("tally ") + TALLY_VERSION + " (commit " + TALLY_COMMIT + ")");
  app.footer(kFooter);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, RunFn>> runs;
  for (const Command& c : Commands()) {
    CLI::App* cmd = app.add_subcommand(std::string(c.name), std::string(c.help));
    runs.emplace_back(cmd, c.add_flags(cmd));
  }
  CheckCommandName(args);

  std::vector<const char*> argv = {"tally"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::CallForAllHelp& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::CallForVersion& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::ParseError& e) {
    throw InputError(CliMessage(e) + "; run 'tally --help' for usage");
  }
  for (auto& [cmd, run] : runs) {
    if (!cmd->parsed()) continue;
    RunContext context{app, out, err, static_cast<int>(ExitCode::kSuccess)};
    std::string text = run(context);
    code = context.code;
    return text;
  }
  throw std::logic_error("no command was parsed");  // require_subcommand(1) makes this unreachable
}

}  // namespace

int RunMain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    int code = 0;
    std::string text = Dispatch(args, out, err, code);
    out << text;
    out.flush();
    if (!out) throw RuntimeError("cannot write the output (is stdout closed or the disk full?)");
    return code;
  } catch (const InputError& e) {
    err << FormatDiagnostic(e) << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const RuntimeError& e) {
    err << "tally: error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kRuntime);
  } catch (const std::exception& e) {
    err << "tally: internal error: " << e.what() << " (this is a bug; please report it with the command line)\n";
    return static_cast<int>(ExitCode::kInternal);
  }
}

}  // namespace tally
