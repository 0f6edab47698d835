//===- RuntimeTest.cpp - loader and sessions ------------------------------===//

#include "../../lib/Runtime/HostGemm.h"
#include "../../lib/Runtime/Program.h"

#include "kiln/CodeGen/CpuCode.h"
#include "kiln/Exec/ExecOps.h"
#include "kiln/Frontend/KgParser.h"
#include "kiln/Lowering/Passes.h"
#include "kiln/Reference/Kernels.h"
#include "kiln/Runtime/ExecutableFile.h"
#include "kiln/Runtime/Runtime.h"
#include "kiln/Target/ExecutableWriter.h"
#include "kiln/Transforms/Passes.h"

#include "kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

#include <functional>
#include <cmath>
#include <cstring>
#include <random>

using namespace kiln;

namespace {

/// Compiles .kg source (or, `graphIR`, kiln Graph IR text) to .kx bytes
/// through the library (what kilnc does).
std::vector<uint8_t> compile(const std::string &source, int64_t maxStreams = 4,
                             bool libraryCalls = false, bool cpuCode = false,
                             bool graphIR = false) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::kiln::exec::ExecDialect, mlir::kiln::KilnDialect,
                      mlir::func::FuncDialect>();
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &d) {
    ADD_FAILURE() << d.str();
    return mlir::success();
  });
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, "test.kg"),
                               llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      graphIR ? mlir::parseSourceString<mlir::ModuleOp>(source, &context)
              : frontend::parseKgModel(sourceMgr, &context);
  if (!module)
    return {};
  mlir::PassManager pm(&context);
  mlir::kiln::buildDefaultGraphPipeline(pm);
  // Library calls are for GPU steps: place the ops first, as kilnc does.
  if (libraryCalls)
    pm.nest<mlir::func::FuncOp>().addPass(mlir::kiln::createKilnPlace());
  mlir::kiln::PlanOptions plan;
  plan.maxStreams = maxStreams;
  plan.selectImplementations = libraryCalls;
  plan.implementation.impl = "library";
  mlir::kiln::buildExecPlanPipeline(pm, plan);
  if (mlir::failed(pm.run(*module)))
    return {};
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  auto func = *module->getOps<mlir::func::FuncOp>().begin();
  mlir::kiln::DeviceCode code;
  std::string error;
  if (cpuCode && mlir::failed(mlir::kiln::buildCpuCode(func, {}, code, error))) {
    ADD_FAILURE() << error;
    return {};
  }
  if (mlir::failed(mlir::kiln::writeExecutable(func, os, code)))
    return {};
  os.flush();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

/// An executable compiled from .kg source and a session on it.
struct Opened {
  std::shared_ptr<const rt::Executable> exe;
  std::unique_ptr<rt::Session> session;
};

/// Compiles, loads and opens `source` on the default device; on any
/// failure, a test failure and no session.
Opened openSession(const std::string &source) {
  std::vector<uint8_t> kx = compile(source);
  if (kx.empty()) {
    ADD_FAILURE() << "does not compile:\n" << source;
    return {};
  }
  auto exe = rt::Executable::loadMemory(kx.data(), kx.size());
  if (!exe) {
    ADD_FAILURE() << exe.status().message();
    return {};
  }
  auto session = rt::Session::create(*exe, {});
  if (!session) {
    ADD_FAILURE() << session.status().message();
    return {*exe, nullptr};
  }
  return {*exe, std::move(*session)};
}

const char *kBranches = R"(
input x: f32[4, 8]
weight w1: f32[8, 8] = random(seed=1, scale=0.5)
weight w2: f32[8, 8] = random(seed=2, scale=0.5)
a = tanh(matmul(x, w1))
b = sigmoid(matmul(x, w2))
y = a * b + x
output y
)";

std::vector<float> run(const std::vector<uint8_t> &kx, const std::vector<float> &input) {
  auto exe = rt::Executable::loadMemory(kx.data(), kx.size());
  EXPECT_TRUE(exe) << exe.status().message();
  if (!exe)
    return {};
  auto session = rt::Session::create(*exe, {});
  EXPECT_TRUE(session);
  EXPECT_TRUE((*session)->setInput(0, input.data(), input.size() * 4));
  rt::Status s = (*session)->run();
  EXPECT_TRUE(s) << s.message();
  const rt::TensorSpec &out = (*exe)->outputs()[0];
  const float *data = static_cast<const float *>((*session)->outputData(0));
  return std::vector<float>(data, data + out.numElements());
}

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

