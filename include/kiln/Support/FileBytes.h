//===- FileBytes.h - Whole-file reads with a readable error -----*- C++ -*-===//
//
// The tensor-file readers (.npy, .pb) parse from memory; this reads the file
// and words the failure the same way for both. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_FILEBYTES_H
#define KILN_SUPPORT_FILEBYTES_H

#include <string>

namespace kiln {

/// Reads all of `path` into `bytes`; on failure sets `error` to
/// "<path>: cannot open: <reason>" and returns false.
bool readFileBytes(const std::string &path, std::string &bytes, std::string &error);

} // namespace kiln

#endif // KILN_SUPPORT_FILEBYTES_H
