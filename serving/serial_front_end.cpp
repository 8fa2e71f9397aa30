#include "serving/serial_front_end.hpp"

#include <algorithm>
#include <stdexcept>

#include "hw/checked_count.hpp"

namespace serving {

std::pair<SerialFrontEnd::Job, std::uint64_t> SerialFrontEnd::take() {
  if (jobs_.empty()) throw std::logic_error("serve: the front end has no job to take");
  const Job job = jobs_.begin()->second;
  jobs_.erase(jobs_.begin());
  free_ps_ = hw::checked("the serve's time in picoseconds",
                         [&] { return (hw::Count(std::max(job.at_ps, free_ps_)) + job.cost_ps).value(); });
  return {job, free_ps_};
}

}  // namespace serving
