//===- Nvrtc.cpp - CUDA C++ to PTX and cubin, without a GPU ---------------===//

#include "kiln/CodeGen/Nvrtc.h"

#include <cstdio>
#include <sstream>

#ifdef KILN_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace kiln {
namespace codegen {

std::string KernelResources::summary(unsigned dynamicSharedBytes) const {
  std::string s = std::to_string(registers) + " registers, " + std::to_string(sharedBytes) +
                  " bytes shared";
  if (dynamicSharedBytes)
    s += " + " + std::to_string(dynamicSharedBytes) + " dynamic";
  s += spills() ? ", SPILLS " + std::to_string(spillStoreBytes) + "/" +
                      std::to_string(spillLoadBytes) + " bytes"
                : std::string(", no spills");
  // Arrays ptxas could not keep in registers: local memory, as slow as
  // spills (ptxas counts them apart).
  if (stackBytes > 0)
    s += ", STACK FRAME " + std::to_string(stackBytes) + " bytes";
  return s;
}

std::map<std::string, KernelResources> parsePtxasReport(const std::string &log) {
  std::map<std::string, KernelResources> result;
  std::istringstream lines(log);
  std::string line, current;
  while (std::getline(lines, line)) {
    auto quoted = [&](const std::string &after) {
      size_t at = line.find(after);
      if (at == std::string::npos)
        return std::string();
      size_t begin = line.find('\'', at);
      size_t end = begin == std::string::npos ? begin : line.find('\'', begin + 1);
      return end == std::string::npos ? std::string() : line.substr(begin + 1, end - begin - 1);
    };
    std::string entry = quoted("Compiling entry function");
    if (!entry.empty()) {
      current = entry;
      result[current];
      continue;
    }
    size_t props = line.find("Function properties for ");
    if (props != std::string::npos) {
      current = line.substr(props + 24);
      while (!current.empty() && (current.back() == ' ' || current.back() == '\r'))
        current.pop_back();
      result[current];
      continue;
    }
    if (current.empty())
      continue;
    KernelResources &r = result[current];
    int stack, stores, loads;
    if (std::sscanf(line.c_str(), " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                    &stack, &stores, &loads) == 3) {
      r.stackBytes = stack;
      r.spillStoreBytes = stores;
      r.spillLoadBytes = loads;
    }
    size_t used = line.find("Used ");
    if (used != std::string::npos)
      std::sscanf(line.c_str() + used, "Used %d registers", &r.registers);
    size_t smem = line.find(" bytes smem");
    if (smem != std::string::npos) {
      size_t begin = line.rfind(' ', smem - 1);
      r.sharedBytes = std::atoi(line.c_str() + (begin == std::string::npos ? 0 : begin + 1));
    }
  }
  return result;
}

std::vector<std::string> nvrtcOptions(const std::string &arch) {
  return {"-arch=" + arch, "-std=c++17", "-default-device", "-Xptxas=-v"
#ifdef KILN_CUDA_INCLUDE_DIR
          , "--include-path=" KILN_CUDA_INCLUDE_DIR
#endif
  };
}

#ifdef KILN_HAVE_NVRTC

bool haveNvrtc() { return true; }

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcResult compileCuda(const std::string &source, const std::string &name,
                        const std::string &arch, const std::vector<std::string> &extraOptions) {
  NvrtcResult result;
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), name.c_str(), 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    result.log = "nvrtc: cannot create a program";
    return result;
  }
  std::vector<std::string> options = nvrtcOptions(arch);
  options.insert(options.end(), extraOptions.begin(), extraOptions.end());
  std::vector<const char *> raw;
  for (const std::string &o : options)
    raw.push_back(o.c_str());
  nvrtcResult status = nvrtcCompileProgram(program, static_cast<int>(raw.size()), raw.data());
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  result.log.resize(size);
  if (size)
    nvrtcGetProgramLog(program, result.log.data());
  while (!result.log.empty() && result.log.back() == '\0')
    result.log.pop_back();
  if (status == NVRTC_SUCCESS) {
    nvrtcGetPTXSize(program, &size);
    result.ptx.resize(size);
    nvrtcGetPTX(program, result.ptx.data());
    nvrtcGetCUBINSize(program, &size);
    result.cubin.resize(size);
    if (size)
      nvrtcGetCUBIN(program, result.cubin.data());
    result.resources = parsePtxasReport(result.log);
    result.ok = true;
  }
  nvrtcDestroyProgram(&program);
  return result;
}

#else

bool haveNvrtc() { return false; }
std::string nvrtcVersion() { return "none"; }

NvrtcResult compileCuda(const std::string &, const std::string &, const std::string &,
                        const std::vector<std::string> &) {
  NvrtcResult result;
  result.log = "kiln was built without the CUDA toolkit (no NVRTC): cannot compile CUDA kernels";
  return result;
}

#endif

} // namespace codegen
} // namespace kiln
