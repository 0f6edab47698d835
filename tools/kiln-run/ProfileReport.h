//===- ProfileReport.h - kiln-run --profile -----------------------*- C++ -*-===//
//
// Writes cuda-emu's kernel profiles as JSON with the predicted H200 times
// (PerformanceModel.h), and prints a table of them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILNRUN_PROFILEREPORT_H
#define KILN_TOOLS_KILNRUN_PROFILEREPORT_H

#include "kiln/Runtime/Runtime.h"

#include <cstdio>
#include <string>
#include <vector>

namespace kiln {
namespace tools {

/// Writes `profiles` to `path`; false when the file cannot be written.
bool writeProfile(const std::string &path, const std::vector<rt::KernelProfile> &profiles,
                  unsigned sampleBlocks);

/// One line per kernel: predicted and ideal time, efficiencies, limiter.
void printProfile(std::FILE *out, const std::vector<rt::KernelProfile> &profiles);

/// `text` as the inside of a JSON string.
std::string jsonEscaped(const std::string &text);

} // namespace tools
} // namespace kiln

#endif // KILN_TOOLS_KILNRUN_PROFILEREPORT_H
