//===- RunMain.cpp - the kiln-run command line ----------------------------===//
//
//   kiln-run EXE.kx [--device=auto|cpu|cuda-emu|cuda[:N]]
//                   [--input NAME=FILE.npy|FILE.pb|random[:SEED][@D0xD1x...]]...
//                   [--output-dir DIR] [--output-format=npy|pb] [--bench N]
//                   [--threads N] [--trace FILE.json] [--describe]
//                   [--emu-order=forward|reverse|shuffled] [--emu-checked]
//                   [--cuda-graph] [--sync-each-step] [--conv-epilogue-kernels]
//                   [--compare-to DIR [--tolerance T]]
//
// No LLVM here either: a standalone program is the runtime plus this file.
//
//===----------------------------------------------------------------------===//

#include "RunMain.h"

#include "ProfileReport.h"

#include "kiln/Reference/Tensor.h"
#include "kiln/Support/Npy.h"
#include "kiln/Support/Npz.h"
#include "kiln/Support/OnnxTensorFile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sys/stat.h>

namespace kiln {
namespace tools {

namespace {

struct Options {
  std::string executable;
  std::string device = "auto";
  bool deviceGiven = false;
  int deviceOrdinal = 0;
  std::vector<std::pair<std::string, std::string>> inputs; // name, source
  std::string outputDir;
  int bench = 0;
  unsigned threads = 0; ///< 0: the cores the process may use
  std::string trace;
  std::string profile;
  unsigned profileSample = 0;
  bool profileSampleGiven = false;
  bool describe = false;
  std::string outputFormat = "npy";
  std::string emuOrder = "forward";
  bool emuOrderGiven = false, emuChecked = false;
  bool cudaGraph = false, syncEachStep = false, convEpilogueKernels = false;
  bool cpuPortable = false;
  std::string compareTo;
  double tolerance = 1e-4;
  bool toleranceGiven = false;
  int steps = 0; ///< training steps (kilnc --train executables)
  std::string saveWeights, loadWeights;
};

const char *kUsage =
    "usage: %s%s [--device=auto|cpu|reference|cuda-emu|cuda[:N]] [--cpu-portable]\n"
    "       [--input NAME=FILE.npy|FILE.pb|random[:SEED][@D0xD1x...]]...\n"
    "       [--output-dir DIR] [--output-format=npy|pb] [--bench N] [--threads N]\n"
    "       [--trace FILE.json] [--describe] [--emu-order=forward|reverse|shuffled]\n"
    "       [--emu-checked] [--cuda-graph] [--sync-each-step] [--conv-epilogue-kernels]\n"
    "       [--compare-to DIR [--tolerance T]] [--profile FILE.json [--profile-sample N]]\n"
    "       [--steps N] [--load-weights FILE.npz] [--save-weights FILE.npz]\n";

const char *kHelp =
    "\n"
    "Runs a kiln executable (.kx) and prints a summary of each output.\n"
    "\n"
    "  --device=D          where the steps run: cpu, reference (every op by the\n"
    "                      double-precision reference evaluator; slow), cuda-emu (the\n"
    "                      executable's CUDA kernels on the CPU), cuda or cuda:N (GPU N),\n"
    "                      auto (cpu)\n"
    "  --cpu-portable      cpu: run the executable's portable x86-64 code, not the code\n"
    "                      for its instruction-set level (for a CPU without that level)\n"
    "  --input NAME=SRC    an input from a .npy or ONNX .pb tensor file, or random data\n"
    "                      (random:SEED for another seed; random@2x16 of those sizes for\n"
    "                      an input with dynamic dimensions, by default its OPT sizes)\n"
    "  --output-dir DIR    write every output there, as --output-format (npy or pb)\n"
    "  --bench N           run N more times and print each step's median time\n"
    "  --threads N         the CPU's threads, for library calls and kiln's loops\n"
    "                      (default: OMP_NUM_THREADS, else the cores this process may use)\n"
    "  --trace FILE.json   write the last run's steps as a Chrome trace\n"
    "  --describe          print the executable's signature, memory and schedule; with\n"
    "                      --device, also the device and the libraries it loaded\n"
    "  --emu-order=O       cuda-emu: run a block's threads forward, reverse or shuffled\n"
    "  --emu-checked       cuda-emu: guard pages after shared arrays\n"
    "  --cuda-graph        cuda: replay the schedule as a CUDA graph after the first run\n"
    "  --sync-each-step    cuda: wait for every step, so an asynchronous error names\n"
    "                      the step that caused it (slow; a debugging aid)\n"
    "  --conv-epilogue-kernels  cuda, cuda-emu: run cuDNN convolutions plain and their\n"
    "                      bias/ReLU as the generated epilogue kernel, as when cuDNN\n"
    "                      has no engine for the fused graph\n"
    "  --compare-to DIR    compare every output with DIR/NAME.npy (as --output-dir\n"
    "                      writes them): |actual - expected| <= T + T * |expected|\n"
    "                      everywhere, NaNs in the same places; exit 1 when not\n"
    "  --tolerance T       the T of --compare-to (default 1e-4)\n"
    "  --profile FILE.json cuda-emu: count each kernel's memory requests and Tensor Core\n"
    "                      work and write them with predicted GPU times (kilnc\n"
    "                      --emu-profile builds the kernels for it)\n"
    "  --profile-sample N  emulate N evenly spaced blocks of each launch and scale the\n"
    "                      counts to the grid (the outputs are then not meaningful)\n"
    "  --steps N           a training step (kilnc --train): run N steps on the inputs,\n"
    "                      each updating the weights the session keeps; print the loss,\n"
    "                      and the time of the first step and the median of the rest\n"
    "  --load-weights F    a training step: start from the weights in F.npz (by name;\n"
    "                      those it lacks keep their values from the executable)\n"
    "  --save-weights F    a training step: write every weight and optimizer state by\n"
    "                      name to F.npz after the last step\n";

int usageError(const char *argv0, bool embedded, const std::string &message) {
  std::fprintf(stderr, "%s: error: %s\n", argv0, message.c_str());
  std::fprintf(stderr, kUsage, argv0, embedded ? "" : " EXE.kx");
  return 2;
}

/// Digits only (no sign, no spaces), within 64 bits.
std::optional<uint64_t> parseDecimal(const std::string &text) {
  if (text.empty() || text.size() > 20)
    return std::nullopt;
  uint64_t value = 0;
  for (char c : text)
    if (c < '0' || c > '9' || __builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(c - '0'), &value))
      return std::nullopt;
  return value;
}

/// A count of runs or blocks: 1 to 1000000.
std::optional<uint64_t> parseCount(const std::string &text) {
  std::optional<uint64_t> n = parseDecimal(text);
  if (!n || *n < 1 || *n > 1000000)
    return std::nullopt;
  return n;
}

/// Parses the command line; returns an exit code on error.
std::optional<int> parse(int argc, char **argv, bool embedded, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool valueMissing = false; // a value flag ending the line
    auto value = [&](const std::string &flag, std::string &out) -> bool {
      if (arg == flag) {
        if (i + 1 >= argc) {
          valueMissing = true;
          return false;
        }
        out = argv[++i];
        return true;
      }
      if (arg.rfind(flag + "=", 0) == 0) {
        out = arg.substr(flag.size() + 1);
        return true;
      }
      return false;
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      std::printf(kUsage, argv[0], embedded ? "" : " EXE.kx");
      std::printf("%s", kHelp);
      return 0;
    } else if (arg == "--describe") {
      o.describe = true;
    } else if (value("--device", v)) {
      o.deviceOrdinal = 0; // the last --device wins, whole
      if (v.rfind("cuda:", 0) == 0) {
        std::optional<uint64_t> n = parseDecimal(v.substr(5));
        if (!n || *n > 1023)
          return usageError(argv[0], embedded,
                            "--device=cuda:N takes a GPU number from 0 to 1023, got '" + v + "'");
        o.deviceOrdinal = static_cast<int>(*n);
        v = "cuda";
      }
      if (v != "auto" && v != "cpu" && v != "reference" && v != "cuda-emu" && v != "cuda")
        return usageError(argv[0], embedded,
                          "unknown device '" + v +
                              "' (auto, cpu, reference, cuda-emu, cuda or cuda:N)");
      o.device = v;
      o.deviceGiven = true;
    } else if (value("--emu-order", v)) {
      if (v != "forward" && v != "reverse" && v != "shuffled")
        return usageError(argv[0], embedded,
                          "unknown --emu-order '" + v + "' (forward, reverse or shuffled)");
      o.emuOrder = v;
      o.emuOrderGiven = true;
    } else if (arg == "--cpu-portable") {
      o.cpuPortable = true;
    } else if (arg == "--emu-checked") {
      o.emuChecked = true;
    } else if (arg == "--cuda-graph") {
      o.cudaGraph = true;
    } else if (arg == "--sync-each-step") {
      o.syncEachStep = true;
    } else if (arg == "--conv-epilogue-kernels") {
      o.convEpilogueKernels = true;
    } else if (value("--input", v)) {
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        return usageError(argv[0], embedded,
                          "--input takes NAME=FILE.npy, NAME=FILE.pb or "
                          "NAME=random[:SEED][@D0xD1x...]");
      std::string name = v.substr(0, eq);
      for (const auto &given : o.inputs)
        if (given.first == name)
          return usageError(argv[0], embedded, "input '" + name + "' is given twice");
      o.inputs.push_back({name, v.substr(eq + 1)});
    } else if (value("--output-format", v)) {
      if (v != "npy" && v != "pb")
        return usageError(argv[0], embedded, "--output-format takes npy or pb");
      o.outputFormat = v;
    } else if (value("--output-dir", v)) {
      o.outputDir = v;
    } else if (value("--bench", v)) {
      std::optional<uint64_t> n = parseCount(v);
      if (!n)
        return usageError(argv[0], embedded,
                          "--bench takes a number of runs from 1 to 1000000, got '" + v + "'");
      o.bench = static_cast<int>(*n);
    } else if (value("--steps", v)) {
      std::optional<uint64_t> n = parseCount(v);
      if (!n)
        return usageError(argv[0], embedded,
                          "--steps takes a number of steps from 1 to 1000000, got '" + v + "'");
      o.steps = static_cast<int>(*n);
    } else if (value("--save-weights", v)) {
      o.saveWeights = v;
    } else if (value("--load-weights", v)) {
      o.loadWeights = v;
    } else if (value("--threads", v)) {
      std::optional<uint64_t> n = parseCount(v);
      if (!n || *n > 1024)
        return usageError(argv[0], embedded,
                          "--threads takes a number of threads from 1 to 1024, got '" + v + "'");
      o.threads = static_cast<unsigned>(*n);
    } else if (value("--trace", v)) {
      o.trace = v;
    } else if (value("--profile", v)) {
      o.profile = v;
    } else if (value("--profile-sample", v)) {
      std::optional<uint64_t> n = parseCount(v);
      if (!n)
        return usageError(argv[0], embedded,
                          "--profile-sample takes a number of blocks from 1 to 1000000, got '" +
                              v + "'");
      o.profileSample = static_cast<unsigned>(*n);
      o.profileSampleGiven = true;
    } else if (value("--compare-to", v)) {
      o.compareTo = v;
    } else if (value("--tolerance", v)) {
      char *end = nullptr;
      double t = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(t >= 0) || t > 1e6)
        return usageError(argv[0], embedded,
                          "--tolerance takes a number from 0 to 1e6, got '" + v + "'");
      o.tolerance = t;
      o.toleranceGiven = true;
    } else if (valueMissing) {
      return usageError(argv[0], embedded, "'" + arg + "' needs a value");
    } else if (arg.rfind("--", 0) == 0 || (arg.size() > 1 && arg[0] == '-')) {
      return usageError(argv[0], embedded, "unknown option '" + arg + "'");
    } else if (!embedded && o.executable.empty()) {
      o.executable = arg;
    } else {
      return usageError(argv[0], embedded, "unexpected argument '" + arg + "'");
    }
  }
  if (!embedded && o.executable.empty())
    return usageError(argv[0], embedded, "no executable given");
  if (o.cpuPortable && o.device != "cpu" && o.device != "auto")
    return usageError(argv[0], embedded, "--cpu-portable applies to --device=cpu");
  if ((o.emuChecked || o.emuOrderGiven) && o.device != "cuda-emu")
    return usageError(argv[0], embedded,
                      "--emu-checked and --emu-order apply to --device=cuda-emu");
  if ((o.cudaGraph || o.syncEachStep) && o.device != "cuda")
    return usageError(argv[0], embedded,
                      "--cuda-graph and --sync-each-step apply to --device=cuda");
  if (o.convEpilogueKernels && o.device != "cuda" && o.device != "cuda-emu")
    return usageError(argv[0], embedded,
                      "--conv-epilogue-kernels applies to --device=cuda and cuda-emu");
  if (!o.profile.empty() && o.device != "cuda-emu")
    return usageError(argv[0], embedded,
                      "--profile applies to --device=cuda-emu (the emulator counts what each "
                      "kernel asks of the memory system)");
  if (o.profileSampleGiven && o.profile.empty())
    return usageError(argv[0], embedded, "--profile-sample applies to --profile");
  if (o.toleranceGiven && o.compareTo.empty())
    return usageError(argv[0], embedded, "--tolerance applies to --compare-to");
  if (o.cudaGraph && o.syncEachStep)
    return usageError(argv[0], embedded,
                      "--sync-each-step and --cuda-graph exclude each other (a graph replays "
                      "the whole schedule in one launch)");
  return std::nullopt;
}

