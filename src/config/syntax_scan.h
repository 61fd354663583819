// Syntax checks that run before yaml-cpp, for the mistakes it reports at the wrong place or not at
// all: a bracket or quote never closed (yaml-cpp names the next line, or accepts an unterminated
// quote at the end of the file), and in JSON a missing or trailing comma. Each throws an InputError
// naming the file, line and column of the mistake itself.
#pragma once

#include <string>

namespace tally {

// The structure of a JSON text: strings, brackets, ':' and ',' in their places, one top-level
// value (what follows it is left to ParseYaml, which names a second document). Literals are not
// checked here; the typed readers name a bad one.
void CheckJsonSyntax(const std::string& file, const std::string& text);

// A YAML text's flow brackets and quoted scalars, where they are certainly unclosed at the end of
// the file. Conservative: a text with a block scalar (| or >) is not scanned, and a quote counts
// only where a scalar can start.
void CheckYamlClosed(const std::string& file, const std::string& text);

}  // namespace tally
