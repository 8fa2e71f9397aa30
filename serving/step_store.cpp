#include "serving/step_store.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

#include "hw/sha256.hpp"

namespace serving {
namespace {

// The running binary (this library's executable or Python module): path, size and modification
// time. Unknown (no path, no stat): empty, and no store is used.
const std::string& build_identity() {
  static const std::string identity = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&build_identity), &info) == 0 || info.dli_fname == nullptr) {
      return std::string();
    }
    // The executable is named as it was started (a relative path, maybe): its own link instead.
    std::error_code ec;
    const std::filesystem::path binary = info.dli_fname[0] == '/' ? std::filesystem::path(info.dli_fname)
                                                                  : std::filesystem::read_symlink("/proc/self/exe", ec);
    struct stat st {};
    if (ec || stat(binary.c_str(), &st) != 0) return std::string();
    return fmt::format("{} {} {}.{:09}", binary.string(), st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }();
  return identity;
}

std::string environment(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// Splits off the next line of `text` (without its '\n'); false at the end.
bool next_line(std::string_view& text, std::string_view& line) {
  if (text.empty()) return false;
  const std::size_t end = text.find('\n');
  if (end == std::string_view::npos) return false;  // an entry's every line ends in '\n'
  line = text.substr(0, end);
  text.remove_prefix(end + 1);
  return true;
}

// Reads the line's space-separated words as the numbers given, all and nothing more.
class Words {
 public:
  explicit Words(std::string_view line) : rest_(line) {}
  bool word(std::string_view& w) {
    if (rest_.empty()) return false;
    const std::size_t end = rest_.find(' ');
    w = rest_.substr(0, end);
    rest_.remove_prefix(end == std::string_view::npos ? rest_.size() : end + 1);
    return !w.empty();
  }
  bool literal(std::string_view expected) {
    std::string_view w;
    return word(w) && w == expected;
  }
  bool count(std::uint64_t& v) {
    std::string_view w;
    if (!word(w)) return false;
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    return ec == std::errc() && end == w.data() + w.size();
  }
  bool flag(bool& v) {
    std::uint64_t n = 0;
    if (!count(n) || n > 1) return false;
    v = n == 1;
    return true;
  }
  bool number(double& v) {
    std::string_view w;
    if (!word(w)) return false;
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    return ec == std::errc() && end == w.data() + w.size() && std::isfinite(v);
  }
  std::string_view rest() const { return rest_; }
  bool done() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

bool read_time(std::string_view line, g5sim::ChipStep& s) {
  Words w(line);
  g5sim::StepTime& t = s.chip;
  return w.literal("time") && w.count(t.ps) && w.flag(t.has_band) && w.count(t.band_low_ps) &&
         w.count(t.band_high_ps) && w.number(t.dynamic_j) && w.count(s.parts) && w.done() && t.ps > 0 && s.parts > 0;
}

bool read_band(std::string_view line, g5sim::ChipStep& s) {
  Words w(line);
  if (!w.literal("band") || !w.number(s.band_coverage)) return false;
  s.band_basis = std::string(w.rest());
  return true;
}

bool read_ops(std::string_view& text, g5sim::ChipStep& s) {
  std::string_view line;
  if (!next_line(text, line)) return false;
  Words w(line);
  std::uint64_t n = 0;
  g5sim::StepOps& ops = s.ops;
  if (!(w.literal("ops") && w.flag(ops.split_experts) && w.flag(ops.decode_only) && w.count(ops.chip_sequences) &&
        w.count(ops.chip_tokens) && w.count(n) && w.done())) {
    return false;
  }
  // Every op is a line of at least 10 bytes: more than the text holds is a damaged entry, not a
  // reason to reserve memory.
  if (n > text.size() / 10) return false;
  const std::size_t kinds = g5sim::StepOps::kind_names().size();
  ops.ops.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    if (!next_line(text, line)) return false;
    Words o(line);
    g5sim::StepOps::Op op;
    std::uint64_t kind = 0;
    if (!(o.count(kind) && kind < kinds && o.count(op.duration_ps) && o.count(op.message_bytes) &&
          o.count(op.tensor_ps) && o.flag(op.expert) && o.done())) {
      return false;
    }
    op.kind = static_cast<std::uint8_t>(kind);
    ops.ops.push_back(op);
  }
  return true;
}

}  // namespace

