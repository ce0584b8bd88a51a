// SPDX-License-Identifier: MIT
#include "job.h"

#include "core/taps.h"

namespace nnscope {

void JobControl::throwIfCancelled() const {
    if (cancelled()) throw Cancelled{};
}

}  // namespace nnscope