/// Output file names keep [A-Za-z0-9._-]; everything else becomes '_'.
std::string safeFileName(const std::string &name) {
  std::string s = name.empty() ? "output" : name;
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      c = '_';
  if (s == "." || s == "..")
    s = "_";
  return s;
}

/// Parses "D0xD1x..." (sizes); std::nullopt if malformed.
std::optional<ref::Shape> parseShape(const std::string &text) {
  ref::Shape shape;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::optional<uint64_t> d = parseDecimal(part);
    if (!d || *d > (uint64_t(1) << 40))
      return std::nullopt;
    shape.push_back(static_cast<int64_t>(*d));
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  return shape;
}

/// Random data in the input's own memory layout.
std::vector<uint8_t> randomInput(const rt::TensorSpec &spec, uint64_t seed) {
  ref::Tensor t = ref::Tensor::zeros(spec.dtype, spec.shape);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (int64_t k = 0; k < t.numElements(); ++k) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double unit = static_cast<double>(z >> 11) * 0x1.0p-53;
    if (t.isFloat())
      t.setDouble(k, 2.0 * unit - 1.0);
    else
      t.setInt(k, spec.dtype == ref::DType::I1 ? (z & 1) : static_cast<int64_t>(unit * 10));
  }
  std::vector<uint8_t> data(spec.byteSize());
  ref::encodeTensor(t, spec.dimOrder, data.data());
  return data;
}

