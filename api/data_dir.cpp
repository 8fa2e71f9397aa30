// g5sim::data_dir(): the shipped configs found relative to the file that holds this code, never
// through a path compiled in (a build or install tree can be moved, the source tree deleted).
//
// The file is found with dladdr() on a function of this library: the g5sim program, libg5sim.so
// or the Python extension, whichever this copy of the code was linked into. Above it we look for
// share/g5sim/configs:
//   build tree    build/tools/g5sim, build/api/libg5sim.so, build/python/g5sim/_g5sim*.so
//                 -> build/share/g5sim (a link to the source configs, made by CMake)
//   install tree  PREFIX/bin/g5sim, PREFIX/lib/libg5sim.so,
//                 PREFIX/lib/python3/dist-packages/g5sim/_g5sim*.so -> PREFIX/share/g5sim

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <string>
#include <vector>

#include "g5sim/g5sim.hpp"
#include "g5sim/runtime.hpp"
#include "hw/config_error.hpp"
#include "hw/strict_config.hpp"

namespace g5sim {
namespace {

namespace fs = std::filesystem;

constexpr int kParentsSearched = 5;

// The folders whose ancestors may hold share/g5sim: the object file holding this function, then
// the running program.
std::vector<fs::path> anchor_folders() {
  std::vector<fs::path> out;
  std::error_code ec;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&anchor_folders), &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] != '\0') {
    const fs::path object = fs::weakly_canonical(fs::path(info.dli_fname), ec);
    if (!ec && fs::is_regular_file(object, ec)) out.push_back(object.parent_path());
  }
  const fs::path program = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && (out.empty() || out.front() != program.parent_path())) out.push_back(program.parent_path());
  return out;
}

}  // namespace

std::string source_label(const std::string& path) {
  if (path.empty() || path.front() == '<') return path;  // "<memory:...>", "<chip dict>"
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  if (ec) return path;
  try {
    const fs::path configs = fs::weakly_canonical(fs::path(data_dir()) / "configs", ec);
    if (!ec && p.extension() == ".yaml" && p.parent_path().parent_path() == configs) {
      const std::string kind = p.parent_path().filename().string();
      if (kind == "chips" || kind == "models" || kind == "runtimes" || kind == "hosts")
        return "shipped:" + p.stem().string();
    }
  } catch (const ConfigError&) {
    // No shipped configs anywhere: nothing is shipped.
  }
  if (!fs::path(path).is_absolute()) return path;
  const fs::path here = fs::weakly_canonical(fs::current_path(ec), ec);  // as p: symlinks resolved
  if (ec) return path;
  const fs::path relative = p.lexically_relative(here);
  if (relative.empty() || *relative.begin() == "..") return path;
  return relative.generic_string();
}

std::string data_dir() {
  if (const char* env = std::getenv("G5SIM_DATA_DIR"); env != nullptr && env[0] != '\0') {
    std::error_code ec;
    if (!fs::is_directory(fs::path(env) / "configs", ec)) {
      throw ConfigError(fmt::format("G5SIM_DATA_DIR={}: no configs/ folder there", env), "G5SIM_DATA_DIR", "", 0, 0);
    }
    return env;
  }
  std::vector<std::string> looked;
  for (const fs::path& anchor : anchor_folders()) {
    fs::path dir = anchor;
    for (int up = 0; up <= kParentsSearched; ++up) {
      const fs::path candidate = dir / "share" / "g5sim";
      std::error_code ec;
      if (fs::is_directory(candidate / "configs", ec)) return candidate.string();
      if (!dir.has_parent_path() || dir.parent_path() == dir) break;
      dir = dir.parent_path();
    }
    looked.push_back(anchor.string());
  }
  throw ConfigError(
      fmt::format("no shipped configs: share/g5sim/configs is not above {}; install g5sim, set "
                  "G5SIM_DATA_DIR, or name the configs (--chip, --model)",
                  looked.empty() ? std::string("this program") : fmt::format("{}", fmt::join(looked, " or "))),
      "", "", 0, 0);
}

std::string shipped_chip_path() { return data_dir() + "/configs/chips/sg2262.yaml"; }
std::string shipped_model_path() { return data_dir() + "/configs/models/deepseek-v3.yaml"; }

namespace {

constexpr std::string_view kExtension = ".yaml";

std::vector<std::string> stems_in(const std::string& folder) {
  std::vector<std::string> stems;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(data_dir()) / "configs" / folder, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > kExtension.size() &&
        file.compare(file.size() - kExtension.size(), kExtension.size(), kExtension) == 0) {
      stems.push_back(file.substr(0, file.size() - kExtension.size()));
    }
  }
  std::sort(stems.begin(), stems.end());  // directory order is the file system's
  return stems;
}

// A value that reads as a path: it names a folder or an extension, or a file of that name exists.
bool reads_as_path(const std::string& text) {
  if (text.find('/') != std::string::npos) return true;
  for (std::string_view tail : {".yaml", ".yml", ".json"}) {
    if (text.size() > tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0) return true;
  }
  std::error_code ec;
  return fs::exists(fs::path(text), ec);
}

std::string config_path(const std::string& name_or_path, const std::string& folder, const char* what) {
  if (name_or_path.empty()) throw ConfigError(fmt::format("an empty {} name names no config", what), "", "", 0, 0);
  if (reads_as_path(name_or_path)) return name_or_path;
  const std::vector<std::string> stems = stems_in(folder);
  if (std::find(stems.begin(), stems.end(), name_or_path) != stems.end()) {
    return (fs::path(data_dir()) / "configs" / folder / (name_or_path + std::string(kExtension))).string();
  }
  const std::string near = hw::closest_match(name_or_path, stems);
  throw ConfigError(
      fmt::format("{}: no such file, and no shipped {} has that name{}; shipped: {} (g5sim list)",
                  hw::bounded_message(name_or_path), what,
                  near.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", near), fmt::join(stems, ", ")),
      name_or_path, "", 0, 0);
}

}  // namespace

std::vector<std::string> shipped_chips() { return stems_in("chips"); }
std::vector<std::string> shipped_models() { return stems_in("models"); }
std::string chip_path(const std::string& name_or_path) { return config_path(name_or_path, "chips", "chip"); }
std::string model_path(const std::string& name_or_path) { return config_path(name_or_path, "models", "model"); }
std::vector<std::string> shipped_runtimes() { return stems_in("runtimes"); }
std::string runtime_path(const std::string& name_or_path) { return config_path(name_or_path, "runtimes", "runtime"); }
std::vector<std::string> shipped_kv_tiers() { return stems_in("hosts"); }
std::string kv_tiers_path(const std::string& name_or_path) {
  return config_path(name_or_path, "hosts", "host's KV tiers");
}

}  // namespace g5sim
