#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <stdexcept>

#include "cli/command.h"
#include "cli/exit_code.h"
#include "cli/help.h"
#include "util/error.h"
#include "util/spellcheck.h"
#include "version.h"

namespace tally {
namespace {

constexpr const char* kFooter =
    "Conventions: a FLOP is one add or one multiply, so a GEMM (m x k)·(k x n) costs\n"
    "2·m·n·k FLOPs; MACs are labelled MACs. Matmul FLOPs are the headline; softmax,\n"
    "norms, activations and adds are reported apart. Model FLOPs count attention\n"
    "whole unless --causal. Backward counts dX and dW per GEMM.\n"
    "Memory defaults: mixed-bf16, adamw, flash attention, no recompute, one device.\n"
    "Numbers: k, M, G, T are powers of 1,000 (2k = 2,000; 7B = 7e9) and Ki, Mi, Gi\n"
    "powers of 1,024 (8Ki = 8,192), for every count and length; sizes take a unit\n"
    "(80GiB, 80GB). Dtypes and the workload flags' choices ignore case (BF16).\n"
    "Exit codes: 0 success, 1 budget failed or nothing fits, 2 bad input,\n"
    "3 runtime failure, 4 internal error.";

constexpr const char* kSeeConventions = "Conventions and exit codes: tally --help.\n\n";

// The subcommand args[0] names, or null.
const CLI::App* NamedCommand(const CLI::App& app, const std::vector<std::string>& args) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!args.empty() && sub->get_name() == args[0]) return sub;
  }
  return nullptr;
}

// The first --flag in `args` that `cmd` does not have, or "".
std::string UnknownFlag(const CLI::App& cmd, const std::vector<std::string>& args) {
  std::vector<std::string> known;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& name : o->get_lnames()) known.push_back("--" + name);
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string flag = args[i].substr(0, args[i].find('='));
    if (flag.size() > 2 && flag.rfind("--", 0) == 0 && std::find(known.begin(), known.end(), flag) == known.end()) {
      return flag + "'" + DidYouMean(flag, known);
    }
  }
  return "";
}

// Flags a user reaches for on a command that lacks them, and where they live: a memory budget is
// asked of fit or check, not of memory or estimate (issue 28).
std::string ElsewhereHint(const std::string& command, const std::string& flag) {
  if (flag.rfind("--memory'", 0) == 0 && (command == "memory" || command == "estimate")) {
    return "; a memory budget is fit's ('tally fit MODEL --memory SIZE': the largest batch, seq or fewest GPUs "
           "that fit) or check's ('tally check MODEL --max memory.train.device=SIZE')";
  }
  return "";
}

// CLI11's errors in tally's words (issue 28: "At Most 1 required but received 2" named nothing a
// user typed wrong): a repeated flag, a flag without its value, an unexpected argument, an unknown
// flag with its nearest flag of the same command; then the command's own --help.
std::string ParseMessage(const CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e) {
  const CLI::App* cmd = NamedCommand(app, args);
  const std::string help = cmd ? "tally " + cmd->get_name() + " --help" : "tally --help";
  const std::string what = e.what();
  if (cmd && dynamic_cast<const CLI::ExtrasError*>(&e)) {
    const std::string flag = UnknownFlag(*cmd, args);
    if (!flag.empty()) {
      const std::string hint = ElsewhereHint(cmd->get_name(), flag);
      return "unknown flag '" + flag + (hint.empty() ? "; run '" + help + "' for its flags" : hint);
    }
    // "The following argument(s) was/were not expected: a b"
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) {
      return "unexpected argument '" + what.substr(colon + 2) + "'; run '" + help + "' for usage";
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    // "NAME: At Most 1 required but received 2", "NAME: 1 required TYPE missing"
    const size_t colon = what.find(": ");
    const std::string name = what.substr(0, colon);
    if (what.find("At Most") != std::string::npos) return name + ": given more than once; give it once";
    const size_t required = what.find(" required "), missing = what.rfind(" missing");
    if (required != std::string::npos && missing != std::string::npos && missing > required + 10) {
      return name + ": needs a value (" + what.substr(required + 10, missing - required - 10) + "); run '" + help +
             "' for usage";
    }
  }
  return what + "; run '" + help + "' for usage";
}

// The flags a command reads, against those some command reads: a flag given to a command that
// ignores it is an error naming the commands that read it (--zero on flops).
void CheckFlagsRead(const CLI::App& cmd, const Command& command) {
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0 || o->get_lnames().empty()) continue;
    const std::string flag = "--" + o->get_lnames().front();
    auto reads = [&](const Command& c) { return std::find(c.reads.begin(), c.reads.end(), flag) != c.reads.end(); };
    std::vector<std::string> readers;
    for (const Command& c : Commands()) {
      if (reads(c)) readers.emplace_back(c.name);
    }
    if (readers.empty() || reads(command)) continue;
    std::string list;
    for (size_t i = 0; i < readers.size(); ++i) {
      list.append(i == 0 ? "" : i + 1 == readers.size() ? " and " : ", ").append(readers[i]);
    }
    std::string what = flag;
    what.append(": ").append(command.name).append(" does not use it; ").append(list);
    throw InputError(what.append(readers.size() == 1 ? " does" : " do"));
  }
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
  CLI::App app{"tally: parameters, FLOPs, memory and time of deep-learning models, exactly", "tally"};
  app.set_version_flag("--version", std::string("tally ") + TALLY_VERSION + " (commit " + TALLY_COMMIT + ")");
  app.footer(kFooter);
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, RunFn>> runs;
  for (const Command& c : Commands()) {
    CLI::App* cmd = app.add_subcommand(std::string(c.name), std::string(c.help));
    runs.emplace_back(cmd, c.add_flags(cmd));
    cmd->footer(kSeeConventions + ExamplesFooter(c.examples));
  }
  CheckCommandName(args);

  std::vector<const char*> argv = {"tally"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    out << WrapHelp(app.help());  // CLI11 prints descriptions on one line; tally's help fits 80 columns
    code = static_cast<int>(ExitCode::kSuccess);
    return "";
  } catch (const CLI::CallForAllHelp& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::CallForVersion& e) {
    code = app.exit(e, out, err);
    return "";
  } catch (const CLI::ParseError& e) {
    throw InputError(ParseMessage(app, args, e));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    auto& [cmd, run] = runs[i];
    if (!cmd->parsed()) continue;
    CheckFlagsRead(*cmd, Commands()[i]);
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