TEST(Runtime, CpuKernelStandInsTouchWhatTheLoaderAllows) {
  // The stand-ins that replace native CPU kernels for fuzzing write zeros
  // where a run writes, and what follows reads them: the run
  // x * 3 + b gives zeros, the softmax over axis 0 after it (not compiled)
  // makes each column uniform, 1/4. The native code computes the real thing.
  const char *source = R"(
input x: f32[4, 6]
weight b: f32[6] = random(seed=4, scale=0.5)
h = x * 3.0 + b
y = softmax(h, axis=0)
output y
)";
  std::vector<uint8_t> kx = compile(source, 1, false, /*cpuCode=*/true);
  ASSERT_FALSE(kx.empty());
  auto exe = rt::Executable::loadMemory(kx.data(), kx.size());
  ASSERT_TRUE(exe) << exe.status().message();
  ASSERT_NE((*exe)->describe().find("elf-rel"), std::string::npos);
  std::vector<float> x = randomFloats(24, 9);
  for (bool standIns : {true, false}) {
    rt::SessionOptions options;
    options.device = rt::DeviceChoice::CPU;
    options.cpuKernelStandIns = standIns;
    auto session = rt::Session::create(*exe, options);
    ASSERT_TRUE(session) << session.status().message();
    ASSERT_TRUE((*session)->setInput(0, x.data(), x.size() * 4));
    rt::Status s = (*session)->run();
    ASSERT_TRUE(s) << s.message();
    const float *y = static_cast<const float *>((*session)->outputData(0));
    bool uniform = true;
    for (int k = 0; k < 24; ++k)
      uniform &= y[k] == 0.25f;
    EXPECT_EQ(uniform, standIns);
  }
  // Only the CPU device has native kernels to stand in for.
  rt::SessionOptions reference;
  reference.device = rt::DeviceChoice::Reference;
  reference.cpuKernelStandIns = true;
  EXPECT_FALSE(rt::Session::create(*exe, reference));
}

TEST(Runtime, RunsAndMatchesTheReferenceKernels) {
  std::vector<uint8_t> kx = compile(kBranches);
  ASSERT_FALSE(kx.empty());
  std::vector<float> x = randomFloats(32, 1);
  std::vector<float> y = run(kx, x);
  ASSERT_EQ(y.size(), 32u);
  // The same computation with the reference kernels directly.
  auto exe = *rt::Executable::loadMemory(kx.data(), kx.size());
  ASSERT_EQ(exe->numStreams(), 2);
  ref::Tensor tx = ref::Tensor::zeros(ref::DType::F64, {4, 8});
  for (int k = 0; k < 32; ++k)
    tx.f[k] = x[k];
  auto w = [](uint64_t seed) {
    // SplitMix64 as in the .kg random initializer.
    ref::Tensor t = ref::Tensor::zeros(ref::DType::F64, {8, 8});
    uint64_t state = seed;
    for (int k = 0; k < 64; ++k) {
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      t.f[k] = static_cast<float>((2.0 * (static_cast<double>(z >> 11) * 0x1.0p-53) - 1.0) * 0.5);
    }
    return t;
  };
  ref::Tensor a = ref::unary(ref::UnaryKind::Tanh, ref::matmul(tx, w(1), false, false));
  ref::Tensor b = ref::unary(ref::UnaryKind::Sigmoid, ref::matmul(tx, w(2), false, false));
  ref::Tensor expected =
      ref::binary(ref::BinaryKind::Add, ref::binary(ref::BinaryKind::Mul, a, b), tx);
  for (int k = 0; k < 32; ++k)
    EXPECT_NEAR(y[k], expected.f[k], 1e-5 + 1e-5 * std::abs(expected.f[k])) << k;
}

TEST(Runtime, SerialAndConcurrentPlansAgreeBitForBit) {
  std::vector<float> x = randomFloats(32, 2);
  std::vector<float> concurrent = run(compile(kBranches, 4), x);
  std::vector<float> serial = run(compile(kBranches, 1), x);
  ASSERT_EQ(concurrent.size(), serial.size());
  EXPECT_EQ(0, std::memcmp(concurrent.data(), serial.data(), serial.size() * 4));
}

TEST(Runtime, SessionsRejectBadInputsAndRerun) {
  std::vector<uint8_t> kx = compile(kBranches);
  auto exe = rt::Executable::loadMemory(kx.data(), kx.size());
  ASSERT_TRUE(exe);
  auto session = rt::Session::create(*exe, {});
  ASSERT_TRUE(session);
  rt::Status s = (*session)->run();
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("input 'x' was not set"), std::string::npos) << s.message();
  std::vector<float> x = randomFloats(32, 3);
  s = (*session)->setInput(0, x.data(), 31 * 4);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("f32[4, 8]) takes 128 bytes, got 124"), std::string::npos)
      << s.message();
  EXPECT_FALSE((*session)->setInput(1, x.data(), 128));
  ASSERT_TRUE((*session)->setInput(0, x.data(), 128));
  ASSERT_TRUE((*session)->run());
  std::vector<float> first(static_cast<const float *>((*session)->outputData(0)),
                           static_cast<const float *>((*session)->outputData(0)) + 32);
  ASSERT_TRUE((*session)->run()); // re-run without reloading
  EXPECT_EQ(0, std::memcmp(first.data(), (*session)->outputData(0), 128));
}