std::string step_cache_dir(const std::string& given) {
  std::string dir = given.empty() ? environment("G5SIM_STEP_CACHE_DIR") : given;
  if (dir == "off") return std::string();
  if (!dir.empty()) return dir;
  if (const std::string xdg = environment("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/g5sim/steps";
  if (const std::string home = environment("HOME"); !home.empty()) return home + "/.cache/g5sim/steps";
  return std::string();
}

std::string step_entry_text(const std::string& key, const g5sim::ChipStep& step) {
  const g5sim::StepTime& t = step.chip;
  const g5sim::StepOps& ops = step.ops;
  std::string out = fmt::format("g5sim-step 1\nkey {}\ntime {} {:d} {} {} {} {}\nband {} {}\nops {:d} {:d} {} {} {}\n",
                                key, t.ps, t.has_band, t.band_low_ps, t.band_high_ps, t.dynamic_j, step.parts,
                                step.band_coverage, step.band_basis, ops.split_experts, ops.decode_only,
                                ops.chip_sequences, ops.chip_tokens, ops.ops.size());
  for (const g5sim::StepOps::Op& o : ops.ops) {
    out += fmt::format("{} {} {} {} {:d}\n", o.kind, o.duration_ps, o.message_bytes, o.tensor_ps, o.expert);
  }
  return out + "end\n";
}

std::optional<g5sim::ChipStep> read_step_entry(std::string_view text, const std::string& key) {
  std::string_view line;
  g5sim::ChipStep s;
  if (!next_line(text, line) || line != "g5sim-step 1") return std::nullopt;
  if (!next_line(text, line) || line.substr(0, 4) != "key " || line.substr(4) != key) return std::nullopt;
  if (!next_line(text, line) || !read_time(line, s)) return std::nullopt;
  if (!next_line(text, line) || !read_band(line, s)) return std::nullopt;
  if (!read_ops(text, s)) return std::nullopt;
  if (!next_line(text, line) || line != "end" || !text.empty()) return std::nullopt;
  return s;
}

StepStore::StepStore(std::string dir, const std::string& prefix) : dir_(std::move(dir)) {
  if (!build_identity().empty())
    prefix_ = fmt::format("g5sim {} | {} | {}", g5sim::version(), build_identity(), prefix);
}

std::string StepStore::path_of(const std::string& key) const {
  const std::string name = hw::sha256_hex(key);
  return fmt::format("{}/{}/{}.step", dir_, name.substr(0, 2), name);
}

std::shared_ptr<const g5sim::ChipStep> StepStore::find(const std::string& step_key) const {
  if (prefix_.empty() || dir_.empty()) return nullptr;
  const std::string key = key_of(step_key);
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return nullptr;
  std::ostringstream text;
  text << in.rdbuf();
  std::optional<g5sim::ChipStep> s = read_step_entry(text.str(), key);
  return s ? std::make_shared<const g5sim::ChipStep>(std::move(*s)) : nullptr;
}

void StepStore::put(const std::string& step_key, const g5sim::ChipStep& step) {
  if (prefix_.empty() || dir_.empty()) return;
  const std::string key = key_of(step_key);
  const std::filesystem::path path = path_of(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  // A name no other writer uses: this process and thread.
  const std::filesystem::path temporary =
      path.string() + fmt::format(".{}.{}.tmp", getpid(), std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << step_entry_text(key, step);
    out.close();
    if (!out) {
      ++write_failures_;
      std::filesystem::remove(temporary, ec);
      return;
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    ++write_failures_;
    std::filesystem::remove(temporary, ec);
  }
}

}  // namespace serving