/// Row-major bytes (what .npy, .pb and .npz hold) laid out as `spec`'s
/// layout, in place.
void toLayout(const rt::TensorSpec &spec, std::vector<uint8_t> &data) {
  if (spec.dimOrder.empty())
    return;
  ref::Tensor t = ref::decodeTensor(spec.dtype, spec.shape, {}, data.data());
  ref::encodeTensor(t, spec.dimOrder, data.data());
}

/// `spec`'s bytes at `data`, in its layout, as row-major bytes.
std::vector<uint8_t> rowMajorBytes(const rt::TensorSpec &spec, const uint8_t *data) {
  std::vector<uint8_t> rowMajor(data, data + spec.byteSize());
  if (!spec.dimOrder.empty()) {
    ref::Tensor t = ref::decodeTensor(spec.dtype, spec.shape, spec.dimOrder, data);
    ref::encodeTensor(t, {}, rowMajor.data());
  }
  return rowMajor;
}

std::string summary(const rt::TensorSpec &spec, const uint8_t *data) {
  ref::Tensor t = ref::decodeTensor(spec.dtype, spec.shape, spec.dimOrder, data);
  std::string s = spec.name + ": " + spec.typeString();
  int64_t n = t.numElements();
  if (n == 0)
    return s + " (empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    double v = t.getDouble(k);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  char buf[160];
  std::snprintf(buf, sizeof(buf), " min=%.6g max=%.6g mean=%.6g first=[", lo, hi, sum / n);
  s += buf;
  for (int64_t k = 0; k < std::min<int64_t>(n, 4); ++k) {
    std::snprintf(buf, sizeof(buf), "%s%.6g", k ? ", " : "", t.getDouble(k));
    s += buf;
  }
  return s + (n > 4 ? ", ...]" : "]");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool writeTrace(const std::string &path, const rt::Executable &exe, const std::string &device,
                const std::vector<rt::StepTiming> &timings) {
  std::ofstream out(path);
  if (!out)
    return false;
  out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  out << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"kiln "
      << jsonEscaped(exe.name()) << " (" << device << ")\"}}";
  for (int s = 0; s < exe.numStreams(); ++s)
    out << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": " << s
        << ", \"args\": {\"name\": \"stream " << s << "\"}}";
  for (const rt::StepTiming &t : timings) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.3f", t.startUs);
    std::string start = buf;
    std::snprintf(buf, sizeof(buf), "%.3f", t.endUs - t.startUs);
    out << ",\n{\"name\": \"" << jsonEscaped(t.name) << "\", \"cat\": \""
        << jsonEscaped(t.category.empty() ? device : t.category) << "\", \"ph\": \"X\", \"pid\": 1, \"tid\": " << t.stream
        << ", \"ts\": " << start << ", \"dur\": " << buf << ", \"args\": {\"step\": " << t.step
        << ", \"locations\": [";
    std::vector<std::string> locations = exe.stepLocations(t.step);
    for (size_t l = 0; l < locations.size(); ++l)
      out << (l ? ", " : "") << "\"" << jsonEscaped(locations[l]) << "\"";
    out << "]}}";
  }
  out << "\n]}\n";
  out.close(); // the last buffered bytes fail here (a full disk), not before
  return !out.fail();
}

