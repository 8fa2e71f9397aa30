#include "tools/output_file.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cli_error.hpp"

namespace tools {
namespace {

// The temporaries being written, for the interrupt handler: fixed slots, each path copied in
// before the slot is marked used, so the handler reads only whole paths (async-signal-safe:
// it calls unlink and _exit alone; std::atomic<bool> is lock-free).
constexpr std::size_t kSlots = 64;
constexpr std::size_t kPathBytes = 4096;
struct Slot {
  std::atomic<bool> used{false};
  std::array<char, kPathBytes> path{};
  std::atomic<bool> keep{false};  ///< rename to keep_path rather than unlink
  std::array<char, kPathBytes> keep_path{};
};
std::array<Slot, kSlots> slots;

std::mutex slots_mutex;  // claiming and releasing; the handler only reads

int claim_slot(const std::string& path) {
  if (path.size() >= kPathBytes) return -1;
  const std::lock_guard<std::mutex> lock(slots_mutex);
  for (std::size_t i = 0; i < kSlots; ++i) {
    if (slots[i].used.load()) continue;
    std::memcpy(slots[i].path.data(), path.c_str(), path.size() + 1);
    slots[i].keep.store(false);
    slots[i].used.store(true);  // the path is whole before the handler may read it
    return static_cast<int>(i);
  }
  return -1;  // more outputs at once than slots: still removed on errors, not on an interrupt
}

void release_slot(int i) {
  if (i < 0) return;
  const std::lock_guard<std::mutex> lock(slots_mutex);
  slots[static_cast<std::size_t>(i)].used.store(false);
}

extern "C" void on_interrupt(int signal) {
  for (Slot& s : slots) {
    if (!s.used.load()) continue;
    if (s.keep.load()) {
      ::rename(s.path.data(), s.keep_path.data());
    } else {
      ::unlink(s.path.data());
    }
  }
  ::_exit(128 + signal);
}

// Whether `path` names something that is not a regular file (written in place).
bool special(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

}  // namespace

OutputFile::OutputFile(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
  if (path_ == "-") return;
  if (special(path_)) {
    file_.open(path_, std::ios::binary | std::ios::trunc);
    if (!file_) throw CliError(fmt::format("{}: cannot write '{}': {}", flag_, path_, std::strerror(errno)));
    return;
  }
  const std::filesystem::path target(path_);
  std::string pattern = (target.parent_path() / fmt::format(".{}.g5sim-XXXXXX", target.filename().string())).string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) throw CliError(fmt::format("{}: cannot write '{}': {}", flag_, path_, std::strerror(errno)));
  ::close(fd);
  temporary_ = pattern;
  slot_ = claim_slot(temporary_);
  file_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!file_) {
    const int error = errno;
    discard();
    throw CliError(fmt::format("{}: cannot write '{}': {}", flag_, path_, std::strerror(error)));
  }
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::keep_unfinished_at(const std::string& path) {
  if (temporary_.empty()) return;
  if (path.size() >= kPathBytes) throw CliError(fmt::format("{}: '{}' is too long a path", flag_, path));
  keep_at_ = path;
  const mode_t mask = ::umask(0);  // a kept file gets a plain new file's permissions
  ::umask(mask);
  ::chmod(temporary_.c_str(), 0666 & ~mask);
  if (slot_ >= 0) {
    Slot& s = slots[static_cast<std::size_t>(slot_)];
    std::memcpy(s.keep_path.data(), path.c_str(), path.size() + 1);
    s.keep.store(true);  // the path is whole before the handler may read it
  }
}

void OutputFile::discard() noexcept {
  if (temporary_.empty()) return;
  if (file_.is_open()) file_.close();
  if (keep_at_.empty() || ::rename(temporary_.c_str(), keep_at_.c_str()) != 0) ::unlink(temporary_.c_str());
  release_slot(slot_);
  slot_ = -1;
  temporary_.clear();
}

std::ostream& OutputFile::stream() { return path_ == "-" ? std::cout : file_; }

void OutputFile::close() {
  if (path_ == "-") {
    check_stdout();
    return;
  }
  file_.flush();
  const bool ok = static_cast<bool>(file_);
  const int error = errno;
  file_.close();
  if (!ok || !file_) {
    discard();
    throw WriteError(fmt::format("{}: writing '{}' failed: {}", flag_, path_, std::strerror(error)));
  }
  if (temporary_.empty()) return;
  // A new file gets the permissions a plain open would have given it; an existing one keeps its own.
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    ::chmod(temporary_.c_str(), st.st_mode & 07777);
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(temporary_.c_str(), 0666 & ~mask);
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const int rename_error = errno;
    discard();
    throw WriteError(fmt::format("{}: writing '{}' failed: {}", flag_, path_, std::strerror(rename_error)));
  }
  release_slot(slot_);
  slot_ = -1;
  temporary_.clear();
}

void check_stdout() {
  std::cout.flush();
  if (!std::cout) throw WriteError(fmt::format("writing standard output failed: {}", std::strerror(errno)));
}

namespace {

// What makes two paths one file (the rule in the header).
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return fmt::format("inode {}:{}", st.st_dev, st.st_ino);
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) return "path " + path;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(absolute, ec);
  return "path " + (ec ? absolute.lexically_normal() : resolved.lexically_normal()).string();
}

}  // namespace

OutputSet::OutputSet(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::pair<std::string, std::string>> seen;  // (identity, flag) of each file
  std::string on_stdout_flag;
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) continue;
    if (path == "-") {
      if (!on_stdout_flag.empty()) {
        throw CliError(
            fmt::format("{} - and {} - both want standard output: give one of them a PATH", on_stdout_flag, flag));
      }
      on_stdout_flag = flag;
      continue;
    }
    const std::string identity = file_identity(path);
    for (const auto& [other, other_flag] : seen) {
      if (other == identity) {
        throw CliError(fmt::format("{} and {} both name '{}': give each output its own file", other_flag, flag, path));
      }
    }
    seen.emplace_back(identity, flag);
  }
  on_stdout_ = !on_stdout_flag.empty();
  for (const auto& [flag, path] : outputs) {
    auto& [name, file] = files_.emplace_back(flag, std::nullopt);
    if (!path.empty()) file.emplace(path, flag);
  }
}

OutputFile* OutputSet::get(const std::string& flag) {
  for (auto& [name, file] : files_) {
    if (name == flag) return file ? &*file : nullptr;
  }
  throw std::logic_error("OutputSet: no output " + flag);
}

void OutputSet::close() {
  for (auto& [name, file] : files_) {
    if (file) file->close();
  }
  check_stdout();
}

void remove_outputs_on_interrupt() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

}  // namespace tools
