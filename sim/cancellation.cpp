#include "sim/cancellation.hpp"

namespace sim {
namespace {

thread_local CancelCheck current_check = nullptr;
thread_local void* current_context = nullptr;

}  // namespace

ScopedCancelCheck::ScopedCancelCheck(CancelCheck check, void* context)
    : previous_check_(current_check), previous_context_(current_context) {
  current_check = check;
  current_context = context;
}

ScopedCancelCheck::~ScopedCancelCheck() {
  current_check = previous_check_;
  current_context = previous_context_;
}

void poll_cancel() {
  if (current_check != nullptr && current_check(current_context)) throw Cancelled();
}

}  // namespace sim
