// Files a command writes beside its report (measure --plot and --calibrate, memory --timeline).
#pragma once

#include <optional>
#include <string>

namespace tally {

// Writes `text` to `path`; a failure is a RuntimeError naming `flag` and the path.
void WriteFile(const std::string& path, const std::string& text, const char* flag);

// Refuses, as an InputError naming `flag`, a path that cannot be written, before any work. The file
// is not created (a failed run leaves nothing behind): its folder must exist and take writes, and an
// existing file must take them.
void CheckWritable(const std::optional<std::string>& path, const char* flag);

}  // namespace tally
