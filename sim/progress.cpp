#include "sim/progress.hpp"

namespace sim {
namespace {

thread_local ProgressReport current_report = nullptr;
thread_local void* progress_context = nullptr;

}  // namespace

ScopedProgress::ScopedProgress(ProgressReport report, void* context)
    : previous_report_(current_report), previous_context_(progress_context) {
  current_report = report;
  progress_context = context;
}

ScopedProgress::~ScopedProgress() {
  current_report = previous_report_;
  progress_context = previous_context_;
}

bool progress_wanted() { return current_report != nullptr; }

void report_progress(const char* stage, std::uint64_t done, std::uint64_t total) {
  if (current_report != nullptr) current_report(progress_context, stage, done, total);
}

}  // namespace sim