// NonZero of computed data, as the ONNX importer writes it: the positions
// with the values above 0.5 first, cut to their count once computed, then
// the values there gathered and exponentiated.
const char *kPositionsAboveHalf = R"(
#map = affine_map<()[s0] -> (s0)>
!v = tensor<12xf32, #kiln.enc<row_major, cpu>>
!b = tensor<12xi1, #kiln.enc<row_major, cpu>>
!i = tensor<12xi64, #kiln.enc<row_major, cpu>>
!n = tensor<i64, #kiln.enc<row_major, cpu>>
!p = tensor<?xi64, #kiln.enc<row_major, cpu, [s0]>>
!y = tensor<?xf32, #kiln.enc<row_major, cpu, [s0]>>
func.func @positions(%x: !v) -> (!p, !y)
    attributes {kiln.symbols = [{bound, max = 12 : i64, min = 0 : i64, name = "kept", opt = 12 : i64}]} {
  %half = kiln.constant dense<5.000000e-01> : tensor<f32> : tensor<f32, #kiln.enc<row_major, cpu>>
  %above = kiln.gt %x, %half : (!v, tensor<f32, #kiln.enc<row_major, cpu>>) -> !b
  %false = kiln.constant dense<false> : tensor<i1> : tensor<i1, #kiln.enc<row_major, cpu>>
  %not = kiln.eq %above, %false : (!b, tensor<i1, #kiln.enc<row_major, cpu>>) -> !b
  %key = kiln.cast %not {to = i64} : (!b) -> !i
  %order = kiln.argsort %key {axis = 0 : i64} : (!i) -> !i
  %one = kiln.constant dense<1> : tensor<i64> : !n
  %flags = kiln.sub %one, %key : (!n, !i) -> !i
  %count = kiln.reduce_sum %flags {axes = array<i64: 0>} : (!i) -> !n
  %positions = kiln.take_prefix %order, %count {axis = 0 : i64, length = #map} : (!i, !n) -> !p
  %values = kiln.gather %x, %positions {axis = 0 : i64} : (!v, !p) -> !y
  %y = kiln.exp %values : (!y) -> !y
  return %positions, %y : !p, !y
}
)";

TEST(Runtime, LengthsThatFollowDataAreReadMidRunForEveryRun) {
  for (int64_t streams : {1, 4}) {
    std::vector<uint8_t> kx =
        compile(kPositionsAboveHalf, streams, false, /*cpuCode=*/true, /*graphIR=*/true);
    ASSERT_FALSE(kx.empty());
    auto exe = rt::Executable::loadMemory(kx.data(), kx.size());
    ASSERT_TRUE(exe) << exe.status().message();
    EXPECT_TRUE((*exe)->hasLengthsReadMidRun());
    auto session = rt::Session::create(*exe, {});
    ASSERT_TRUE(session) << session.status().message();
    // None, some, all, some again (a signature seen before), and more
    // counts than the signatures kept, each against the expected values.
    for (int trial = 0; trial < 14; ++trial) {
      std::vector<float> x = randomFloats(12, 100 + trial);
      for (float &v : x)
        v = trial == 0 ? -std::fabs(v) : trial == 1 ? 0.5f + std::fabs(v) : v;
      if (trial == 3)
        x = randomFloats(12, 102); // trial 2's data
      ASSERT_TRUE((*session)->setInput(0, x.data(), x.size() * 4));
      rt::Status st = (*session)->run();
      ASSERT_TRUE(st) << st.message();
      std::vector<int64_t> positions;
      for (int64_t k = 0; k < 12; ++k)
        if (x[k] > 0.5f)
          positions.push_back(k);
      ASSERT_EQ((*session)->outputShape(0), ref::Shape{static_cast<int64_t>(positions.size())})
          << "trial " << trial;
      ASSERT_EQ((*session)->outputShape(1), ref::Shape{static_cast<int64_t>(positions.size())});
      const auto *p = static_cast<const int64_t *>((*session)->outputData(0));
      const auto *y = static_cast<const float *>((*session)->outputData(1));
      for (size_t k = 0; k < positions.size(); ++k) {
        EXPECT_EQ(p[k], positions[k]) << "trial " << trial << " entry " << k;
        EXPECT_NEAR(y[k], std::exp(x[positions[k]]), 1e-6 * std::exp(x[positions[k]]));
      }
    }
  }
}

// A training step as kiln-optimizer writes it: w is a state starting at
// [1, 2, 3, 4], its next value w - 0.5 x; the loss sum(x * w).
const char *kTrainingStep = R"(
!v = tensor<4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>
func.func @step(%x: !v {kiln.name = "x"},
                %w: !v {kiln.name = "w", kiln.state = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>,
                        kiln.state_output = 1 : i64})
    -> (!s {kiln.name = "loss"}, !v {kiln.name = "w"}) {
  %p = kiln.mul %x, %w : (!v, !v) -> !v
  %loss = kiln.reduce_sum %p {axes = array<i64: 0>} : (!v) -> !s
  %lr = kiln.constant dense<5.000000e-01> : tensor<f32> : !s
  %d = kiln.mul %x, %lr : (!v, !s) -> !v
  %next = kiln.sub %w, %d : (!v, !v) -> !v
  return %loss, %next : !s, !v
}
)";

TEST(Runtime, StatesStartFromTheFileAndTakeTheirOutputAfterEachRun) {
  std::vector<uint8_t> kx = compile(kTrainingStep, 1, false, false, /*graphIR=*/true);
  ASSERT_FALSE(kx.empty());
  auto exe = rt::Executable::loadMemory(kx.data(), kx.size());
  ASSERT_TRUE(exe) << exe.status().message();
  ASSERT_EQ((*exe)->states().size(), 1u);
  auto session = rt::Session::create(*exe, {});
  ASSERT_TRUE(session);
  auto state = [&] {
    const float *w = static_cast<const float *>((*session)->stateData(0));
    return std::vector<float>(w, w + 4);
  };
  auto loss = [&] { return *static_cast<const float *>((*session)->outputData(0)); };
  EXPECT_EQ(state(), (std::vector<float>{1, 2, 3, 4}));
  // A run that fails (x not set) leaves the state as it was.
  EXPECT_FALSE((*session)->run());
  EXPECT_EQ(state(), (std::vector<float>{1, 2, 3, 4}));
  std::vector<float> x = {1, 1, 1, 1};
  ASSERT_TRUE((*session)->setInput(0, x.data(), 16));
  ASSERT_TRUE((*session)->run());
  EXPECT_EQ(loss(), 10.0f);
  EXPECT_EQ(state(), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
  ASSERT_TRUE((*session)->run());
  EXPECT_EQ(loss(), 8.0f);
  EXPECT_EQ(state(), (std::vector<float>{0, 1, 2, 3}));
  // setInput replaces a state, as loading weights does.
  std::vector<float> loaded = {5, 5, 5, 5};
  ASSERT_TRUE((*session)->setInput(1, loaded.data(), 16));
  ASSERT_TRUE((*session)->run());
  EXPECT_EQ(loss(), 20.0f);
  EXPECT_EQ(state(), (std::vector<float>{4.5f, 4.5f, 4.5f, 4.5f}));
  // Another session starts from the file again.
  auto fresh = rt::Session::create(*exe, {});
  ASSERT_TRUE(fresh);
  const float *w = static_cast<const float *>((*fresh)->stateData(0));
  EXPECT_EQ(std::vector<float>(w, w + 4), (std::vector<float>{1, 2, 3, 4}));
}

class LoaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    kx = compile(kBranches);
    ASSERT_FALSE(kx.empty());
  }
  rt::Status load(const std::vector<uint8_t> &bytes) {
    auto exe = rt::Executable::loadMemory(bytes.data(), bytes.size());
    return exe ? rt::Status::ok() : exe.status();
  }
  /// Recomputes the checksum, as a hostile writer would.
  static void reseal(std::vector<uint8_t> &bytes) {
    uint64_t sum = rt::payloadChecksum(bytes.data() + rt::kHeaderSize, bytes.size() - rt::kHeaderSize);
    std::memcpy(bytes.data() + offsetof(rt::FileHeader, payloadChecksum), &sum, 8);
  }
  std::vector<uint8_t> kx;
};

