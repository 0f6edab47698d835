//===- RunMain.h - the kiln-run command line --------------------*- C++ -*-===//
//
// Shared by kiln-run (which loads EXE.kx) and the standalone programs kilnc
// writes (which carry their executable inside themselves).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_RUN_RUNMAIN_H
#define KILN_TOOLS_KILN_RUN_RUNMAIN_H

#include "kiln/Runtime/Runtime.h"

#include <memory>

namespace kiln {
namespace tools {

/// Runs the kiln-run command line. With `embedded`, the executable is that
/// one and no EXE.kx argument is taken. Returns the process exit code.
int runMain(int argc, char **argv, std::shared_ptr<const rt::Executable> embedded);

} // namespace tools
} // namespace kiln

#endif // KILN_TOOLS_KILN_RUN_RUNMAIN_H
