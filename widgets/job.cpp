// SPDX-License-Identifier: MIT
#include "job.h"

#include "core/taps.h"

namespace nnscope {

const char* jobStateName(JobState state) {
    switch (state) {
    case JobState::Idle: return "idle";
    case JobState::Queued: return "queued";
    case JobState::Running: return "running";
    case JobState::Finished: return "finished";
    case JobState::Failed: return "failed";
    case JobState::Cancelled: return "cancelled";
    }
    return "?";
}

void JobControl::throwIfCancelled() const {
    if (cancelled()) throw Cancelled{};
}

}  // namespace nnscope
