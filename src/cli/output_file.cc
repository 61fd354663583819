#include "cli/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/error.h"

namespace tally {

void WriteFile(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw RuntimeError(std::string(flag) + ": cannot write '" + path + "': " + std::strerror(errno));
}

void CheckWritable(const std::optional<std::string>& path, const char* flag) {
  if (!path) return;
  struct stat st {};
  int error = 0;
  if (path->empty()) {
    error = ENOENT;
  } else if (stat(path->c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      error = EISDIR;
    else if (access(path->c_str(), W_OK) != 0)
      error = errno;
  } else if (errno != ENOENT) {
    error = errno;
  } else {
    const size_t slash = path->rfind('/');
    const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path->substr(0, slash);
    if (access(folder.c_str(), W_OK) != 0) error = errno;
  }
  if (error != 0) throw InputError(std::string(flag) + ": cannot write '" + *path + "': " + std::strerror(error));
}

}  // namespace tally
