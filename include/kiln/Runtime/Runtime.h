//===- Runtime.h - the kiln runtime API -------------------------*- C++ -*-===//
//
// Load a .kx executable, bind inputs, run, read outputs; run again without
// reloading. No MLIR here: programs embed the runtime with this header and
// the KilnRuntime library.
//
//   auto exe = kiln::rt::Executable::loadFile("model.kx");
//   if (!exe) { fprintf(stderr, "%s\n", exe.status().message().c_str()); ... }
//   auto session = kiln::rt::Session::create(*exe, {});
//   (*session)->setInput(0, data, bytes);
//   (*session)->run();
//   const void *out = (*session)->outputData(0);
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_RUNTIME_H
#define KILN_RUNTIME_RUNTIME_H

#include "kiln/CudaEmu/Profile.h"
#include "kiln/Reference/Tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace rt {

/// Success, or an error with a message for the user.
class Status {
public:
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.ok_ = false;
    return s;
  }
  bool isOk() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string &message() const { return message_; }

private:
  bool ok_ = true;
  std::string message_;
};

/// A value or the error that prevented it.
template <typename T>
class Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : status_(std::move(status)) {}
  explicit operator bool() const { return value_.has_value(); }
  const Status &status() const { return status_; }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }

private:
  Status status_;
  std::optional<T> value_;
};

enum class DeviceKind : uint8_t { CPU = 0, CUDA = 1 };

/// The type of an input or output as the caller sees it.
struct TensorSpec {
  std::string name;
  ref::DType dtype = ref::DType::F32;
  ref::Shape shape;
  /// Memory order of the logical dimensions; empty means row-major.
  std::vector<int64_t> dimOrder;
  DeviceKind device = DeviceKind::CPU;
  int deviceOrdinal = 0;
  /// In the signature of an executable built for ranges of sizes: the size
  /// of each dynamic dimension (whose `shape` entry is -1) as its symbol's
  /// name ("batch") or an expression of them; empty elsewhere.
  std::vector<std::string> dimNames;

  /// Whether some dimension's size is known only per run.
  bool isDynamic() const { return !dimNames.empty(); }
  int64_t numElements() const { return ref::numElements(shape); }
  int64_t byteSize() const { return numElements() * ref::byteWidth(dtype); }
  /// "f32[8, 784]", with " nhwc"/" perm[...]" and " @cuda:N" when not default.
  std::string typeString() const;
};

struct Program;
class Device;

/// A size symbol of an executable built for ranges of input sizes: one
/// dynamic dimension (or several inputs' alike), valid over [min, max],
/// planned for opt (kilnc --input-shape NAME=MIN..MAX:OPT).
struct SizeSymbolSpec {
  std::string name;
  int64_t min = 0, max = 0, opt = 0;
  /// For a symbol read at run time: its SizeExpr code over the inputs'
  /// values, computed values and earlier symbols
  /// (include/kiln/Reference/SizeCode.h).
  std::vector<int64_t> code;
  /// The first step whose program needs it: 0, or for a length read from
  /// a computed value (NonZero of a computed tensor), the step after the
  /// one computing that value.
  size_t knownFromStep = 0;
  bool isComputed() const { return !code.empty(); }
};

/// An input a session keeps between runs (a training step's weight or
/// optimizer state): it starts as `initial` (in the mapped file) and, after
/// every run, takes the value of output `output`.
struct StateSpec {
  size_t input = 0, output = 0;
  const uint8_t *initial = nullptr;
  uint64_t bytes = 0;
};

/// A loaded, validated executable. Immutable and shareable between sessions.
class Executable {
public:
  /// Maps the file (weights are not copied) and validates it completely.
  static Result<std::shared_ptr<const Executable>> loadFile(const std::string &path);
  /// Validates an executable held in memory (copied).
  static Result<std::shared_ptr<const Executable>> loadMemory(const uint8_t *data,
                                                              size_t size);
  ~Executable();

  const std::string &name() const;
  const std::vector<TensorSpec> &inputs() const;
  const std::vector<TensorSpec> &outputs() const;
  int64_t arenaBytes() const;
  int numStreams() const;
  size_t numSteps() const;
  /// A readable listing of the signature, weights, buffers and schedule.
  std::string describe() const;
  /// The model locations of step `step`'s ops (each once, in op order).
  std::vector<std::string> stepLocations(size_t step) const;

  /// The states (kilnc --train): inputs the session keeps and updates.
  const std::vector<StateSpec> &states() const { return states_; }

