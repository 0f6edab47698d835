//===- ProfileReport.cpp - kiln-run --profile -----------------------------===//

#include "ProfileReport.h"

#include "kiln/Runtime/PerformanceModel.h"

#include <fstream>

namespace kiln {
namespace tools {

std::string jsonEscaped(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

double ratio(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 1.0;
}

} // namespace

bool writeProfile(const std::string &path, const std::vector<rt::KernelProfile> &profiles,
                  unsigned sampleBlocks) {
  const rt::GpuModel &gpu = rt::h200Model();
  std::ofstream out(path);
  if (!out)
    return false;
  out << "{\n  \"predicted\": \"times are predicted for an " << gpu.name
      << " by kiln's model from the counts cuda-emu made, not measured (docs/cuda-emu.md)\",\n"
      << "  \"gpu\": \"" << gpu.name << "\",\n  \"launch_us\": " << number(gpu.launchUs)
      << ",\n  \"sample_blocks\": " << sampleBlocks << ",\n  \"kernels\": [";
  for (size_t k = 0; k < profiles.size(); ++k) {
    const rt::KernelProfile &p = profiles[k];
    const emu::AccessCounts &c = p.counts;
    rt::Prediction r = rt::predict(gpu, p);
    double launches = static_cast<double>(p.launches);
    out << (k ? ",\n" : "\n") << "    {\"kernel\": \"" << jsonEscaped(p.kernel)
        << "\", \"step\": \"#" << p.steps.front() << " " << jsonEscaped(p.stepName)
        << "\", \"launches\": " << p.launches << ", \"grid\": " << p.grid
        << ", \"block\": " << p.block << ", \"registers\": " << p.registers
        << ", \"shared_bytes\": " << p.sharedBytes << ", \"occupancy\": " << number(r.occupancy)
        << ",\n     \"global_load_requested_bytes\": " << c.globalLoadRequestedBytes
        << ", \"global_load_sectors\": " << c.globalLoadSectors
        << ", \"global_store_requested_bytes\": " << c.globalStoreRequestedBytes
        << ", \"global_store_sectors\": " << c.globalStoreSectors
        << ", \"dram_bytes\": " << c.dramBytes << ",\n     \"shared_requests\": "
        << c.sharedRequests << ", \"shared_wavefronts\": " << c.sharedWavefronts
        << ", \"tensor_core_flops\": " << c.tensorCoreFlops
        << ", \"cuda_core_flops\": " << r.cudaCoreFlops
        << ", \"predicted_us\": " << number(r.predictedUs * launches)
        << ", \"ideal_us\": " << number(r.idealUs * launches) << ", \"limiter\": \""
        << r.limiter << "\",\n     \"locations\": [";
    for (size_t l = 0; l < p.locations.size(); ++l)
      out << (l ? ", " : "") << "\"" << jsonEscaped(p.locations[l]) << "\"";
    out << "]}";
  }
  out << "\n  ]\n}\n";
  out.close();
  return !out.fail();
}

void printProfile(std::FILE *out, const std::vector<rt::KernelProfile> &profiles) {
  const rt::GpuModel &gpu = rt::h200Model();
  std::fprintf(out,
               "profile (predicted for an %s from cuda-emu's counts, per launch, launch cost "
               "%.1f us apart):\n"
               "  %10s %10s %6s %6s %6s %6s %-12s %s\n",
               gpu.name, gpu.launchUs, "predicted", "ideal", "ideal%", "load", "store",
               "wave/r", "limiter", "kernel");
  for (const rt::KernelProfile &p : profiles) {
    const emu::AccessCounts &c = p.counts;
    rt::Prediction r = rt::predict(gpu, p);
    std::fprintf(out, "  %8.2fus %8.2fus %5.0f%% %5.0f%% %5.0f%% %6.2f %-12s %s\n",
                 r.predictedUs, r.idealUs,
                 r.predictedUs > 0 ? 100.0 * std::min(1.0, r.idealUs / r.predictedUs) : 100.0,
                 100.0 * ratio(c.globalLoadRequestedBytes, 32 * c.globalLoadSectors),
                 100.0 * ratio(c.globalStoreRequestedBytes, 32 * c.globalStoreSectors),
                 c.sharedRequests ? ratio(c.sharedWavefronts, c.sharedRequests) : 1.0,
                 r.limiter.c_str(), p.kernel.c_str());
  }
}

} // namespace tools
} // namespace kiln
