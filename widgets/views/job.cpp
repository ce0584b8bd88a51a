// SPDX-License-Identifier: MIT
#include "widgets/views/job.h"

#include "core/model/taps.h"

namespace nnscope {

void JobControl::throwIfCancelled() const {
    if (cancelled()) throw Cancelled{};
}

}  // namespace nnscope
