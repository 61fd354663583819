#include "cli/completion.h"

#include <CLI/CLI.hpp>

#include "cli/fit_command.h"
#include "cli/settings_flags.h"
#include "config/hardware.h"
#include "config/names.h"
#include "config/presets.h"
#include "report/format.h"
#include "util/dtype.h"
#include "util/error.h"

namespace tally {
namespace {

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::vector<std::string> Flags(const CLI::App* cmd) {
  std::vector<std::string> flags;
  for (const CLI::Option* o : cmd->get_options()) {
    for (const std::string& name : o->get_lnames()) flags.push_back("--" + name);
  }
  return flags;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> CompletionChoices() {
  auto dtypes = [](const char* flag) {
    std::string out;
    for (DType d : FlagDtypes(flag)) out += (out.empty() ? "" : " ") + std::string(Name(d));
    return std::pair<std::string, std::string>(flag, out);
  };
  return {
      {"--format", JoinNames<OutputFormat>(" ") + " jsonl"},  // jsonl: sweep's one more
      {"--units", JoinNames<UnitSystem>(" ")},
      {"--precision", JoinNames<Precision>(" ")},
      {"--optimizer", JoinNames<Optimizer>(" ")},
      {"--recompute", JoinNames<Recompute>(" ")},
      {"--attention", JoinNames<Attention>(" ")},
      {"--quant", JoinNames<Quant>(" ")},
      {"--dequant-kernel", JoinNames<DequantKernel>(" ")},
      {"--kernels", JoinNames<Kernels>(" ")},
      {"--pp-schedule", JoinNames<PipelineSchedule>(" ")},
      {"--ep-dispatch", JoinNames<EpDispatch>(" ")},
      {"--fp8-recipe", JoinNames<Fp8Recipe>(" ")},
      {"--mode", JoinNames<Mode>(" ")},
      {"--solve", JoinNames<Solve>(" ")},
      dtypes("--param-dtype"),
      dtypes("--grad-dtype"),
      dtypes("--state-dtype"),
      dtypes("--kv-dtype"),
  };
}

std::string CompletionScript(const CLI::App& app, const std::string& shell) {
  if (shell != "bash" && shell != "zsh") {
    throw InputError("completion: unknown shell '" + shell + "'; use bash or zsh");
  }
  std::vector<std::string> commands;
  std::string cases;
  for (const CLI::App* sub : app.get_subcommands({})) {
    commands.push_back(sub->get_name());
    cases.append("    ").append(sub->get_name()).append(") opts=\"").append(Join(Flags(sub))).append("\" ;;\n");
  }
  std::string choices;
  for (const auto& [flag, words] : CompletionChoices()) {
    choices.append("    ")
        .append(flag)
        .append(") COMPREPLY=($(compgen -W \"")
        .append(words)
        .append("\" -- \"$cur\")); return ;;\n");
  }
  std::string script;
  if (shell == "zsh")
    script += "# zsh: completion through bash's compatibility layer\nautoload -U +X bashcompinit && bashcompinit\n";
  script += "# tally completion for " + shell + ": eval \"$(tally completion " + shell + ")\"\n";
  script +=
      "_tally() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" opts=\"\"\n"
      "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
      "    COMPREPLY=($(compgen -W \"" +
      Join(commands) +
      " --help --version\" -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  case \"$prev\" in\n"
      "    --hardware) COMPREPLY=($(compgen -W \"" +
      Join(HardwareNames()) + "\" -f -- \"$cur\")); return ;;\n" + choices +
      "    --budget) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
      "  esac\n"
      "  case \"${COMP_WORDS[1]}\" in\n" +
      cases +
      "  esac\n"
      "  if [[ \"$cur\" == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=($(compgen -W \"" +
      Join(PresetNames()) +
      "\" -f -- \"$cur\"))\n"
      "  fi\n"
      "}\n"
      "complete -F _tally tally\n";
  return script;
}

void AddCompletionFlags(CLI::App* cmd, CompletionFlags& f) {
  cmd->add_option("SHELL", f.shell, "bash (default) or zsh")->type_name("");
}

SharedFlags SharedOf(const CompletionFlags& /*flags*/) { return {}; }

std::optional<Report> RunCompletion(const CompletionFlags& f, Prepared& /*prepared*/, RunContext& context) {
  context.out << CompletionScript(context.app, f.shell);
  return std::nullopt;
}

}  // namespace tally
