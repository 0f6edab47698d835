//===- CpuCode.cpp - choosing, checking and linking the CPU kernels -------===//

#include "CpuCode.h"

#include "kiln/Runtime/CpuLevels.h"

#include <cstdlib>

namespace kiln {
namespace rt {

std::string hostCpuLevel() {
  if (const char *simulated = std::getenv("KILN_SIMULATE_CPU_LEVEL"); simulated && *simulated)
    return simulated;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3"))
    return "x86-64-v3";
  if (__builtin_cpu_supports("x86-64-v2"))
    return "x86-64-v2";
  return "x86-64";
#else
  return "";
#endif
}

bool cpuLevelCovers(const std::string &host, const std::string &level) {
  int h = cpuLevelRank(host.c_str()), l = cpuLevelRank(level.c_str());
  return h >= 0 && l >= 0 && h >= l;
}

Result<std::unique_ptr<CpuCode>> CpuCode::load(const Program &program, bool portable) {
  const DeviceCodeDesc *tuned = nullptr, *baseline = nullptr;
  for (const DeviceCodeDesc &code : program.deviceCode) {
    if (code.format != "elf-rel")
      continue;
    if (cpuLevelRank(code.target.c_str()) < 0)
      return Status::error("the executable's CPU code is for '" + code.target +
                           "', which is not an x86-64 level this runtime knows");
    (code.target == kCpuBaseline ? baseline : tuned) = &code;
  }
  bool anyKernels = false;
  for (const StepDesc &step : program.steps)
    anyKernels |= !step.cpuKernels.empty();
  if (!tuned && !baseline) {
    if (anyKernels)
      return Status::error("the executable's steps call CPU kernels but it has no CPU code");
    return std::unique_ptr<CpuCode>();
  }
  std::string host = hostCpuLevel();
  const DeviceCodeDesc *chosen = portable || !tuned ? baseline : tuned;
  if (!chosen)
    return Status::error("the executable has no portable x86-64 CPU code");
  if (!cpuLevelCovers(host, chosen->target))
    return Status::error(
        "this executable's CPU code is built for " + chosen->target + ", and this CPU is " +
        (host.empty() ? std::string("not x86-64") : host) +
        (chosen == tuned ? "; run its portable x86-64 code with kiln-run --cpu-portable, or "
                           "compile with kilnc --cpu=" + host
                         : std::string()));
  auto object = CpuObject::link(chosen->data, chosen->size);
  if (!object)
    return object.status();
  auto code = std::make_unique<CpuCode>();
  code->object_ = std::move(*object);
  code->level_ = chosen->target;
  code->kernels_.resize(program.steps.size());
  for (size_t s = 0; s < program.steps.size(); ++s)
    for (const CpuKernelDesc &kernel : program.steps[s].cpuKernels) {
      auto fn = reinterpret_cast<CpuKernelFn>(code->object_->symbol(kernel.symbol));
      if (!fn)
        return Status::error(stepLabel(s, program.steps[s]) + " calls CPU kernel '" +
                             kernel.symbol + "', which the " + chosen->target +
                             " code does not define");
      code->kernels_[s].push_back(fn);
    }
  return code;
}

} // namespace rt
} // namespace kiln
