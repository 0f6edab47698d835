//===- SharedLibrary.h - a vendor library opened at run time ----*- C++ -*-===//
//
// The CUDA runtime, cuBLASLt and cuDNN are opened with dlopen only when a
// session needs them, so no kiln binary depends on them (or on a driver)
// to start. Each user lists the functions it needs with an X-macro and
// resolves them through this.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LIB_RUNTIME_SHAREDLIBRARY_H
#define KILN_LIB_RUNTIME_SHAREDLIBRARY_H

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace kiln {
namespace rt {

class SharedLibrary {
public:
  SharedLibrary() = default;
  SharedLibrary(const SharedLibrary &) = delete;
  SharedLibrary &operator=(const SharedLibrary &) = delete;
  ~SharedLibrary() {
    if (handle)
      dlclose(handle);
  }

  /// Opens the first of `names` that loads; "" on success, else dlerror's
  /// reason for the last one tried.
  std::string open(std::initializer_list<const char *> names) {
    for (const char *name : names)
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        return "";
    const char *why = dlerror();
    return why ? why : "not found";
  }

  /// Points `function` at the library's `name`; false if it has none.
  template <typename Function> bool resolve(const char *name, Function &function) {
    function = reinterpret_cast<Function>(dlsym(handle, name));
    return function != nullptr;
  }

private:
  void *handle = nullptr;
};

} // namespace rt
} // namespace kiln

#endif // KILN_LIB_RUNTIME_SHAREDLIBRARY_H
