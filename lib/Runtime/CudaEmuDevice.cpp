//===- CudaEmuDevice.cpp - steps as emulated CUDA kernels -----------------===//

#include "CudaEmuDevice.h"

#include "kiln/Reference/SizeCode.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kiln {
namespace rt {

/// A kernel's text fixes its launch and its buffers (element counts are
/// literals in it, and a tile assumes its warps) and computes one step's
/// ops: a step that launches it otherwise would run outside its buffers or
/// its shared memory, or compute something else, so every difference from
/// the library's record is refused before anything runs.
Status CudaEmuDevice::checkLaunch(void *library, const Program &program, size_t index) {
  const StepDesc &step = program.steps[index];
  std::string what = "step #" + std::to_string(index) + " (" + step.name + ") launches kernel '" +
                     step.kernel + "'";
  const auto *record = static_cast<const long long *>(
      dlsym(library, ("kiln_emu_launch_" + step.kernel).c_str()));
  if (!record)
    return Status::error(what + ", whose launch the cuda-emu library does not record (it was "
                         "built by an older kilnc: compile the model again)");
  long long grid = record[0], block = record[1], params = record[2];
  // A kernel over symbolic sizes records its size parameters' codes, its
  // grid's and each buffer's size as codes, evaluated for the program's
  // sizes (-1 in the record above where a code stands instead).
  const auto *sizes = static_cast<const long long *>(
      dlsym(library, ("kiln_emu_sizes_" + step.kernel).c_str()));
  size_t given = step.kernelInputs.size() + step.outputs.size();
  if (params < 0 || given != static_cast<size_t>(params))
    return Status::error(what + " with " + std::to_string(given) + " buffers, but it takes " +
                         std::to_string(params));
  std::vector<long long> paramBytes;
  if (Status s = symbolicLaunch(sizes, program, step, what, grid, paramBytes); !s)
    return s;
  if (step.grid != grid || step.block != block)
    return Status::error(what + " as <<<" + std::to_string(step.grid) + ", " +
                         std::to_string(step.block) + ">>>, but it was generated for <<<" +
                         std::to_string(grid) + ", " + std::to_string(block) + ">>>");
  const auto *shared = static_cast<const long long *>(
      dlsym(library, ("kiln_emu_shared_" + step.kernel).c_str()));
  long long sharedBytes = shared ? *shared : 0;
  if (step.dynamicShared != sharedBytes)
    return Status::error(what + " with " + std::to_string(step.dynamicShared) +
                         " bytes of dynamic shared memory, but it was generated for " +
                         std::to_string(sharedBytes));
  const long long *param = record + 3;
  for (size_t a = 0; a < given; ++a, param += 2) {
    bool isOutput = a >= step.kernelInputs.size();
    uint32_t value = isOutput ? step.outputs[a - step.kernelInputs.size()]
                              : step.inputs[step.kernelInputs[a]];
    const TensorSpec &type = program.values[value].type;
    long long bytes = param[0] < 0 && a < paramBytes.size() ? paramBytes[a] : param[0];
    if (type.byteSize() != bytes || static_cast<long long>(type.dtype) != param[1])
      return Status::error(what + " with a " + std::to_string(type.byteSize()) + "-byte " +
                           ref::dtypeName(type.dtype) + " buffer as parameter " +
                           std::to_string(a) + ", which it reads as " + std::to_string(bytes) +
                           " bytes of " + ref::dtypeName(static_cast<ref::DType>(param[1])));
  }
  const long long *positions = param + 1;
  if (static_cast<size_t>(param[0]) != step.kernelInputs.size() ||
      !std::equal(step.kernelInputs.begin(), step.kernelInputs.end(), positions))
    return Status::error(what + " on other step inputs than it was generated for");
  const long long *steps = positions + param[0];
  if (std::find(steps + 1, steps + 1 + steps[0], static_cast<long long>(index)) ==
      steps + 1 + steps[0])
    return Status::error(what + ", which was generated for another step");
  return Status::ok();
}

Status CudaEmuDevice::symbolicLaunch(const long long *sizes, const Program &program,
                                     const StepDesc &step, const std::string &what,
                                     long long &grid, std::vector<long long> &paramBytes) {
  if (!sizes) {
    if (!step.kernelSizes.empty())
      return Status::error(what + " with " + std::to_string(step.kernelSizes.size()) +
                           " size parameters, but it takes none");
    return Status::ok();
  }
  // [sizes, (length, code) each], [grid length, code], [(length, code) per
  // buffer parameter: 0 for a static one]. The record is the compiler's
  // own, for as many buffers as its launch record says (checked against
  // the step first); the codes are evaluated as the loader evaluates the
  // file's.
  const long long *at = sizes;
  auto code = [&](std::vector<int64_t> &out) {
    long long length = *at++;
    out.assign(at, at + length);
    at += length;
  };
  long long count = *at++;
  if (static_cast<size_t>(count) != step.kernelSizes.size())
    return Status::error(what + " with " + std::to_string(step.kernelSizes.size()) +
                         " size parameters, but it takes " + std::to_string(count));
  std::vector<std::string> names;
  for (size_t k = 0; k < program.symbolValues.size(); ++k)
    names.push_back("s" + std::to_string(k));
  for (long long k = 0; k < count; ++k) {
    std::vector<int64_t> expected;
    code(expected);
    if (expected != step.kernelSizeCodes[static_cast<size_t>(k)])
      return Status::error(what + " with size parameter " + std::to_string(k) + " '" +
                           ref::sizeCodeText(step.kernelSizeCodes[k].data(),
                                             step.kernelSizeCodes[k].size(), names, {}) +
                           "', but it was generated for '" +
                           ref::sizeCodeText(expected.data(), expected.size(), names, {}) + "'");
  }
  auto evaluate = [&](const std::vector<int64_t> &c, long long &value) {
    int64_t v = 0;
    std::string problem = ref::evaluateSizeCode(c.data(), c.size(), program.symbolValues,
                                                nullptr, v);
    value = v;
    return problem.empty() ? Status::ok()
                           : Status::error(what + ": its recorded launch is malformed: " + problem);
  };
  std::vector<int64_t> gridCode;
  code(gridCode);
  if (Status s = evaluate(gridCode, grid); !s)
    return s;
  size_t buffers = step.kernelInputs.size() + step.outputs.size();
  for (size_t a = 0; a < buffers; ++a) {
    std::vector<int64_t> bytesCode;
    code(bytesCode);
    long long bytes = -1;
    if (!bytesCode.empty())
      if (Status s = evaluate(bytesCode, bytes); !s)
        return s;
    paramBytes.push_back(bytes);
  }
  return Status::ok();
}

void CudaEmuDevice::addProfile(const Program &program, size_t index,
                               const emu::Profile &profile) const {
  const StepDesc &step = program.steps[index];
  std::lock_guard<std::mutex> lock(profileMutex_);
  KernelProfile &p = profiles_[step.kernel];
  if (p.kernel.empty()) {
    p.kernel = step.kernel;
    p.stepName = step.name;
    p.grid = step.grid;
    p.block = step.block;
    for (const emu::MemoryRange &range : profile.global)
      p.minimumBytes += range.bytes;
    // What the compiler recorded for a profiled build: sm_90 registers and
    // shared bytes, the step's FLOPs, whether they suit Tensor Cores.
    if (const auto *record = static_cast<const long long *>(
            dlsym(library_, ("kiln_emu_profile_" + step.kernel).c_str()))) {
      p.registers = static_cast<int>(record[0]);
      // Static (from NVRTC; -1: unknown) and dynamic bytes.
      p.sharedBytes = record[1] < 0 ? -1 : static_cast<int>(record[1] + step.dynamicShared);
      p.flops = static_cast<double>(record[2]);
      // Over symbolic sizes: this signature's, from the recorded code.
      const auto *flops = static_cast<const long long *>(
          dlsym(library_, ("kiln_emu_flops_" + step.kernel).c_str()));
      if (record[2] < 0 && flops) {
        int64_t value = 0;
        std::vector<int64_t> code(flops + 1, flops + 1 + flops[0]);
        p.flops = ref::evaluateSizeCode(code.data(), code.size(), program.symbolValues, nullptr,
                                        value)
                      .empty()
                      ? static_cast<double>(value)
                      : 0.0;
      }
      p.tensorCores = record[3] != 0;
    }
  }
  if (std::find(p.steps.begin(), p.steps.end(), index) == p.steps.end()) {
    p.steps.push_back(index);
    for (const std::string &location : opLocations(step)) // steps sharing the kernel: each once
      if (std::find(p.locations.begin(), p.locations.end(), location) == p.locations.end())
        p.locations.push_back(location);
  }
  ++p.launches;
  p.counts += profile.counts;
}

std::vector<KernelProfile> CudaEmuDevice::kernelProfiles(const Program &) const {
  std::lock_guard<std::mutex> lock(profileMutex_);
  std::vector<KernelProfile> all;
  for (const auto &[name, profile] : profiles_)
    all.push_back(profile);
  std::sort(all.begin(), all.end(), [](const KernelProfile &a, const KernelProfile &b) {
    return a.steps.front() < b.steps.front();
  });
  return all;
}

Result<std::unique_ptr<CudaEmuDevice>>
CudaEmuDevice::load(const Program &program, const emu::LaunchOptions &options,
                    bool convEpilogueKernels, std::optional<unsigned> profileSample) {
  const DeviceCodeDesc *code = nullptr;
  for (const DeviceCodeDesc &d : program.deviceCode)
    if (d.target == "cuda-emu" && d.format == "elf-so")
      code = &d;
  if (!code)
    return Status::error("this executable has no cuda-emu kernels; compile it with kilnc "
                         "--target=cuda-emu");
  // dlopen needs a file: an anonymous in-memory one, gone when closed.
  int fd = memfd_create("kiln-cuda-emu-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return Status::error(std::string("cannot create the kernel library file: ") +
                         std::strerror(errno));
  size_t written = 0;
  while (written < code->size) {
    ssize_t n = write(fd, code->data + written, code->size - written);
    if (n <= 0) {
      close(fd);
      return Status::error("cannot write the kernel library");
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  close(fd);
  if (!library) {
    std::string why = dlerror();
    if (why.find("__asan") != std::string::npos || why.find("__ubsan") != std::string::npos)
      return Status::error("this executable's cuda-emu kernels were built with kilnc "
                           "--emu-sanitize; run it with a kiln-run built with the same sanitizers "
                           "(-DKILN_SANITIZE, as scripts/test --sanitize builds): " + why);
    return Status::error("cannot load the cuda-emu kernels: " + why);
  }
  std::unique_ptr<CudaEmuDevice> device(new CudaEmuDevice());
  device->library_ = library;
  if (profileSample && !dlsym(library, "kiln_emu_traced"))
    return Status::error("this executable's cuda-emu kernels were built without access tracing, "
                         "so they cannot be profiled: compile the model with kilnc "
                         "--target=cuda-emu --emu-profile");
  device->profileSample_ = profileSample;
  device->options_ = options;
  device->convEpilogueKernels_ = convEpilogueKernels;
  for (size_t k = 0; k < program.steps.size(); ++k) {
    const StepDesc &step = program.steps[k];
    ThreadEntry entry = nullptr;
    if (!step.kernel.empty()) {
      entry = reinterpret_cast<ThreadEntry>(
          dlsym(library, ("kiln_emu_thread_" + step.kernel).c_str()));
      if (!entry)
        return Status::error("step #" + std::to_string(k) + " (" + step.name + ") names kernel '" +
                             step.kernel + "', which the cuda-emu library does not have");
      Status launch = checkLaunch(library, program, k);
      if (!launch)
        return launch;
    }
    device->entries_.push_back(entry);
  }
  return device;
}

CudaEmuDevice::~CudaEmuDevice() {
  if (library_)
    dlclose(library_);
}

Status CudaEmuDevice::runStep(const Program &program, size_t index,
                              const std::vector<const uint8_t *> &inputs,
                              const std::vector<uint8_t *> &outputs) const {
  const StepDesc &step = program.steps[index];
  if (step.gemm) {
    // The GPU runs this step with cuBLASLt: run the same descriptor, so its
    // translation from the graph's row-major ops is checked here.
    const GemmCall &g = *step.gemm;
    auto input = [&](int32_t k) { return k < 0 ? nullptr : inputs[static_cast<size_t>(k)]; };
    runGemmOnHost(g, input(g.a), input(g.b), input(g.c), input(g.bias), outputs[0]);
    return Status::ok();
  }
  if (step.conv) {
    // Likewise for a cuDNN step. With --conv-epilogue-kernels, as when
    // cuDNN has no engine for the fused graph: the plain convolution, then
    // the step's epilogue kernel.
    ConvCall c = *step.conv;
    bool epilogueKernel = convEpilogueKernels_ && entries_[index];
    if (epilogueKernel)
      c.bias = c.relu = false;
    runConvOnHost(c, inputs[static_cast<size_t>(c.x)], inputs[static_cast<size_t>(c.filter)],
                  c.bias ? inputs[static_cast<size_t>(c.biasInput)] : nullptr, outputs[0]);
    if (!epilogueKernel)
      return Status::ok();
  }
  ThreadEntry entry = entries_[index];
  if (!entry)
    return runStepOnCpu(program, step, inputs, outputs);
  std::vector<void *> args;
  for (uint32_t k : step.kernelInputs)
    args.push_back(const_cast<uint8_t *>(inputs[k]));
  for (uint8_t *out : outputs)
    args.push_back(out);
  size_t buffers = args.size();
  // Then the sizes of a kernel over symbolic sizes: as cudaLaunchKernel
  // takes parameters, each a pointer to its value.
  for (const int64_t &size : step.kernelSizes)
    args.push_back(const_cast<int64_t *>(&size));
  // Checked mode: every parameter in its own guarded buffer (the arena
  // packs them together, so an overrun would land in a neighbour).
  std::vector<void *> guarded;
  if (options_.checked) {
    for (size_t a = 0; a < buffers; ++a) {
      bool isOutput = a >= step.kernelInputs.size();
      uint32_t value = isOutput ? step.outputs[a - step.kernelInputs.size()]
                                : step.inputs[step.kernelInputs[a]];
      size_t bytes = static_cast<size_t>(program.values[value].type.byteSize());
      std::string name = "step #" + std::to_string(index) + " " + step.kernel + " " +
                         (isOutput ? "output " + std::to_string(a - step.kernelInputs.size())
                                   : "input " + std::to_string(step.kernelInputs[a]));
      void *copy = emu::allocateGuarded(bytes, name.c_str());
      if (!copy) {
        for (void *g : guarded)
          emu::freeGuarded(g);
        return Status::error("cannot map a guarded buffer for " + name);
      }
      // Unwritten elements show as NaN; a cuDNN step's epilogue updates
      // the convolution's output in place.
      if (isOutput && !step.conv)
        std::memset(copy, 0xFF, bytes);
      else
        std::memcpy(copy, args[a], bytes);
      guarded.push_back(copy);
    }
    guarded.insert(guarded.end(), args.begin() + buffers, args.end());
  }
  emu::LaunchOptions options = options_;
  emu::Profile profile;
  if (profileSample_) {
    profile.sampleBlocks = *profileSample_;
    const std::vector<void *> &pointers = guarded.empty() ? args : guarded;
    for (size_t a = 0; a < buffers; ++a) {
      bool isOutput = a >= step.kernelInputs.size();
      uint32_t value = isOutput ? step.outputs[a - step.kernelInputs.size()]
                                : step.inputs[step.kernelInputs[a]];
      profile.global.push_back(
          {pointers[a], static_cast<size_t>(program.values[value].type.byteSize())});
    }
    options.profile = &profile;
  }
  emu::LaunchResult result =
      emu::launch(emu::Dim3{step.grid, 1, 1}, emu::Dim3{step.block, 1, 1}, step.dynamicShared,
                  options,
                  [&] { entry(guarded.empty() ? args.data() : guarded.data()); });
  if (profileSample_ && result.ok)
    addProfile(program, index, profile);
  for (size_t a = 0; a < guarded.size() && a < buffers; ++a) {
    if (a >= step.kernelInputs.size())
      std::memcpy(args[a], guarded[a],
                  program.values[step.outputs[a - step.kernelInputs.size()]].type.byteSize());
    emu::freeGuarded(guarded[a]);
  }
  if (!result.ok)
    return Status::error("step #" + std::to_string(index) + " (" + step.name + "): kernel " +
                         step.kernel + " on cuda-emu: " + result.error);
  return Status::ok();
}

} // namespace rt
} // namespace kiln
