// SPDX-License-Identifier: MIT
#include "widgets/panels/resources.h"

#include <QtGlobal>

static void initNnscopeQrc() { Q_INIT_RESOURCE(nnscope); }  // the macro must be used outside a namespace

namespace nnscope {
void initResources() {
    static const bool done = [] {
        initNnscopeQrc();
        return true;
    }();
    (void)done;
}
}  // namespace nnscope
