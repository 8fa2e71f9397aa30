#pragma once
// The step cache's folder (--step-cache-dir): every step a serve simulates kept on disk, so that
// the next serve of the same chip, model, runtime graph, deployment and options (a search's
// points, a rate sweep, the same serve again) reads it instead of simulating it again. The times
// read are the simulation's, so a serve's results are the same with the folder cold, warm or off;
// only steps_simulated and the seconds it took differ.
//
// An entry's name is the sha256 of its key: the build's identity (the running executable's or
// Python module's path, size and modification time: a rebuilt simulator never reads another
// build's steps), the serve's step prefix (the chip's and model's sha256, tp, ep, dp, the
// runtime's graph options, every run option that changes a step) and the step's mix text. It is
// DIR/<the name's first two hex digits>/<name>.step, text:
//     g5sim-step 1
//     key <the whole key>                       (a hash collision is a miss, not a wrong time)
//     time <ps> <has_band 0|1> <band_low_ps> <band_high_ps> <dynamic_j> <parts>
//     band <coverage> <basis, to the end of the line>
//     ops <split_experts 0|1> <decode_only 0|1> <chip_sequences> <chip_tokens> <n>
//     <kind> <duration_ps> <message_bytes> <tensor_ps> <expert 0|1>      (n lines)
//     end
// Written under a temporary name in the same folder and renamed over the final one (atomic on
// POSIX): a reader sees no file or a whole one, and processes (Dask workers) writing the same
// step write the same bytes. A file that does not read back exactly (truncated, edited, another
// version) is a miss, simulated again and rewritten. Nothing is ever evicted: delete the folder
// to reclaim its space.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "g5sim/serve.hpp"

namespace serving {

/// The folder a serve uses: `given` when not empty ("off": none), else $G5SIM_STEP_CACHE_DIR
/// ("off": none), else $XDG_CACHE_HOME/g5sim/steps, else $HOME/.cache/g5sim/steps, else none.
std::string step_cache_dir(const std::string& given);

/// An entry's text, and a text read back (none unless it is a whole entry of `key`).
std::string step_entry_text(const std::string& key, const g5sim::ChipStep& step);
std::optional<g5sim::ChipStep> read_step_entry(std::string_view text, const std::string& key);

class StepStore {
 public:
  /// Steps under `dir` (created when first written); `prefix` the serve's step prefix.
  StepStore(std::string dir, const std::string& prefix);
  std::shared_ptr<const g5sim::ChipStep> find(const std::string& step_key) const;
  /// Writes the entry; a folder that cannot be written is left alone (the serve goes on: the
  /// store only saves time), counted in write_failures().
  void put(const std::string& step_key, const g5sim::ChipStep& step);
  std::uint64_t write_failures() const { return write_failures_.load(); }

 private:
  std::string key_of(const std::string& step_key) const { return prefix_ + step_key; }
  std::string path_of(const std::string& key) const;

  std::string dir_, prefix_;
  std::atomic<std::uint64_t> write_failures_{0};
};

}  // namespace serving
