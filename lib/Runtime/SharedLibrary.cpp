//===- SharedLibrary.cpp - finding and opening vendor libraries -----------===//

#include "SharedLibrary.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace kiln {
namespace rt {

namespace {

std::mutex registryMutex;
std::vector<std::pair<std::string, std::string>> &registry() {
  static std::vector<std::pair<std::string, std::string>> loaded;
  return loaded;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool isFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> splitPath(const char *text) {
  std::vector<std::string> parts;
  std::string part;
  for (const char *c = text; c && *c; ++c) {
    if (*c == ':') {
      if (!part.empty())
        parts.push_back(part);
      part.clear();
    } else {
      part += *c;
    }
  }
  if (!part.empty())
    parts.push_back(part);
  return parts;
}

/// python3's site-packages folders, asked once. Wheels such as
/// nvidia-cudnn-cu13 unpack to site-packages/nvidia/cudnn/lib.
const std::vector<std::string> &pythonSitePackages() {
  static const std::vector<std::string> folders = [] {
    std::vector<std::string> found;
    FILE *pipe = popen("python3 -c 'import site, sys; print(\"\\n\".join(site.getsitepackages() + "
                       "[site.getusersitepackages()] + sys.path))' 2>/dev/null",
                       "r");
    if (!pipe)
      return found;
    char line[4096];
    while (std::fgets(line, sizeof(line), pipe)) {
      std::string folder(line);
      while (!folder.empty() && (folder.back() == '\n' || folder.back() == '\r'))
        folder.pop_back();
      if (!folder.empty() && std::find(found.begin(), found.end(), folder) == found.end())
        found.push_back(folder);
    }
    pclose(pipe);
    return found;
  }();
  return folders;
}

/// The file a handle was loaded from (dlopen by bare name searches the
/// loader's path; this says where it found it).
std::string loadedPath(void *handle, const std::string &fallback) {
  struct link_map *map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return fallback;
}

} // namespace

std::vector<std::string> cudaLibrarySearchPath(bool withPython) {
  std::vector<std::string> folders;
  for (const std::string &folder : {std::string("/usr/local/cuda/lib64"),
                                    std::string("/usr/local/cuda/targets/x86_64-linux/lib")})
    if (isDirectory(folder))
      folders.push_back(folder);
  if (withPython)
    for (const std::string &site : pythonSitePackages()) {
      std::string nvidia = site + "/nvidia";
      DIR *dir = opendir(nvidia.c_str());
      if (!dir)
        continue;
      std::vector<std::string> libs;
      while (struct dirent *entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != ".." && isDirectory(nvidia + "/" + name + "/lib"))
          libs.push_back(nvidia + "/" + name + "/lib");
      }
      closedir(dir);
      std::sort(libs.begin(), libs.end());
      folders.insert(folders.end(), libs.begin(), libs.end());
    }
  return folders;
}

std::vector<std::pair<std::string, std::string>> loadedVendorLibraries() {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry();
}

SharedLibrary::~SharedLibrary() {
  if (handle_)
    dlclose(handle_);
  for (auto it = companions_.rbegin(); it != companions_.rend(); ++it)
    dlclose(*it);
}

void *SharedLibrary::symbol(const char *name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

std::string SharedLibrary::open(const std::string &what, std::initializer_list<const char *> names,
                                std::initializer_list<const char *> companions) {
  std::string lastError;
  auto tryFile = [&](const std::string &file, const std::string &folder) {
    handle_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char *why = dlerror();
      // "No such file" from the loader's search is not worth repeating;
      // a file that exists and fails to load is.
      if (why && (folder.empty() ? std::string(why).find("No such file") == std::string::npos
                                 : true))
        lastError = why;
      return false;
    }
    // The library opens its companions by name later, on first use: from
    // this folder only if they are loaded already (and of this version).
    if (!folder.empty())
      for (const char *companion : companions)
        if (void *h = dlopen((folder + "/" + companion).c_str(), RTLD_NOW | RTLD_GLOBAL))
          companions_.push_back(h);
    path_ = loadedPath(handle_, file);
    std::lock_guard<std::mutex> lock(registryMutex);
    auto entry = std::make_pair(what, path_);
    if (std::find(registry().begin(), registry().end(), entry) == registry().end())
      registry().push_back(entry);
    return true;
  };
  auto tryFolder = [&](const std::string &folder) {
    for (const char *name : names)
      if (isFile(folder + "/" + name) && tryFile(folder + "/" + name, folder))
        return true;
    return false;
  };
  std::vector<std::string> first = splitPath(std::getenv("KILN_CUDA_LIBRARY_PATH"));
  for (const std::string &folder : first)
    if (tryFolder(folder))
      return "";
  for (const char *name : names)
    if (tryFile(name, ""))
      return "";
  std::vector<std::string> searched = first;
  searched.push_back("the loader's path");
  for (bool withPython : {false, true}) {
    std::vector<std::string> folders = cudaLibrarySearchPath(withPython);
    for (size_t k = withPython ? cudaLibrarySearchPath(false).size() : 0; k < folders.size(); ++k) {
      searched.push_back(folders[k]);
      if (tryFolder(folders[k]))
        return "";
    }
  }
  if (pythonSitePackages().empty())
    searched.push_back("no python3 site-packages (python3 did not answer)");
  std::string message = "looked for";
  for (const char *name : names)
    message += std::string(name == *names.begin() ? " " : ", ") + name;
  message += " in";
  for (size_t k = 0; k < searched.size(); ++k)
    message += (k ? ", " : " ") + searched[k];
  if (!lastError.empty())
    message += " (" + lastError + ")";
  message += "; set KILN_CUDA_LIBRARY_PATH to the folder holding it";
  return message;
}

} // namespace rt
} // namespace kiln