/// Reads `array` (from `source`) as `spec`'s type: bfloat16 arrives as raw
/// 16-bit words (.npy has no bfloat16; the ONNX test data stores it as
/// UINT16) or, as --output-dir writes it, as f32 (`asFloat` then says the
/// data is f32). "" when dtype and shape agree, else what differs.
std::string readAs(const rt::TensorSpec &spec, npy::Array &array, const std::string &source,
                   bool *asFloat = nullptr) {
  if (spec.dtype == ref::DType::BF16 && array.dtype == ref::DType::U16)
    array.dtype = ref::DType::BF16;
  if (asFloat && spec.dtype == ref::DType::BF16 && array.dtype == ref::DType::F32) {
    array.dtype = ref::DType::BF16;
    *asFloat = true;
  }
  // A dynamic dimension takes any size here (the session checks ranges).
  bool shapeFits = array.shape.size() == spec.shape.size();
  for (size_t d = 0; shapeFits && d < spec.shape.size(); ++d)
    shapeFits = spec.shape[d] < 0 || array.shape[d] == spec.shape[d];
  if (array.dtype == spec.dtype && shapeFits)
    return "";
  rt::TensorSpec got = spec;
  got.dtype = array.dtype;
  got.shape = array.shape;
  got.dimOrder.clear();
  return "is " + spec.typeString() + " but " + source + " holds " + got.typeString();
}

