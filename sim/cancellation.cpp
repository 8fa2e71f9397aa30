#include "sim/cancellation.hpp"

namespace sim {
namespace {

thread_local CancelCheck current_check = nullptr;
thread_local void* cancel_context = nullptr;

}  // namespace

ScopedCancelCheck::ScopedCancelCheck(CancelCheck check, void* context)
    : previous_check_(current_check), previous_context_(cancel_context) {
  current_check = check;
  cancel_context = context;
}

ScopedCancelCheck::~ScopedCancelCheck() {
  current_check = previous_check_;
  cancel_context = previous_context_;
}

void poll_cancel() {
  if (current_check != nullptr && current_check(cancel_context)) throw Cancelled();
}

}  // namespace sim
