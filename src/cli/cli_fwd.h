// CLI11's App, declared for headers that only pass it around: CLI/CLI.hpp is header-only and costs
// seconds of compile time in every translation unit that includes it.
#pragma once

namespace CLI {
class App;
class Option;
}  // namespace CLI
