#include "explore/scratch_file.hpp"

#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <vector>

#include "hw/config_error.hpp"

namespace explore {

ScratchFile::ScratchFile(const std::string& what) {
  std::string pattern = "/tmp/g5sim-scratch-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) throw hw::ConfigError(what + ": cannot create a scratch file in /tmp");
  close(fd);
  path_ = name.data();
}

ScratchFile::~ScratchFile() { std::remove(path_.c_str()); }

void ScratchFile::write(const std::string& text) const {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) throw hw::ConfigError("cannot write the scratch file " + path_);
}

}  // namespace explore
