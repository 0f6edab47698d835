//===- Npz.h - NumPy .npz archives ------------------------------*- C++ -*-===//
//
// An .npz is a ZIP archive of .npy files, one per named array (np.savez).
// kiln reads and writes the stored (uncompressed) form np.savez writes,
// with or without ZIP64 fields; a compressed archive (np.savez_compressed)
// is refused by name. Used for a training session's weights.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_NPZ_H
#define KILN_SUPPORT_NPZ_H

#include "kiln/Support/Npy.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace npz {

/// Writes `arrays` (name, array) as `path`, each as NAME.npy.
bool write(const std::string &path, const std::vector<std::pair<std::string, npy::Array>> &arrays,
           std::string &error);

/// Reads every array of `path`, in archive order, named without ".npy".
bool read(const std::string &path, std::vector<std::pair<std::string, npy::Array>> &arrays,
          std::string &error);

} // namespace npz
} // namespace kiln

#endif // KILN_SUPPORT_NPZ_H