TEST_F(LoaderTest, AcceptsTheOriginal) { EXPECT_TRUE(load(kx)) << load(kx).message(); }

TEST_F(LoaderTest, RejectsEveryTruncation) {
  for (size_t size = 0; size < kx.size(); size += (size < 256 ? 1 : 97)) {
    std::vector<uint8_t> cut(kx.begin(), kx.begin() + size);
    rt::Status s = load(cut);
    ASSERT_FALSE(s) << "accepted a file truncated to " << size << " bytes";
    EXPECT_TRUE(s.message().find("too short") != std::string::npos ||
                s.message().find("truncated") != std::string::npos)
        << size << ": " << s.message();
  }
}

TEST_F(LoaderTest, RejectsTrailingBytesBadMagicAndVersion) {
  std::vector<uint8_t> longer = kx;
  longer.push_back(0);
  EXPECT_NE(load(longer).message().find("unexpected bytes after the payload"), std::string::npos);
  std::vector<uint8_t> magic = kx;
  magic[0] = 'X';
  EXPECT_NE(load(magic).message().find("bad magic"), std::string::npos);
  std::vector<uint8_t> version = kx;
  version[8] = 99;
  EXPECT_NE(load(version).message().find("version 99 is not supported"), std::string::npos);
}

TEST_F(LoaderTest, ChecksumCatchesEveryFlippedByte) {
  for (size_t at = rt::kHeaderSize; at < kx.size(); at += 13) {
    std::vector<uint8_t> bad = kx;
    bad[at] ^= 0x5a;
    rt::Status s = load(bad);
    ASSERT_FALSE(s) << at;
    EXPECT_NE(s.message().find("checksum mismatch"), std::string::npos) << s.message();
  }
}

