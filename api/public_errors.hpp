#pragma once
// The floors' errors as the public API's: a public entry point (g5sim::simulate, g5sim::serve,
// g5sim::search, ...) runs its body through public_errors(), so that the library's input errors
// leave it as g5sim::ConfigError (the same message, the site as data) and a cancelled run as
// g5sim::Cancelled. Everything else passes through: it is a bug.

#include <utility>

#include "g5sim/g5sim.hpp"
#include "hw/config_error.hpp"
#include "sim/cancellation.hpp"

namespace api {

template <class F>
auto public_errors(F&& body) -> decltype(body()) {
  try {
    return std::forward<F>(body)();
  } catch (const hw::ConfigError& e) {
    const hw::ErrorSite& s = e.site();
    throw g5sim::ConfigError(e.what(), s.source, s.field, s.line, s.column);
  } catch (const sim::Cancelled&) {
    throw g5sim::Cancelled();
  }
}

}  // namespace api
