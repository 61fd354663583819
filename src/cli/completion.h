// `tally completion bash|zsh`: a completion script generated from the command line's own
// definition (commands, flags), the presets and the hardware catalog.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/cli_fwd.h"
#include "cli/command.h"

namespace tally {

// The flags whose values are a fixed list, and the list (space-separated), from the name tables.
std::vector<std::pair<std::string, std::string>> CompletionChoices();

std::string CompletionScript(const CLI::App& app, const std::string& shell);

struct CompletionFlags {
  std::string shell = "bash";
};
void AddCompletionFlags(CLI::App* cmd, CompletionFlags& flags);
SharedFlags SharedOf(const CompletionFlags& flags);
std::optional<Report> RunCompletion(const CompletionFlags& flags, Prepared& prepared, RunContext& context);

}  // namespace tally