/// Flipped bytes behind a valid checksum (a hostile file): every one is
/// either rejected with a message or, if the change is benign, still
/// loads and runs without crashing.
TEST_F(LoaderTest, HostileEditsAreRejectedOrHarmless) {
  std::mt19937 rng(7);
  int rejected = 0, accepted = 0;
  std::vector<float> x = randomFloats(32, 4);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = kx;
    int flips = 1 + trial % 3;
    for (int f = 0; f < flips; ++f) {
      size_t at = rt::kHeaderSize + rng() % (bad.size() - rt::kHeaderSize);
      bad[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    reseal(bad);
    auto exe = rt::Executable::loadMemory(bad.data(), bad.size());
    if (!exe) {
      ++rejected;
      EXPECT_FALSE(exe.status().message().empty());
      continue;
    }
    ++accepted;
    auto session = rt::Session::create(*exe, {});
    if (!session || (*exe)->inputs().size() != 1 || (*exe)->inputs()[0].byteSize() != 128)
      continue;
    ASSERT_TRUE((*session)->setInput(0, x.data(), 128));
    (void)(*session)->run(); // may fail cleanly; must not crash
  }
  EXPECT_GT(rejected, 100);
  EXPECT_EQ(rejected + accepted, 3000);
}

/// The same for cuBLASLt descriptors: an edit the loader accepts must leave
/// every call inside its buffers, which is what cuda-emu (and a GPU) then
/// trusts. Sanitizer builds turn any overrun here into a failure.
TEST_F(LoaderTest, HostileEditsOfLibraryCallsAreRejectedOrHarmless) {
  kx = compile(R"(
input x: f32[6, 10]
input r: f32[3, 6, 12]
weight w: f32[10, 12] = random(seed=1, scale=0.5)
weight b: f32[12] = random(seed=2, scale=0.5)
y = relu(matmul(x, w) * 0.5 + b + r)
output y
)",
               1, /*libraryCalls=*/true);
  ASSERT_FALSE(kx.empty());
  auto original = rt::Executable::loadMemory(kx.data(), kx.size());
  ASSERT_TRUE(original) << original.status().message();
  int calls = 0;
  for (const rt::StepDesc &step : (*original)->program().steps)
    calls += step.gemm.has_value();
  ASSERT_EQ(calls, 1) << "the model should compile to one cuBLASLt call";

  std::mt19937 rng(11);
  int rejected = 0, ran = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> bad = kx;
    for (int f = 0; f < 1 + trial % 2; ++f) {
      size_t at = rt::kHeaderSize + rng() % (bad.size() - rt::kHeaderSize);
      bad[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    reseal(bad);
    auto exe = rt::Executable::loadMemory(bad.data(), bad.size());
    if (!exe) {
      ++rejected;
      continue;
    }
    const rt::Program &p = (*exe)->program();
    for (const rt::StepDesc &step : p.steps) {
      if (!step.gemm)
        continue;
      // Exactly the buffers the loader promised: each value's size.
      std::vector<std::vector<uint8_t>> in;
      for (uint32_t v : step.inputs)
        in.emplace_back(static_cast<size_t>(p.values[v].type.byteSize()), 0);
      std::vector<uint8_t> out(static_cast<size_t>(p.values[step.outputs[0]].type.byteSize()));
      const rt::GemmCall &g = *step.gemm;
      auto input = [&](int32_t k) { return k < 0 ? nullptr : in[static_cast<size_t>(k)].data(); };
      rt::runGemmOnHost(g, input(g.a), input(g.b), input(g.c), input(g.bias), out.data());
      ++ran;
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(ran, 100);
}

} // namespace

namespace {

/// A .kg tensor type: "f32[2, 3]".
std::string kgType(const std::string &dtype, const ref::Shape &shape) {
  std::string t = dtype + "[";
  for (size_t d = 0; d < shape.size(); ++d)
    t += (d ? ", " : "") + std::to_string(shape[d]);
  return t + "]";
}

/// Runs a one-op model through the runtime (host GEMM paths included) and
/// through the reference kernels, on random inputs, and compares.
void checkAgainstReference(const std::string &decls, const std::string &expr,
                           const std::vector<std::pair<std::string, ref::Shape>> &inputs,
                           const std::function<ref::Tensor(const std::vector<ref::Tensor> &)> &reference) {
  std::string source = decls + "y = " + expr + "\noutput y\n";
  auto [exe, session] = openSession(source);
  ASSERT_TRUE(session);
  std::vector<ref::Tensor> refInputs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<float> data = randomFloats(ref::numElements(inputs[k].second), 100 + k);
    ASSERT_TRUE(session->setInput(k, data.data(), data.size() * 4));
    ref::Tensor t = ref::Tensor::zeros(ref::DType::F64, inputs[k].second);
    for (size_t e = 0; e < data.size(); ++e)
      t.f[e] = data[e];
    refInputs.push_back(t);
  }
  rt::Status s = session->run();
  ASSERT_TRUE(s) << s.message();
  ref::Tensor expected = reference(refInputs);
  const rt::TensorSpec &out = exe->outputs()[0];
  ASSERT_EQ(out.shape, expected.shape) << source;
  const float *y = static_cast<const float *>(session->outputData(0));
  for (int64_t k = 0; k < expected.numElements(); ++k)
    ASSERT_NEAR(y[k], expected.f[k], 1e-4 + 1e-4 * std::abs(expected.f[k])) << source << " @" << k;
}

TEST(CpuKernels, MatmulVariantsMatchTheReference) {
  struct Case { std::string decls, expr; ref::Shape a, b; bool ta, tb; };
  std::vector<Case> cases = {
      {"input a: f32[5, 7]\ninput b: f32[7, 3]\n", "matmul(a, b)", {5, 7}, {7, 3}, false, false},
      {"input a: f32[7, 5]\ninput b: f32[3, 7]\n", "matmul(a, b, transpose_a=true, transpose_b=true)",
       {7, 5}, {3, 7}, true, true},
      {"input a: f32[4, 5, 7]\ninput b: f32[4, 7, 3]\n", "matmul(a, b)", {4, 5, 7}, {4, 7, 3}, false, false},
      {"input a: f32[2, 4, 5, 7]\ninput b: f32[7, 3]\n", "matmul(a, b)", {2, 4, 5, 7}, {7, 3}, false, false},
      // Batch broadcast on the left operand: not an OpenBLAS case, the reference path runs it.
      {"input a: f32[5, 7]\ninput b: f32[4, 7, 3]\n", "matmul(a, b)", {5, 7}, {4, 7, 3}, false, false},
  };
  for (const Case &c : cases)
    checkAgainstReference(c.decls, c.expr, {{"a", c.a}, {"b", c.b}},
                          [&](const std::vector<ref::Tensor> &in) {
                            return ref::matmul(in[0], in[1], c.ta, c.tb);
                          });
}

TEST(CpuKernels, ConvolutionVariantsMatchTheReference) {
  struct Case { std::string attrs; ref::Shape x, w; bool bias; ref::Conv2dParams p; };
  auto params = [](int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
    ref::Conv2dParams p;
    p.strides[0] = p.strides[1] = stride;
    p.padding[0] = p.padding[1] = p.padding[2] = p.padding[3] = pad;
    p.dilations[0] = p.dilations[1] = dilation;
    p.groups = groups;
    return p;
  };
  std::vector<Case> cases = {
      {"", {2, 3, 9, 9}, {4, 3, 3, 3}, false, params(1, 0, 1, 1)},
      {", strides=[2, 2], padding=1", {1, 4, 10, 10}, {6, 4, 3, 3}, true, params(2, 1, 1, 1)},
      {", dilations=[2, 2], padding=2", {1, 2, 8, 8}, {3, 2, 3, 3}, false, params(1, 2, 2, 1)},
      {", groups=2, padding=1", {2, 4, 6, 6}, {6, 2, 3, 3}, true, params(1, 1, 1, 2)},
      {"", {1, 8, 5, 5}, {4, 8, 1, 1}, true, params(1, 0, 1, 1)},
      // im2col's clipped rows: strides and padding unequal per side, and a
      // column matrix large enough (72 x 1600) to be split over threads.
      {", strides=[3, 2], padding=[2, 0, 1, 3]", {1, 3, 11, 9}, {2, 3, 3, 4}, false,
       [] {
         ref::Conv2dParams p;
         p.strides[0] = 3, p.strides[1] = 2;
         p.padding[0] = 2, p.padding[1] = 0, p.padding[2] = 1, p.padding[3] = 3;
         return p;
       }()},
      {", padding=1", {1, 8, 40, 40}, {8, 8, 3, 3}, true, params(1, 1, 1, 1)},
  };
  for (const Case &c : cases) {
    std::string decls = "input x: " + kgType("f32", c.x) + "\ninput w: " + kgType("f32", c.w) + "\n";
    std::vector<std::pair<std::string, ref::Shape>> inputs = {{"x", c.x}, {"w", c.w}};
    if (c.bias) {
      decls += "input b: f32[" + std::to_string(c.w[0]) + "]\n";
      inputs.push_back({"b", {c.w[0]}});
    }
    checkAgainstReference(decls, std::string("conv2d(x, w") + (c.bias ? ", b" : "") + c.attrs + ")",
                          inputs, [&](const std::vector<ref::Tensor> &in) {
                            return ref::conv2d(in[0], in[1], c.bias ? &in[2] : nullptr, c.p);
                          });
  }
}

TEST(CpuKernels, HalfMatmulsGoThroughF32) {
  // f16 and bf16 matmuls widen to f32 (exactly), multiply on the host GEMM
  // and round once to the result's dtype; the reference multiplies in
  // double and rounds once. They agree within one rounding of the dtype
  // (and the f32 accumulation's error), on random inputs.
  struct Case { std::string dtype; ref::DType type; double eps; bool tb; };
  for (const Case &c : {Case{"f16", ref::DType::F16, 1.0 / 1024, false},
                        Case{"bf16", ref::DType::BF16, 1.0 / 128, true},
                        Case{"f16", ref::DType::F16, 1.0 / 1024, true}}) {
    ref::Shape as{3, 33, 70}, bs = c.tb ? ref::Shape{41, 70} : ref::Shape{70, 41};
    std::string source = "input a: " + kgType(c.dtype, as) + "\ninput b: " + kgType(c.dtype, bs) +
                         "\ny = matmul(a, b" +
                         (c.tb ? ", transpose_b=true" : "") + ")\noutput y\n";
    auto [exe, session] = openSession(source);
    ASSERT_TRUE(session);
    std::vector<ref::Tensor> in;
    for (size_t k = 0; k < 2; ++k) {
      const ref::Shape &shape = k == 0 ? as : bs;
      std::vector<float> values = randomFloats(ref::numElements(shape), 40 + k);
      std::vector<uint16_t> bits(values.size());
      ref::Tensor t = ref::Tensor::zeros(c.type, shape);
      for (size_t e = 0; e < values.size(); ++e) {
        bits[e] = c.type == ref::DType::F16 ? ref::floatToHalf(values[e])
                                            : ref::floatToBFloat16(values[e]);
        t.f[e] = c.type == ref::DType::F16 ? ref::halfToFloat(bits[e])
                                           : ref::bfloat16ToFloat(bits[e]);
      }
      ASSERT_TRUE(session->setInput(k, bits.data(), bits.size() * 2));
      in.push_back(t);
    }
    rt::Status st = session->run();
    ASSERT_TRUE(st) << st.message();
    ref::Tensor expected = ref::matmul(in[0], in[1], false, c.tb);
    const uint16_t *y = static_cast<const uint16_t *>(session->outputData(0));
    // The bits are those of the f32 route, batch by batch on the host GEMM
    // (not the double reference's, which could also pass the bound below).
    int64_t m = as[1], kk = as[2], n = c.tb ? bs[0] : bs[1];
    std::vector<float> a32(in[0].f.begin(), in[0].f.end()), b32(in[1].f.begin(), in[1].f.end());
    std::vector<float> c32(static_cast<size_t>(as[0] * m * n));
    for (int64_t batch = 0; batch < as[0]; ++batch)
      rt::hostSgemm(false, c.tb, m, n, kk, 1.0f, a32.data() + batch * m * kk, kk, b32.data(),
                    c.tb ? kk : n, 0.0f, c32.data() + batch * m * n, n);
    std::vector<uint8_t> want(c32.size() * 2);
    ref::narrowFromF32(c.type, c32.data(), static_cast<int64_t>(c32.size()), want.data());
    EXPECT_EQ(0, std::memcmp(y, want.data(), want.size())) << source;
    double worst = 0;
    for (int64_t k = 0; k < expected.numElements(); ++k) {
      double got = c.type == ref::DType::F16 ? ref::halfToFloat(y[k]) : ref::bfloat16ToFloat(y[k]);
      double err = std::abs(got - expected.f[k]) / (c.eps * (1e-3 + std::abs(expected.f[k])));
      worst = std::max(worst, err);
    }
    EXPECT_LE(worst, 1.0) << source; // within one ulp-sized step of the dtype
    EXPECT_GT(expected.numElements(), 0);
  }
}

TEST(HostGemm, DeterministicProductsAreFixedSingleThreadedTiles) {
  // Under --deterministic every tile of C is one single-threaded sgemm over
  // all of K, whatever the thread count: on 1 and 3 threads the bits are
  // those of the tiles computed one by one on one thread. A long K (which
  // sgemm may split over threads) and edge tiles; A and B either way round.
  int64_t m = 150, n = 600, k = 3000;
  std::vector<float> a = randomFloats(m * k, 61), b = randomFloats(k * n, 62);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      int64_t lda = ta ? m : k, ldb = tb ? k : n;
      std::vector<float> want(m * n);
      rt::setHostThreads(1);
      for (int64_t i = 0; i < m; i += rt::kDeterministicTileRows)
        for (int64_t j = 0; j < n; j += rt::kDeterministicTileCols)
          rt::hostSgemm(ta, tb, std::min(rt::kDeterministicTileRows, m - i),
                        std::min(rt::kDeterministicTileCols, n - j), k, 1.0f,
                        ta ? a.data() + i : a.data() + i * lda, lda,
                        tb ? b.data() + j * ldb : b.data() + j, ldb, 0.0f,
                        want.data() + i * n + j, n);
      for (unsigned threads : {1u, 3u}) {
        rt::setHostThreads(threads);
        std::vector<float> got(m * n, 12345.0f);
        rt::hostSgemmDeterministic(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                                   got.data(), n);
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4))
            << "ta " << ta << " tb " << tb << " on " << threads << " threads";
      }
      rt::setHostThreads(0);
    }
}

