#pragma once
// serve's own settings (the load and the engine; the step's run options aside) by their keyword
// names, the names g5sim.serve() gives them: a validation row's `options` column spells a serve
// as key=value items of these (docs/validation.md, "Serving rows"). Each value is parsed and
// range-checked as the command line checks its flag (the same limits: serving_engine.hpp,
// request_load.hpp); a bad one is an hw::InputError naming the keyword.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "serving/serve.hpp"

namespace serving {

struct ServeSettings {
  LoadSpec load;
  ServeOptions options;
  /// MTP's settings, applied together by resolved() (set_mtp).
  std::uint64_t mtp = 0;
  std::string accept;
  std::optional<std::uint64_t> accept_draw;
  /// The options with MTP applied. Throws hw::InputError naming "mtp" when only one of mtp and
  /// accept is given.
  ServeOptions resolved() const;
};

/// The keywords, in documentation order: rate, concurrency, requests, input_len, output_len,
/// seed, schedule, max_seqs, max_batched_tokens, chunk, block_tokens, memory_utilization, kv_tokens,
/// step_cache, disagg, mtp, accept, accept_draw.
const std::vector<std::string>& serve_keywords();

/// Sets one keyword from its text. Throws hw::InputError naming the keyword (an unknown one
/// names itself and lists the keywords).
void set_serve_keyword(ServeSettings& settings, const std::string& key, const std::string& value);

/// MTP / speculative decoding on `limits`: `mtp` drafts (0: off) verified with `accept` (one
/// rate, or one per draft), the emitted tokens drawn with `draw` as seed or, without one, their
/// expectation. mtp and accept go together (hw::InputError naming "mtp"); the command line,
/// g5sim.serve() and a validation row all set MTP through this.
void set_mtp(ServeLimits& limits, std::uint64_t mtp, const std::string& accept, std::optional<std::uint64_t> draw);

}  // namespace serving
