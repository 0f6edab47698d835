//===- SharedLibrary.h - a vendor library opened at run time ----*- C++ -*-===//
//
// The CUDA runtime, cuBLASLt and cuDNN are opened with dlopen only when a
// session needs them, so no kiln binary depends on them (or on a driver)
// to start. Each user lists the functions it needs with an X-macro and
// resolves them through this.
//
// Machines keep these libraries in different places: on the loader's path,
// in the toolkit (/usr/local/cuda/lib64), or as Python wheels
// (site-packages/nvidia/*/lib, where PyTorch's pip packages put them, not
// on the loader's path). open() looks in each, in the order
// cudaLibrarySearchPath() gives, and remembers which file it loaded so the
// tools can say (kiln-run --describe).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_SHAREDLIBRARY_H
#define KILN_LIB_RUNTIME_SHAREDLIBRARY_H

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace rt {

/// Folders searched for the vendor libraries after the loader's own search,
/// in order: $KILN_CUDA_LIBRARY_PATH (colon-separated; searched first, even
/// before the loader), /usr/local/cuda/lib64, and the nvidia/*/lib folders
/// of python3's site-packages (found by asking python3, once, only when
/// the earlier places lack a library).
std::vector<std::string> cudaLibrarySearchPath(bool withPython);

/// Every vendor library opened so far in this process: what it is
/// ("CUDA runtime") and the file loaded.
std::vector<std::pair<std::string, std::string>> loadedVendorLibraries();

class SharedLibrary {
public:
  SharedLibrary() = default;
  SharedLibrary(const SharedLibrary &) = delete;
  SharedLibrary &operator=(const SharedLibrary &) = delete;
  ~SharedLibrary();

  /// Opens the first of `names` found in $KILN_CUDA_LIBRARY_PATH, the
  /// loader's path or the folders above; "" on success, else a message
  /// naming the files looked for and where. `companions` are libraries the
  /// found one loads by name at run time (cuDNN's sub-libraries): loaded
  /// first from the same folder, so a folder off the loader's path works.
  std::string open(const std::string &what, std::initializer_list<const char *> names,
                   std::initializer_list<const char *> companions = {});

  /// Points `function` at the library's `name`; false if it has none.
  template <typename Function> bool resolve(const char *name, Function &function) {
    function = reinterpret_cast<Function>(symbol(name));
    return function != nullptr;
  }

  /// The file loaded.
  const std::string &path() const { return path_; }

private:
  void *symbol(const char *name) const;
  void *handle_ = nullptr;
  std::vector<void *> companions_;
  std::string path_;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_SHAREDLIBRARY_H