  /// The size symbols of an executable built for ranges of input sizes;
  /// empty when every shape is static.
  const std::vector<SizeSymbolSpec> &sizeSymbols() const { return symbols_; }
  /// The inputs at the symbols' OPT values (inputs() itself when static).
  const std::vector<TensorSpec> &inputsAtOpt() const;
  bool isDynamic() const { return !symbols_.empty(); }
  /// A run whose sizes follow computed data goes in parts (Session::run):
  /// each part runs its steps up to `end` (the last part's is the step
  /// count), after the buffers it needs from the parts before, `carried`,
  /// are copied to its device. Empty when no size follows computed data.
  struct RunPart {
    size_t end = 0;
    std::vector<uint32_t> carried;
  };
  const std::vector<RunPart> &runParts() const { return parts_; }
  /// Whether a size follows computed data: a run then binds it after the
  /// step computing it, and runs the steps after with a program of their
  /// own.
  bool hasLengthsReadMidRun() const { return !parts_.empty(); }

  /// The program: for an executable over ranges of sizes, the one at the
  /// symbols' OPT values (specialise() gives the others).
  const Program &program() const { return *program_; }
  /// The program for these symbol values (one per size symbol, each in its
  /// range), validated as a whole as the file was when it loaded.
  Result<std::unique_ptr<Program>> specialise(const std::vector<int64_t> &symbols) const;

private:
  Executable();
  struct Storage;
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<Program> program_;
  std::vector<SizeSymbolSpec> symbols_;
  std::vector<StateSpec> states_;
  std::vector<RunPart> parts_;
  /// The signature with dynamic dimensions as -1 and their names.
  std::vector<TensorSpec> genericInputs_, genericOutputs_;
  const uint8_t *payload_ = nullptr;
  friend struct Loader;
};

/// Where steps run. CPU runs the executable's native CPU kernels, library
/// GEMMs and f32 loops. CudaEmu runs the executable's generated kernels on
/// the CPU through the CUDA emulator (steps without a kernel on the CPU
/// backend). Reference computes every op with the double-precision
/// reference evaluator (the answer tests compare against; slow).
enum class DeviceChoice { Auto, CPU, CudaEmu, Cuda, Reference };

/// How cuda-emu schedules threads (docs/cuda-emu.md).
enum class EmuOrder { Forward, Reverse, Shuffled };

/// The CPU's threads: how many the host's library calls (oneDNN) and the
/// CPU backend's own loops use, on OpenMP (one runtime for both), for
/// every session of the process; at most 1024. OpenMP gives each thread
/// that runs steps a team of its own, so steps running at once on several
/// streams (or sessions) use this many threads each. 0 restores the
/// default: OMP_NUM_THREADS when set to a count, else the cores this
/// process may run on (its CPU affinity).
void setHostThreads(unsigned threads);
/// The current count (never 0).
unsigned hostThreads();

struct SessionOptions {
  DeviceChoice device = DeviceChoice::Auto;
  /// cpu: run the executable's portable x86-64 code instead of the code for
  /// its instruction-set level (which a CPU without that level refuses).
  bool cpuPortable = false;
  /// cpu, for fuzzing the runtime around code it cannot check: each native
  /// kernel is linked but replaced by a stand-in that reads every element
  /// its reads may hold and writes every element it must write (zeros), so
  /// the runtime's handling of the runs is exercised without running
  /// machine code from the file. Outputs are then not meaningful.
  bool cpuKernelStandIns = false;
  EmuOrder emuOrder = EmuOrder::Forward;
  /// Shared arrays followed by guard pages: an overrun traps.
  bool emuChecked = false;
  /// CUDA device: which GPU (cudaSetDevice's ordinal).
  int deviceOrdinal = 0;
  /// CUDA device: the first run runs eagerly (modules load lazily, which a
  /// capture cannot do), the second captures the schedule into a CUDA
  /// graph, and every run from then on replays it (no per-step launch
  /// overhead).
  bool cudaGraph = false;
  /// CUDA device: wait for every step and check it, so an asynchronous
  /// error names the step that caused it (a debugging aid; slow).
  bool syncEachStep = false;
  /// cuda and cuda-emu: run each cuDNN convolution plain and its bias/ReLU
  /// as the step's generated epilogue kernel, as when cuDNN offers no engine
  /// for the fused graph (to test and measure that path).
  bool convEpilogueKernels = false;
  /// Record each step's span (lastTimings()); off, a run takes no timing
  /// events on the GPU.
  bool stepTimings = false;
  /// cuda-emu: count every kernel's memory requests and Tensor Core work
  /// (kernelProfiles()); the executable must be built with kilnc
  /// --emu-profile.
  bool emuProfile = false;
  /// With emuProfile: emulate only this many evenly spaced blocks of each
  /// launch and scale the counts to the grid (0: every block). The outputs
  /// are then not meaningful.
  unsigned emuProfileSample = 0;
};