/// Compares output `spec` (in its layout at `data`) with the row-major
/// .npy at `path`; "" when it agrees, else what differs. `summary` gets
/// the largest error relative to the tolerance.
std::string compareOutput(const rt::TensorSpec &spec, const uint8_t *data,
                          const std::string &path, double tolerance, std::string &summary) {
  npy::Array expected;
  std::string message;
  if (!npy::read(path, expected, message))
    return message;
  bool asFloat = false;
  if (std::string differs = readAs(spec, expected, path, &asFloat); !differs.empty())
    return differs;
  ref::Tensor want = ref::decodeTensor(asFloat ? ref::DType::F32 : expected.dtype, spec.shape, {},
                                       expected.data.data());
  ref::Tensor have = ref::decodeTensor(spec.dtype, spec.shape, spec.dimOrder, data);
  int64_t n = want.numElements();
  bool anyNonZero = false;
  double worst = 0, maxError = 0;
  int64_t worstAt = -1;
  for (int64_t k = 0; k < n; ++k) {
    double e = want.getDouble(k), a = have.getDouble(k);
    anyNonZero |= e != 0;
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) != std::isnan(a))
        return "element " + std::to_string(k) + " is " + std::to_string(a) + ", expected " +
               std::to_string(e) + " (NaNs in different places)";
      continue;
    }
    double error = std::fabs(a - e);
    // Equal values are within any tolerance, 0 and infinities included.
    double ratio = a == e ? 0 : error / (tolerance + tolerance * std::fabs(e));
    if (std::isnan(ratio))
      ratio = INFINITY; // inf - inf, or 0 / 0 when the tolerance is 0
    if (a != e && !std::isinf(error))
      maxError = std::max(maxError, error);
    if (ratio > worst || worstAt < 0) {
      worst = ratio;
      worstAt = k;
    }
  }
  // A comparison with all-zero expectations proves nothing.
  if (n > 0 && !anyNonZero)
    return "the expected values in " + path + " are all zero: the comparison would prove nothing";
  char buf[160];
  std::snprintf(buf, sizeof(buf), "max abs error %.3g, %.3f of the tolerance %g", maxError,
                worst, tolerance);
  summary = buf;
  if (worst <= 1.0)
    return "";
  std::string index;
  for (size_t d = spec.shape.size(), rest = static_cast<size_t>(worstAt); d-- > 0;) {
    size_t extent = static_cast<size_t>(spec.shape[d]);
    index = std::to_string(rest % extent) + (index.empty() ? "" : ", ") + index;
    rest /= extent;
  }
  std::snprintf(buf, sizeof(buf), " is %.9g, expected %.9g: ", have.getDouble(worstAt),
                want.getDouble(worstAt));
  return "element [" + index + "]" + buf + summary;
}

} // namespace