TEST(CpuKernels, GatherCopiesOnlyItsRowsBitForBit) {
  // The gather copies the picked rows of the table in place, whatever its
  // dtype; the reference decodes the whole table. Along the first axis (an
  // embedding, f32 or int8 as a weight-only quantised one is), along an
  // inner one, i64 and i32 indices, negative ones and ones past either end
  // (zeros, as the reference gives), and 512 rows of 64 (enough to be split
  // over threads).
  struct Case { std::string dtype; ref::Shape data, indices; int64_t axis; std::string indexType; };
  for (const Case &c : {Case{"f32", {1000, 48}, {3, 40}, 0, "i64"},
                        Case{"f32", {6, 50, 7}, {2, 9}, 1, "i32"},
                        Case{"f32", {1000, 64}, {8, 64}, 0, "i32"},
                        Case{"i8", {1000, 24}, {2, 30}, 0, "i64"}}) {
    std::string source = "input data: " + kgType(c.dtype, c.data) + "\ninput ids: " +
                         kgType(c.indexType, c.indices) + "\ny = gather(data, ids, axis=" +
                         std::to_string(c.axis) + ")\noutput y\n";
    auto [exe, session] = openSession(source);
    ASSERT_TRUE(session);
    bool f32 = c.dtype == "f32";
    ref::Tensor table = ref::Tensor::zeros(f32 ? ref::DType::F32 : ref::DType::I8, c.data);
    std::vector<float> values = randomFloats(ref::numElements(c.data), 11);
    std::vector<int8_t> bytes(values.size());
    for (size_t k = 0; k < values.size(); ++k) {
      bytes[k] = static_cast<int8_t>(values[k] * 127);
      if (f32)
        table.f[k] = values[k];
      else
        table.i[k] = bytes[k];
    }
    int64_t extent = c.data[c.axis];
    std::vector<int64_t> ids(ref::numElements(c.indices));
    std::mt19937_64 rng(5);
    for (size_t k = 0; k < ids.size(); ++k)
      ids[k] = static_cast<int64_t>(rng() % (2 * extent + 6)) - extent - 3; // -extent-3 .. extent+2
    ASSERT_TRUE(f32 ? session->setInput(0, values.data(), values.size() * 4)
                    : session->setInput(0, bytes.data(), bytes.size()));
    if (c.indexType == "i64") {
      ASSERT_TRUE(session->setInput(1, ids.data(), ids.size() * 8));
    } else {
      std::vector<int32_t> narrow(ids.begin(), ids.end());
      ASSERT_TRUE(session->setInput(1, narrow.data(), narrow.size() * 4));
    }
    rt::Status st = session->run();
    ASSERT_TRUE(st) << st.message();
    ref::Tensor indices = ref::Tensor::zeros(ref::DType::I64, c.indices);
    std::copy(ids.begin(), ids.end(), indices.i.begin());
    ref::Tensor expected = ref::gather(table, indices, c.axis);
    ASSERT_EQ(exe->outputs()[0].shape, expected.shape) << source;
    const auto *y = static_cast<const uint8_t *>(session->outputData(0));
    for (int64_t k = 0; k < expected.numElements(); ++k) {
      if (f32) {
        float want = static_cast<float>(expected.f[k]);
        ASSERT_EQ(0, std::memcmp(y + 4 * k, &want, 4)) << source << " @" << k;
      } else {
        ASSERT_EQ(static_cast<int8_t>(y[k]), expected.i[k]) << source << " @" << k;
      }
    }
  }
}

