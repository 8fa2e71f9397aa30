#pragma once
// A run with replay and the same run simulated in full, for the replay tests (layer replay,
// loop replay): their JSON must be the same byte for byte but for the line that says how.
#include <sstream>
#include <string>

#include "g5sim/g5sim.hpp"

namespace replay_test {

/// The JSON without its "replay" line, the one line that says how the run was done.
inline std::string without_replay_line(const std::string& json) {
  std::istringstream in(json);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.find("\"replay\":") == std::string::npos) out += line + "\n";
  }
  return out;
}

struct Pair {
  g5sim::Result replayed, full;
};

inline Pair both_ways(const g5sim::Chip& chip, const g5sim::Model& model, g5sim::Request request) {
  request.replay = true;
  g5sim::Result replayed = g5sim::simulate(chip, model, request);
  request.replay = false;
  g5sim::Result full = g5sim::simulate(chip, model, request);
  return {std::move(replayed), std::move(full)};
}

}  // namespace replay_test