int runMain(int argc, char **argv, std::shared_ptr<const rt::Executable> embedded) {
  Options o;
  if (std::optional<int> code = parse(argc, argv, embedded != nullptr, o))
    return *code;
  const char *tool = argv[0];
  auto error = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", tool, message.c_str());
    return 1;
  };

  std::shared_ptr<const rt::Executable> exe = embedded;
  if (!exe) {
    auto loaded = rt::Executable::loadFile(o.executable);
    if (!loaded)
      return error(loaded.status().message());
    exe = *loaded;
  }
  if (o.describe) {
    std::string text = exe->describe(); // names may hold any byte, NUL included
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (!o.deviceGiven)
      return 0;
  }
  rt::setHostThreads(o.threads);
  rt::SessionOptions sessionOptions;
  sessionOptions.device = o.device == "cpu"        ? rt::DeviceChoice::CPU
                          : o.device == "cuda-emu" ? rt::DeviceChoice::CudaEmu
                          : o.device == "cuda"     ? rt::DeviceChoice::Cuda
                          : o.device == "reference" ? rt::DeviceChoice::Reference
                                                   : rt::DeviceChoice::Auto;
  sessionOptions.cpuPortable = o.cpuPortable;
  sessionOptions.emuOrder = o.emuOrder == "reverse"    ? rt::EmuOrder::Reverse
                            : o.emuOrder == "shuffled" ? rt::EmuOrder::Shuffled
                                                       : rt::EmuOrder::Forward;
  sessionOptions.emuChecked = o.emuChecked;
  sessionOptions.cudaGraph = o.cudaGraph;
  sessionOptions.syncEachStep = o.syncEachStep;
  sessionOptions.convEpilogueKernels = o.convEpilogueKernels;
  sessionOptions.deviceOrdinal = o.deviceOrdinal;
  sessionOptions.stepTimings = o.bench > 0 || !o.trace.empty();
  sessionOptions.emuProfile = !o.profile.empty();
  sessionOptions.emuProfileSample = o.profileSample;
  auto session = rt::Session::create(exe, sessionOptions);
  if (!session)
    return error(session.status().message());
  if (o.describe) {
    std::printf("%s", (*session)->describeDevice().c_str());
    return 0;
  }

  // Bind inputs.
  std::map<std::string, size_t> inputIndex;
  for (size_t k = 0; k < exe->inputs().size(); ++k)
    inputIndex[exe->inputs()[k].name] = k;
  std::vector<bool> bound(exe->inputs().size(), false);
  for (auto &[name, source] : o.inputs) {
    auto it = inputIndex.find(name);
    if (it == inputIndex.end()) {
      std::string names;
      for (const rt::TensorSpec &s : exe->inputs())
        names += (names.empty() ? "" : ", ") + s.name;
      return error("the executable has no input '" + name + "' (its inputs: " + names + ")");
    }
    rt::TensorSpec spec = exe->inputs()[it->second];
    std::vector<uint8_t> data;
    if (source == "random" || source.rfind("random:", 0) == 0 ||
        source.rfind("random@", 0) == 0) {
      // random[:SEED][@SHAPE]: a dynamic input takes SHAPE, by default its
      // sizes at the executable's OPT point.
      std::string seedText = source, shapeText;
      if (size_t at = source.find('@'); at != std::string::npos) {
        seedText = source.substr(0, at);
        shapeText = source.substr(at + 1);
      }
      // Without a seed, the input's position: two inputs of one shape must
      // not be equal (x - z would be all zeros).
      uint64_t seed = it->second;
      if (seedText != "random") {
        std::optional<uint64_t> given =
            seedText.rfind("random:", 0) == 0 ? parseDecimal(seedText.substr(7)) : std::nullopt;
        if (!given)
          return error("bad seed in '" + source + "' (random:SEED takes 0 to 2^64-1)");
        seed = *given;
      }
      if (!shapeText.empty()) {
        std::optional<ref::Shape> shape = parseShape(shapeText);
        if (!shape)
          return error("bad shape in '" + source + "' (random@D0xD1x... takes sizes)");
        // Its rank and static sizes first: random data is laid out by them.
        bool fits = shape->size() == spec.shape.size();
        for (size_t d = 0; fits && d < shape->size(); ++d)
          fits = spec.shape[d] < 0 || (*shape)[d] == spec.shape[d];
        if (!fits) {
          rt::TensorSpec given = spec;
          given.shape = *shape;
          given.dimNames.clear();
          return error("input '" + name + "' is " + spec.typeString() + ", not " +
                       given.typeString());
        }
        spec.shape = *shape;
      } else if (spec.isDynamic()) {
        spec.shape = exe->inputsAtOpt()[it->second].shape;
      }
      spec.dimNames.clear();
      if (!ref::withinElementLimit(spec.shape))
        return error("input '" + name + "': shape in '" + source + "' is too large");
      data = randomInput(spec, seed);
    } else {
      npy::Array array;
      std::string message, protoName;
      bool isProto = source.size() > 3 && source.compare(source.size() - 3, 3, ".pb") == 0;
      if (!(isProto ? onnxpb::read(source, array, protoName, message)
                    : npy::read(source, array, message)))
        return error(message);
      if (std::string differs = readAs(spec, array, source); !differs.empty())
        return error("input '" + name + "' " + differs);
      data = std::move(array.data);
      spec.shape = array.shape;
      spec.dimNames.clear();
      toLayout(spec, data);
    }
    rt::Status s = exe->inputs()[it->second].isDynamic()
                       ? (*session)->setInput(it->second, data.data(), data.size(), spec.shape)
                       : (*session)->setInput(it->second, data.data(), data.size());
    if (!s)
      return error(s.message());
    bound[it->second] = true;
  }
  // A training step's weights and optimizer state: the session keeps them
  // (from the executable, or --load-weights, or an --input that replaces
  // one).
  const std::vector<rt::StateSpec> &states = exe->states();
  if (states.empty() && (o.steps || !o.saveWeights.empty() || !o.loadWeights.empty()))
    return error("--steps, --load-weights and --save-weights apply to a training step "
                 "(kilnc --train); this executable keeps no weights");
  if (!states.empty() && o.bench)
    return error("--bench would go on training this training step; time it with --steps and "
                 "the total time");
  if (!o.loadWeights.empty()) {
    std::vector<std::pair<std::string, npy::Array>> arrays;
    std::string message;
    if (!npz::read(o.loadWeights, arrays, message))
      return error(message);
    for (auto &[name, array] : arrays) {
      auto it = inputIndex.find(name);
      bool isState = it != inputIndex.end() &&
                     std::any_of(states.begin(), states.end(),
                                 [&](const rt::StateSpec &st) { return st.input == it->second; });
      if (!isState)
        return error(o.loadWeights + ": '" + name + "' is not a weight this training step keeps");
      const rt::TensorSpec &spec = exe->inputs()[it->second];
      if (std::string differs = readAs(spec, array, o.loadWeights + ":" + name); !differs.empty())
        return error("weight '" + name + "' " + differs);
      toLayout(spec, array.data);
      rt::Status st = (*session)->setInput(it->second, array.data.data(), array.data.size());
      if (!st)
        return error(st.message());
    }
  }
  for (const rt::StateSpec &state : states)
    bound[state.input] = true;
  std::string missing;
  for (size_t k = 0; k < bound.size(); ++k)
    if (!bound[k])
      missing += (missing.empty() ? "" : ", ") + exe->inputs()[k].name + " (" +
                 exe->inputs()[k].typeString() + ")";
  if (!missing.empty())
    return error("missing inputs: " + missing + "; give --input NAME=FILE.npy or NAME=random");

  // Run (and benchmark). A training step runs --steps times, printing its
  // loss (its first output) each time.
  rt::Status s = rt::Status::ok();
  std::vector<double> stepUs;
  for (int step = 1; step <= std::max(o.steps, 1); ++step) {
    auto start = std::chrono::steady_clock::now();
    if (!(s = (*session)->run()))
      return error(s.message());
    stepUs.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (o.steps) {
      // The loss: a scalar (or, in a file that says otherwise, its summary).
      const rt::TensorSpec &loss = exe->outputs()[0];
      const auto *data = static_cast<const uint8_t *>((*session)->outputData(0));
      if (loss.numElements() == 1)
        std::printf("step %d: %s = %.9g\n", step, loss.name.c_str(),
                    ref::decodeTensor(loss.dtype, loss.shape, loss.dimOrder, data).getDouble(0));
      else
        std::printf("step %d: %s\n", step, summary(loss, data).c_str());
    }
  }
  if (o.steps == 1)
    std::printf("1 step: %.0f us\n", stepUs.front());
  else if (o.steps > 1) // (the first, which makes the run's devices, apart)
    std::printf("%d steps: the first %.0f us, then a median of %.0f us a step\n", o.steps,
                stepUs.front(), median(std::vector<double>(stepUs.begin() + 1, stepUs.end())));
  if (!o.saveWeights.empty()) {
    std::vector<std::pair<std::string, npy::Array>> arrays;
    for (size_t k = 0; k < states.size(); ++k) {
      const rt::TensorSpec &spec = exe->inputs()[states[k].input];
      npy::Array array;
      array.dtype = spec.dtype;
      array.shape = spec.shape;
      array.data =
          rowMajorBytes(spec, static_cast<const uint8_t *>((*session)->stateData(k)));
      arrays.push_back({spec.name, std::move(array)});
    }
    std::string message;
    if (!npz::write(o.saveWeights, arrays, message))
      return error(message);
  }
  if (o.bench > 0) {
    std::vector<double> totals;
    std::map<std::string, std::vector<double>> perStep;
    std::vector<std::string> order;
    for (int r = 0; r < o.bench; ++r) {
      auto start = std::chrono::steady_clock::now();
      if (!(s = (*session)->run()))
        return error(s.message());
      totals.push_back(std::chrono::duration<double, std::micro>(
                           std::chrono::steady_clock::now() - start)
                           .count());
      const auto &timings = (*session)->lastTimings();
      for (size_t k = 0; k < timings.size(); ++k) {
        std::string key = "#" + std::to_string(timings[k].step) + " " + timings[k].name + " (stream " +
                          std::to_string(timings[k].stream) + ")";
        if (r == 0)
          order.push_back(key);
        perStep[key].push_back(timings[k].endUs - timings[k].startUs);
      }
    }
    std::printf("bench: %d runs after warm-up, medians\n", o.bench);
    for (const std::string &key : order)
      std::printf("  %10.1f us  %s\n", median(perStep[key]), key.c_str());
    std::printf("  %10.1f us  total\n", median(totals));
  }
  if (!o.trace.empty() && !writeTrace(o.trace, *exe, o.device, (*session)->lastTimings()))
    return error("cannot write trace '" + o.trace + "'");
  if (!o.profile.empty()) {
    std::vector<rt::KernelProfile> profiles = (*session)->kernelProfiles();
    if (!writeProfile(o.profile, profiles, o.profileSample))
      return error("cannot write profile '" + o.profile + "'");
    printProfile(stderr, profiles);
    if (o.profileSample > 0)
      std::fprintf(stderr, "%s: note: --profile-sample emulated only some blocks of each "
                   "launch: the outputs below are not meaningful\n", tool);
  }

  // Outputs.
  if (!o.outputDir.empty()) {
    struct stat st;
    if (::stat(o.outputDir.c_str(), &st) != 0 && ::mkdir(o.outputDir.c_str(), 0755) != 0)
      return error("cannot create output directory '" + o.outputDir + "'");
  }
  std::set<std::string> fileNames; // outputs whose names differ only in odd characters
  std::string mismatches;
  for (size_t k = 0; k < exe->outputs().size(); ++k) {
    // An output's sizes follow this run's inputs.
    rt::TensorSpec spec = exe->outputs()[k];
    spec.shape = (*session)->outputShape(k);
    spec.dimNames.clear();
    const uint8_t *data = static_cast<const uint8_t *>((*session)->outputData(k));
    std::printf("%s\n", summary(spec, data).c_str());
    // 'a/b' and 'a:b' are both a_b: the later one gets its output number.
    std::string stem = safeFileName(spec.name);
    while (!fileNames.insert(stem + "." + o.outputFormat).second)
      stem += "-" + std::to_string(k);
    if (!o.compareTo.empty()) {
      std::string summary;
      std::string differs =
          compareOutput(spec, data, o.compareTo + "/" + stem + ".npy", o.tolerance, summary);
      if (differs.empty())
        std::printf("  agrees with %s/%s.npy: %s\n", o.compareTo.c_str(), stem.c_str(),
                    summary.c_str());
      else
        mismatches += "\n  output '" + spec.name + "': " + differs;
    }
    if (o.outputDir.empty())
      continue;
    std::vector<uint8_t> rowMajor = rowMajorBytes(spec, data);
    std::string message;
    std::string fileName = stem + "." + o.outputFormat;
    if (stem != safeFileName(spec.name))
      std::fprintf(stderr, "%s: note: output '%s' is written as %s (another output's file name)\n",
                   tool, spec.name.c_str(), fileName.c_str());
    std::string path = o.outputDir + "/" + fileName;
    bool written = o.outputFormat == "pb"
                       ? onnxpb::write(path, spec.name, spec.dtype, spec.shape, rowMajor.data(), message)
                       : npy::write(path, spec.dtype, spec.shape, rowMajor.data(), message);
    if (!written)
      return error(message);
  }
  if (!mismatches.empty())
    return error("outputs differ from " + o.compareTo + ":" + mismatches);
  return 0;
}

} // namespace tools
} // namespace kiln