TEST(CpuKernels, MaxPoolingMatchesTheReferenceBitForBit) {
  // The f32 path reduces each output row's window rows column by column,
  // then the window columns, in f32; the reference walks every tap in
  // double. NaNs (which propagate), windows clipped by padding on every
  // side, ceil mode's overhang, and planes enough to be split over threads;
  // dilation takes the reference's loop.
  struct Case { std::string attrs; ref::Shape x; ref::Pool2dParams p; };
  auto params = [](std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pad,
                   int64_t dilation, bool ceil) {
    ref::Pool2dParams p;
    for (int d = 0; d < 2; ++d)
      p.kernel[d] = k[d], p.strides[d] = s[d], p.dilations[d] = dilation;
    for (int d = 0; d < 4; ++d)
      p.padding[d] = pad[d];
    p.ceilMode = ceil;
    return p;
  };
  std::vector<Case> cases = {
      {"kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]", {2, 64, 28, 28},
       params({3, 3}, {2, 2}, {1, 1, 1, 1}, 1, false)},
      {"kernel=[2, 3], strides=[1, 3], padding=[1, 2, 1, 2]", {1, 3, 7, 8},
       params({2, 3}, {1, 3}, {1, 2, 1, 2}, 1, false)},
      {"kernel=[2, 2], strides=[2, 2], ceil_mode=true", {1, 2, 7, 5},
       params({2, 2}, {2, 2}, {0, 0, 0, 0}, 1, true)},
      {"kernel=[2, 2], strides=[1, 1], dilations=[2, 2]", {1, 2, 6, 6},
       params({2, 2}, {1, 1}, {0, 0, 0, 0}, 2, false)},
  };
  for (const Case &c : cases) {
    std::string source =
        "input x: " + kgType("f32", c.x) + "\ny = max_pool2d(x, " + c.attrs + ")\noutput y\n";
    auto [exe, session] = openSession(source);
    ASSERT_TRUE(session);
    std::vector<float> data = randomFloats(ref::numElements(c.x), 7);
    // NaNs with distinct payloads, alone and in adjacent pairs (which one
    // a window returns is the reference's order's choice).
    for (size_t e = 0; e + 1 < data.size(); e += 97) {
      data[e] = -std::nanf(std::to_string(e % 7 + 1).c_str());
      if (e % 2 == 0)
        data[e + 1] = std::nanf(std::to_string(e % 5 + 9).c_str());
    }
    ASSERT_TRUE(session->setInput(0, data.data(), data.size() * 4));
    rt::Status s = session->run();
    ASSERT_TRUE(s) << s.message();
    ref::Tensor x = ref::Tensor::zeros(ref::DType::F32, c.x);
    for (size_t e = 0; e < data.size(); ++e)
      x.f[e] = data[e];
    ref::Tensor expected = ref::maxPool2d(x, c.p);
    const float *y = static_cast<const float *>(session->outputData(0));
    ASSERT_EQ(exe->outputs()[0].shape, expected.shape) << source;
    for (int64_t k = 0; k < expected.numElements(); ++k) {
      float want = static_cast<float>(expected.f[k]);
      ASSERT_EQ(0, std::memcmp(&y[k], &want, 4)) << source << " @" << k << ": " << y[k]
                                                   << " vs " << want;
    }
  }
}

} // namespace