/// What cuda-emu counted for one kernel, summed over its launches (and the
/// runs of the session), with what the compiler recorded about it.
struct KernelProfile {
  std::string kernel;
  std::vector<size_t> steps;  ///< the steps launching it
  std::string stepName;       ///< the first of them, "loop(add+relu)"
  std::vector<std::string> locations; ///< model locations of every op it computes
  uint64_t launches = 0;
  unsigned grid = 0, block = 0;
  int registers = -1, sharedBytes = -1; ///< sm_90, from NVRTC
  uint64_t minimumBytes = 0; ///< per launch: each parameter read or written once
  double flops = 0;          ///< per launch: the step's arithmetic
  bool tensorCores = false;  ///< f16/bf16 work a Tensor Core can do
  emu::AccessCounts counts;
};

/// Span of one step in the last run, in microseconds from the start of the
/// run: wall-clock on the host devices, CUDA event time on the GPU.
struct StepTiming {
  size_t step; ///< index in program order
  std::string name;
  int stream;
  double startUs;
  double endUs;
  /// What ran: "kernel", "cuBLASLt", "cuDNN", "copy" or "host" on the GPU; empty on
  /// the host devices.
  std::string category = {};
};

/// Runs one executable: owns the input storage and the device that runs
/// the steps (which owns the arena: host memory, or the GPU's).
class Session {
public:
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Executable> exe,
                                                 const SessionOptions &options);
  ~Session();

  /// Copies `bytes` bytes (exactly the input's size, in its layout).
  Status setInput(size_t index, const void *data, size_t bytes);
  /// The same for an input with dynamic dimensions: `shape` gives this
  /// run's sizes, which must lie in the executable's ranges (and agree
  /// with the other inputs' where they share a symbol).
  Status setInput(size_t index, const void *data, size_t bytes,
                  const std::vector<int64_t> &shape);
  /// Runs every step; all inputs must have been set (the states are, to
  /// their initial values or the last run's; setInput replaces one). After
  /// a run each state takes its output's value.
  Status run();
  /// State `k`'s current value (Executable::states()).
  const void *stateData(size_t k) const;
  const void *outputData(size_t index) const;
  /// The shape of output `index` in the last run (its sizes follow the
  /// inputs' for an executable over ranges of sizes); empty before a run
  /// succeeds. outputData() stays valid until the next run.
  ref::Shape outputShape(size_t index) const;
  /// Each step's span in the last run, when the options asked for them.
  const std::vector<StepTiming> &lastTimings() const { return timings_; }
  /// cuda-emu with SessionOptions::emuProfile: every kernel's counts so
  /// far, in the order of their first step.
  std::vector<KernelProfile> kernelProfiles() const;
  const Executable &executable() const { return *exe_; }
  /// The device running the steps, and what it loaded ("device ..." lines).
  std::string describeDevice() const;

private:
  Session() = default;
  bool readInputElement(int64_t input, int64_t element, int64_t &value,
                        std::string &error) const;
  Status bindSymbols(std::vector<int64_t> &values) const;
  Status bindLengths(size_t step, std::vector<int64_t> &values) const;
  Status selectSignature(const std::vector<int64_t> &values);
  Status runInParts(std::vector<int64_t> &values);

  std::shared_ptr<const Executable> exe_;
  SessionOptions options_;
  std::vector<std::vector<uint8_t>> inputStorage_;
  std::vector<bool> inputSet_;
  /// This run's input shapes (an executable over ranges of sizes).
  std::vector<ref::Shape> inputShapes_;
  /// The program and device of each size signature seen (at most
  /// kMaxSignatures, the least recently used dropped first), and the
  /// current one.
  struct Signature {
    std::vector<int64_t> symbols;
    std::unique_ptr<Program> program;
    std::unique_ptr<Device> device;
  };
  std::vector<Signature> signatures_;
  const Program *program_ = nullptr;
  std::unique_ptr<Device> device_;
  Device *current_ = nullptr;
  bool stepTimings_ = false;
  bool ran_ = false;
  std::vector<StepTiming> timings_;
};

} // namespace rt
} // namespace kiln

#endif // KILN_RUNTIME_RUNTIME_H
