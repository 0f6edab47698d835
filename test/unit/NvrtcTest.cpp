//===- NvrtcTest.cpp - the emulator's kernel text also compiles for GPUs --===//

#include "kiln/CodeGen/DevicePrelude.h"
#include "kiln/CodeGen/Nvrtc.h"

#include "gtest/gtest.h"

#include <fstream>
#include <sstream>

using namespace kiln::codegen;

namespace {

std::string readSource(const char *relative) {
  std::ifstream in(std::string(KILN_SOURCE_DIR) + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class NvrtcArch : public ::testing::TestWithParam<const char *> {};

// The kernels the emulator tests run are the same text NVRTC compiles: for
// each architecture kiln targets by default, PTX and a cubin, and ptxas
// reports registers and no spills for every kernel.
TEST_P(NvrtcArch, CompilesTheEmulatorTestKernels) {
  if (!haveNvrtc())
    GTEST_SKIP() << "built without the CUDA toolkit";
  std::string source = readSource("test/unit/emu/TestKernels.cu");
  ASSERT_FALSE(source.empty());
  NvrtcResult r = compileCuda(source, "TestKernels.cu", GetParam());
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_NE(r.ptx.find(".entry"), std::string::npos);
  EXPECT_NE(r.ptx.find(std::string(".target ") + GetParam()), std::string::npos);
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_EQ(r.resources.size(), 17u) << r.log;
  for (const auto &[kernel, usage] : r.resources) {
    EXPECT_GT(usage.registers, 0) << kernel;
    EXPECT_FALSE(usage.spills()) << kernel;
  }
}

// The device prelude's inline PTX (cp.async, ldmatrix, mma.sync,
// vector accesses), through the kernels the profile tests run on cuda-emu.
TEST_P(NvrtcArch, CompilesTheDevicePreludeAndTheProfiledKernels) {
  if (!haveNvrtc())
    GTEST_SKIP() << "built without the CUDA toolkit";
  std::string source = readSource("test/unit/emu/ProfileKernels.cu");
  ASSERT_FALSE(source.empty());
  NvrtcResult r = compileCuda(std::string(devicePrelude()) + source, "ProfileKernels.cu",
                              GetParam());
  ASSERT_TRUE(r.ok) << r.log;
  for (const char *instruction : {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                                  "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                  "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
                                  "cp.async.cg.shared.global", "cp.async.wait_group",
                                  "ld.global.v4.f32", "wmma.load.a.sync", "wmma.store.d.sync"})
    EXPECT_NE(r.ptx.find(instruction), std::string::npos) << instruction;
  EXPECT_EQ(r.resources.size(), 9u) << r.log;
  for (const auto &[kernel, usage] : r.resources)
    EXPECT_FALSE(usage.spills()) << kernel;
}

INSTANTIATE_TEST_SUITE_P(DefaultArchitectures, NvrtcArch, ::testing::Values("sm_80", "sm_90"));

TEST(Nvrtc, ReportsErrorsWithTheSourceName) {
  if (!haveNvrtc())
    GTEST_SKIP() << "built without the CUDA toolkit";
  NvrtcResult r = compileCuda("__global__ void k(float *p) { p[0] = undefined_name; }\n",
                              "region_7.cu", "sm_90");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("region_7.cu(1)"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("undefined_name"), std::string::npos) << r.log;
}

TEST(Nvrtc, ParsesThePtxasReport) {
  auto resources = parsePtxasReport(
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'kiln_loop_3' for 'sm_90'\n"
      "ptxas info    : Function properties for kiln_loop_3\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]\n");
  ASSERT_EQ(resources.size(), 1u);
  const KernelResources &r = resources["kiln_loop_3"];
  EXPECT_EQ(r.registers, 40);
  EXPECT_EQ(r.sharedBytes, 2048);
  EXPECT_EQ(r.stackBytes, 8);
  EXPECT_EQ(r.spillStoreBytes, 4);
  EXPECT_EQ(r.spillLoadBytes, 12);
  EXPECT_TRUE(r.spills());
  // The kernel report's line: spills and the stack frame both flagged.
  EXPECT_EQ(r.summary(),
            "40 registers, 2048 bytes shared, SPILLS 4/12 bytes, STACK FRAME 8 bytes");
  KernelResources clean;
  clean.registers = 128;
  EXPECT_EQ(clean.summary(107520), "128 registers, 0 bytes shared + 107520 dynamic, no spills");
}

} // namespace
