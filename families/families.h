// SPDX-License-Identifier: MIT
// One function per family file; registry.cpp lists them.
#pragma once
#include "core/family.h"

namespace nnscope {
Family arceeFamily();
Family apertusFamily();
Family ernie4_5Family();
Family persimmonFamily();
}  // namespace nnscope
