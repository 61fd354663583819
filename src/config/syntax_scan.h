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

// For a YAML text yaml-cpp has already refused: a flow bracket or quoted scalar still open at the
// end of the file, named at its opening. A heuristic (a quote counts where a node can start; a
// block scalar stops the scan), so it only ever relocates an error, never makes one.
void CheckYamlClosed(const std::string& file, const std::string& text);

// Where a node starting at text[pos] (yaml-cpp's mark) opens its quote, after any anchor and tag
// on the same line; std::string::npos when it does not start with one.
size_t OpeningQuote(const std::string& text, size_t pos);

// Whether the quoted scalar opening at text[pos] (a ' or ") closes before the end of the text.
bool QuoteCloses(const std::string& text, size_t pos);

}  // namespace tally
