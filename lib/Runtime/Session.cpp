//===- Session.cpp - bind inputs, run, read outputs -----------------------===//

#include "Device.h"

#include "kiln/Reference/SizeCode.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace kiln {
namespace rt {

std::string TensorSpec::typeString() const {
  std::string s = std::string(ref::dtypeName(dtype)) + "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? ", " : "") + (d < dimNames.size() && !dimNames[d].empty()
                                ? dimNames[d]
                                : std::to_string(shape[d]));
  s += "]";
  if (!dimOrder.empty()) {
    if (dimOrder == std::vector<int64_t>{0, 2, 3, 1}) {
      s += " nhwc";
    } else {
      s += " perm[";
      for (size_t d = 0; d < dimOrder.size(); ++d)
        s += (d ? ", " : "") + std::to_string(dimOrder[d]);
      s += "]";
    }
  }
  if (device == DeviceKind::CUDA)
    s += " @cuda:" + std::to_string(deviceOrdinal);
  return s;
}

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Executable> exe,
                                                 const SessionOptions &options) {
  const Program &p = exe->program();
  if (options.convEpilogueKernels && options.device != DeviceChoice::Cuda &&
      options.device != DeviceChoice::CudaEmu)
    return Status::error("--conv-epilogue-kernels applies to --device=cuda and cuda-emu");
  if (options.emuProfile && options.device != DeviceChoice::CudaEmu)
    return Status::error("--profile applies to --device=cuda-emu (the emulator counts what "
                         "each kernel asks of the memory system)");
  if (options.cpuPortable && options.device != DeviceChoice::CPU &&
      options.device != DeviceChoice::Auto)
    return Status::error("--cpu-portable applies to --device=cpu");
  if (options.cpuKernelStandIns && options.device != DeviceChoice::CPU &&
      options.device != DeviceChoice::Auto)
    return Status::error("stand-ins for the native CPU kernels apply to the cpu device");
  if (options.device != DeviceChoice::Cuda) {
    if (options.cudaGraph)
      return Status::error("--cuda-graph applies to --device=cuda (it captures the schedule "
                           "into a CUDA graph)");
    if (options.syncEachStep)
      return Status::error("--sync-each-step applies to --device=cuda (the host devices run "
                           "each step to its end anyway)");
    if (options.deviceOrdinal != 0)
      return Status::error("a device number applies to --device=cuda:N only");
  }
  if (options.cudaGraph && exe->hasLengthsReadMidRun())
    return Status::error("--cuda-graph captures whole runs; this executable reads lengths that "
                         "follow computed data between its steps (docs/runtime.md)");
  if (options.cudaGraph && options.syncEachStep)
    return Status::error("--sync-each-step and --cuda-graph exclude each other (a graph "
                         "replays the whole schedule in one launch)");
  std::unique_ptr<Session> session(new Session());
  session->options_ = options;
  session->stepTimings_ = options.stepTimings;
  session->inputSet_.assign(p.inputs.size(), false);
  session->inputShapes_.resize(p.inputs.size());
  if (exe->isDynamic()) {
    // A program and device per size signature, made at the first run of
    // each (Session::selectSignature).
    session->inputStorage_.resize(p.inputs.size());
    session->exe_ = std::move(exe);
    return session;
  }
  // Every device runs every executable: on the CPU and cuda-emu, values
  // placed on a GPU live in host memory and transfers are copies (the CPU
  // is the reference for any plan); the CUDA device keeps every buffer on
  // the GPU and runs host-placed steps between copies.
  auto device = options.device == DeviceChoice::Cuda ? createCudaDevice(p, options)
                                                     : createHostDevice(p, options);
  if (!device)
    return device.status();
  session->exe_ = std::move(exe);
  session->device_ = std::move(*device);
  session->current_ = session->device_.get();
  session->program_ = &session->exe_->program();
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    session->inputStorage_.emplace_back(p.inputs[k].byteSize());
    session->inputShapes_[k] = p.inputs[k].shape;
  }
  // The states start at their initial values.
  for (const StateSpec &state : session->exe_->states()) {
    if (state.bytes)
      std::memcpy(session->inputStorage_[state.input].data(), state.initial, state.bytes);
    session->inputSet_[state.input] = true;
  }
  return session;
}

Session::~Session() = default;

Status Session::setInput(size_t index, const void *data, size_t bytes) {
  const Program &p = exe_->program();
  if (index >= p.inputs.size())
    return Status::error("there is no input #" + std::to_string(index));
  if (exe_->inputs()[index].isDynamic())
    return Status::error("input '" + p.inputs[index].name + "' (" +
                         exe_->inputs()[index].typeString() +
                         ") has dynamic dimensions: give its shape with its data");
  if (exe_->isDynamic()) {
    inputStorage_[index].resize(p.inputs[index].byteSize());
    inputShapes_[index] = p.inputs[index].shape;
  }
  if (bytes != inputStorage_[index].size())
    return Status::error("input '" + p.inputs[index].name + "' (" +
                         p.inputs[index].typeString() + ") takes " +
                         std::to_string(inputStorage_[index].size()) + " bytes, got " +
                         std::to_string(bytes));
  if (bytes)
    std::memcpy(inputStorage_[index].data(), data, bytes);
  inputSet_[index] = true;
  return Status::ok();
}

Status Session::setInput(size_t index, const void *data, size_t bytes,
                         const std::vector<int64_t> &shape) {
  const std::vector<TensorSpec> &inputs = exe_->inputs();
  if (index >= inputs.size())
    return Status::error("there is no input #" + std::to_string(index));
  const TensorSpec &spec = inputs[index];
  auto given = [&] {
    TensorSpec t;
    t.dtype = spec.dtype;
    t.shape = shape;
    return t.typeString();
  };
  if (!spec.isDynamic()) {
    if (shape != spec.shape)
      return Status::error("input '" + spec.name + "' is " + spec.typeString() + ", got " +
                           given());
    return setInput(index, data, bytes);
  }
  if (shape.size() != spec.shape.size())
    return Status::error("input '" + spec.name + "' is " + spec.typeString() + ", got rank " +
                         std::to_string(shape.size()) + " (" + given() + ")");
  for (size_t d = 0; d < shape.size(); ++d) {
    if (spec.shape[d] >= 0 && shape[d] != spec.shape[d])
      return Status::error("input '" + spec.name + "' is " + spec.typeString() +
                           ": dimension " + std::to_string(d) + " must be " +
                           std::to_string(spec.shape[d]) + ", got " + given());
    if (spec.shape[d] < 0)
      for (const SizeSymbolSpec &sym : exe_->sizeSymbols())
        if (sym.name == spec.dimNames[d] && (shape[d] < sym.min || shape[d] > sym.max))
          return Status::error("input '" + spec.name + "' dimension " + std::to_string(d) +
                               " ('" + sym.name + "') is " + std::to_string(shape[d]) +
                               ", outside the executable's range " + std::to_string(sym.min) +
                               ".." + std::to_string(sym.max));
  }
  if (!ref::withinElementLimit(shape))
    return Status::error("input '" + spec.name + "' has an invalid shape " + given());
  size_t expected = static_cast<size_t>(ref::numElements(shape) * ref::byteWidth(spec.dtype));
  if (bytes != expected)
    return Status::error("input '" + spec.name + "' of shape " + given() + " takes " +
                         std::to_string(expected) + " bytes, got " + std::to_string(bytes));
  inputStorage_[index].resize(bytes);
  if (bytes)
    std::memcpy(inputStorage_[index].data(), data, bytes);
  inputShapes_[index] = shape;
  inputSet_[index] = true;
  return Status::ok();
}

/// Element `element` of integer (or boolean) input `input`, as a size
/// reads it.
bool Session::readInputElement(int64_t input, int64_t element, int64_t &value,
                               std::string &error) const {
  const TensorSpec &spec = exe_->inputs()[input];
  int64_t count = ref::numElements(inputShapes_[input]);
  if (element >= count) {
    error = "input '" + spec.name + "' has " + std::to_string(count) +
            " elements; its element " + std::to_string(element) + " gives a size";
    return false;
  }
  const uint8_t *data = inputStorage_[input].data();
  switch (spec.dtype) {
  case ref::DType::I64: std::memcpy(&value, data + 8 * element, 8); return true;
  case ref::DType::I32: {
    int32_t v;
    std::memcpy(&v, data + 4 * element, 4);
    value = v;
    return true;
  }
  case ref::DType::I1: // one byte each
    value = data[element] != 0;
    return true;
  default:
    error = "input '" + spec.name + "' gives sizes but holds " + ref::dtypeName(spec.dtype);
    return false;
  }
}

/// The size symbols' values from the inputs' shapes: each dynamic
/// dimension named by a symbol gives it, and inputs sharing one must agree.
/// Lengths read mid-run hold their largest value until bindLengths().
Status Session::bindSymbols(std::vector<int64_t> &values) const {
  const std::vector<SizeSymbolSpec> &symbols = exe_->sizeSymbols();
  values.assign(symbols.size(), -1);
  std::vector<std::string> from(symbols.size());
  for (size_t k = 0; k < exe_->inputs().size(); ++k) {
    const TensorSpec &spec = exe_->inputs()[k];
    for (size_t d = 0; d < spec.dimNames.size(); ++d)
      for (size_t s = 0; s < symbols.size(); ++s) {
        if (spec.shape[d] >= 0 || spec.dimNames[d] != symbols[s].name)
          continue;
        std::string where = "input '" + spec.name + "' dimension " + std::to_string(d);
        int64_t size = inputShapes_[k][d];
        if (values[s] >= 0 && values[s] != size)
          return Status::error(where + " ('" + symbols[s].name + "') is " +
                               std::to_string(size) + " but " + from[s] + " is " +
                               std::to_string(values[s]));
        values[s] = size;
        from[s] = where;
      }
  }
  for (size_t s = 0; s < symbols.size(); ++s)
    if (values[s] < 0 && !symbols[s].isComputed())
      return Status::error("no input gives the size '" + symbols[s].name + "'");
  // Then the values read at run time, in order (each may use the earlier
  // ones), from the integer inputs' elements.
  ref::InputElementReader read = [this](int64_t input, int64_t element, int64_t &value,
                                        std::string &error) {
    return readInputElement(input, element, value, error);
  };
  ref::FloatElementReader readFloat = [&](int64_t input, int64_t element, double &value,
                                          std::string &error) {
    const TensorSpec &spec = exe_->inputs()[input];
    if (element >= ref::numElements(inputShapes_[input])) {
      error = "input '" + spec.name + "' has no element " + std::to_string(element);
      return false;
    }
    const uint8_t *data = inputStorage_[input].data();
    if (spec.dtype == ref::DType::F32) {
      float v;
      std::memcpy(&v, data + 4 * element, 4);
      value = v;
    } else if (spec.dtype == ref::DType::F64) {
      std::memcpy(&value, data + 8 * element, 8);
    } else {
      error = "input '" + spec.name + "' gives scales but holds " + ref::dtypeName(spec.dtype);
      return false;
    }
    return true;
  };
  for (size_t s = 0; s < symbols.size(); ++s) {
    if (!symbols[s].isComputed())
      continue;
    if (symbols[s].knownFromStep > 0) {
      values[s] = symbols[s].max;
      continue;
    }
    std::vector<int64_t> earlier(values.begin(), values.begin() + s);
    std::string problem = ref::evaluateSizeCode(symbols[s].code.data(), symbols[s].code.size(),
                                                earlier, &read, values[s], &readFloat);
    if (!problem.empty())
      return Status::error("size '" + symbols[s].name + "': " + problem);
    // Checked before later codes use it: an error names the first value
    // out of its range.
    if (values[s] < symbols[s].min || values[s] > symbols[s].max)
      return Status::error("size '" + symbols[s].name + "' = " + std::to_string(values[s]) +
                           " is outside its range " + std::to_string(symbols[s].min) + ".." +
                           std::to_string(symbols[s].max));
  }
  return Status::ok();
}

/// Binds the lengths known from step `step` (read from the values the
/// steps before it computed on the current device), and the sizes read
/// at run time that use them.
Status Session::bindLengths(size_t step, std::vector<int64_t> &values) const {
  const std::vector<SizeSymbolSpec> &symbols = exe_->sizeSymbols();
  ref::InputElementReader readValue = [&](int64_t value, int64_t element, int64_t &out,
                                          std::string &error) {
    Status st = current_->readI64(static_cast<uint32_t>(value), element, out);
    error = st.message();
    return st.isOk();
  };
  ref::InputElementReader readInput = [this](int64_t input, int64_t element, int64_t &out,
                                             std::string &error) {
    return readInputElement(input, element, out, error);
  };
  for (size_t s = 0; s < symbols.size(); ++s) {
    if (symbols[s].knownFromStep != step)
      continue;
    std::vector<int64_t> earlier(values.begin(), values.begin() + s);
    std::string problem =
        ref::evaluateSizeCode(symbols[s].code.data(), symbols[s].code.size(), earlier,
                              &readInput, values[s], nullptr, &readValue);
    if (!problem.empty())
      return Status::error("size '" + symbols[s].name + "' (read after step #" +
                           std::to_string(step - 1) + "): " + problem);
    if (values[s] < symbols[s].min || values[s] > symbols[s].max)
      return Status::error("size '" + symbols[s].name + "' = " + std::to_string(values[s]) +
                           " (computed by step #" + std::to_string(step - 1) +
                           ") is outside its range " + std::to_string(symbols[s].min) + ".." +
                           std::to_string(symbols[s].max));
  }
  return Status::ok();
}

/// Makes the program and device of these sizes current: one made before
/// for the same sizes, or a new one (the least recently used of
/// kMaxSignatures dropped).
Status Session::selectSignature(const std::vector<int64_t> &values) {
  // Each device holds an arena of the plan's (largest) size: on a GPU,
  // whose memory the model's weights and activations fill, two (the sizes
  // of two alternating runs); on the host, 8. A run in parts (lengths read
  // mid-run) uses a signature per part: as many times that. The device a
  // run in parts copies from is the most recently used, never the one
  // dropped.
  const size_t kMaxSignatures = (options_.device == DeviceChoice::Cuda ? 2 : 8) *
                                std::max<size_t>(exe_->runParts().size(), 1);
  // Each input's shape must be the program's for these sizes (an input
  // whose size is an expression of the symbols, e.g. seq + 1, is checked
  // here), whether the program is new or kept from an earlier run.
  auto checkInputs = [&](const Program &program) -> Status {
    for (size_t k = 0; k < program.inputs.size(); ++k)
      if (program.inputs[k].shape != inputShapes_[k])
        return Status::error("input '" + program.inputs[k].name + "' must be " +
                             program.inputs[k].typeString() + " for these sizes");
    return Status::ok();
  };
  for (size_t k = 0; k < signatures_.size(); ++k)
    if (signatures_[k].symbols == values) {
      if (Status s = checkInputs(*signatures_[k].program); !s)
        return s;
      // Most recently used last: the first is dropped when one is full.
      std::rotate(signatures_.begin() + k, signatures_.begin() + k + 1, signatures_.end());
      program_ = signatures_.back().program.get();
      current_ = signatures_.back().device.get();
      return Status::ok();
    }
  auto program = exe_->specialise(values);
  if (!program)
    return program.status();
  if (Status s = checkInputs(**program); !s)
    return s;
  // The least recently used goes first, so that its memory is free for
  // the new one's.
  if (signatures_.size() == kMaxSignatures) {
    signatures_.erase(signatures_.begin());
    program_ = nullptr;
    current_ = nullptr;
  }
  auto device = options_.device == DeviceChoice::Cuda ? createCudaDevice(**program, options_)
                                                      : createHostDevice(**program, options_);
  if (!device)
    return device.status();
  signatures_.push_back({values, std::move(*program), std::move(*device)});
  program_ = signatures_.back().program.get();
  current_ = signatures_.back().device.get();
  return Status::ok();
}

Status Session::run() {
  const std::vector<TensorSpec> &inputs = exe_->inputs();
  for (size_t k = 0; k < inputSet_.size(); ++k)
    if (!inputSet_[k])
      return Status::error("input '" + inputs[k].name + "' was not set");
  ran_ = false;
  timings_.clear();
  std::vector<int64_t> values;
  if (exe_->isDynamic()) {
    if (Status st = bindSymbols(values); !st)
      return st;
    if (exe_->hasLengthsReadMidRun()) {
      Status st = runInParts(values);
      ran_ = st.isOk();
      return st;
    }
    if (Status st = selectSignature(values); !st)
      return st;
  }
  Status st = current_->run(inputStorage_, stepTimings_ ? &timings_ : nullptr);
  ran_ = st.isOk();
  // Each state takes its output's value for the next run: all read before
  // any is written (an output may be another state's input).
  if (ran_ && !exe_->states().empty()) {
    std::vector<std::vector<uint8_t>> next;
    for (const StateSpec &state : exe_->states()) {
      const auto *from = static_cast<const uint8_t *>(current_->outputData(state.output));
      next.emplace_back(from, from + state.bytes);
    }
    for (size_t k = 0; k < next.size(); ++k)
      inputStorage_[exe_->states()[k].input] = std::move(next[k]);
  }
  return st;
}

const void *Session::stateData(size_t k) const {
  const std::vector<StateSpec> &states = exe_->states();
  return k < states.size() ? inputStorage_[states[k].input].data() : nullptr;
}

/// A run whose sizes follow computed data: the steps before each length is
/// known run with the program of the sizes known so far (the unknown
/// lengths at their largest, which no step before uses), then the length is
/// read, and the steps after run with the program of the sizes now known,
/// on that signature's device, after the values they need are copied
/// there. Like every signature, each part's program is kept for the next
/// runs; a length seen for the first time specialises the steps after it.
Status Session::runInParts(std::vector<int64_t> &values) {
  size_t begin = 0;
  Device *previous = nullptr;
  for (const Executable::RunPart &part : exe_->runParts()) {
    if (Status st = selectSignature(values); !st)
      return st;
    if (previous && previous != current_)
      for (uint32_t value : part.carried)
        if (Status st = current_->copyValue(*previous, value); !st)
          return st;
    std::vector<StepTiming> timings;
    if (Status st = current_->run(inputStorage_, stepTimings_ ? &timings : nullptr, begin, part.end);
        !st)
      return st;
    // One time line: each part after the one before.
    double shift = 0;
    for (const StepTiming &t : timings_)
      shift = std::max(shift, t.endUs);
    for (StepTiming &t : timings) {
      t.startUs += shift;
      t.endUs += shift;
      timings_.push_back(t);
    }
    if (Status st = bindLengths(part.end, values); !st)
      return st;
    previous = current_;
    begin = part.end;
  }
  return Status::ok();
}

const void *Session::outputData(size_t index) const {
  if (!ran_ || index >= exe_->program().outputValues.size())
    return nullptr;
  return current_->outputData(index);
}

ref::Shape Session::outputShape(size_t index) const {
  if (!ran_ || !program_ || index >= program_->outputs.size())
    return {};
  return program_->outputs[index].shape;
}

std::string Session::describeDevice() const {
  if (!current_)
    return "device: chosen per input sizes at the first run";
  return current_->describe();
}
std::vector<KernelProfile> Session::kernelProfiles() const {
  if (!exe_->hasLengthsReadMidRun())
    return current_ ? current_->kernelProfiles() : std::vector<KernelProfile>{};
  // A run in parts launches kernels on each part's device: the counts of
  // every device kept, summed per kernel.
  std::vector<KernelProfile> merged;
  for (const Signature &signature : signatures_)
    for (KernelProfile &profile : signature.device->kernelProfiles()) {
      auto same = std::find_if(merged.begin(), merged.end(), [&](const KernelProfile &k) {
        return k.kernel == profile.kernel;
      });
      if (same == merged.end()) {
        merged.push_back(std::move(profile));
        continue;
      }
      same->launches += profile.launches;
      same->counts += profile.counts;
      for (size_t step : profile.steps)
        if (std::find(same->steps.begin(), same->steps.end(), step) == same->steps.end())
          same->steps.push_back(step);
    }
  std::sort(merged.begin(), merged.end(), [](const KernelProfile &a, const KernelProfile &b) {
    return a.steps.front() < b.steps.front();
  });
  return merged;
}

std::vector<std::string> Executable::stepLocations(size_t step) const {
  if (step >= program_->steps.size())
    return {};
  return opLocations(program_->steps[step]);
}

std::string Executable::describe() const {
  const Program &p = *program_;
  std::string s = "executable " + p.name + "\n";
  for (size_t k = 0; k < inputs().size(); ++k) {
    const TensorSpec &t = inputs()[k];
    s += "  input  " + t.name + ": " + t.typeString();
    for (const StateSpec &state : states_)
      if (state.input == k)
        s += " (kept by the session: starts as in the file, then output '" +
             outputs()[state.output].name + "' after each run)";
    s += "\n";
  }
  for (const TensorSpec &t : outputs())
    s += "  output " + t.name + ": " + t.typeString() + "\n";
  if (isDynamic()) {
    // The plan below is the one at the OPT sizes.
    s += "  sizes:";
    bool computed = false;
    for (const SizeSymbolSpec &sym : symbols_) {
      computed |= sym.isComputed();
      s += " " + sym.name + " in " + std::to_string(sym.min) + ".." + std::to_string(sym.max) +
           (sym.isComputed() ? "" : " (opt " + std::to_string(sym.opt) + ")") +
           (&sym == &symbols_.back() ? "" : ",");
    }
    s += "; the steps below at the opt sizes\n";
    if (computed) {
      // Which input values each run reads, as expressions.
      std::vector<std::string> names, inputNames;
      for (const SizeSymbolSpec &sym : symbols_)
        names.push_back(sym.name);
      for (const TensorSpec &t : inputs())
        inputNames.push_back(t.name);
      for (const SizeSymbolSpec &sym : symbols_) {
        if (!sym.isComputed())
          continue;
        std::string text = ref::sizeCodeText(sym.code.data(), sym.code.size(), names, inputNames);
        // An element read as it is: its name says it.
        if (text == sym.name || text == sym.name + "[0]")
          continue;
        s += "  read at run time: " + sym.name + " = " +
             (text.size() > 200 ? text.substr(0, 200) + "..." : text) +
             (sym.knownFromStep > 0
                  ? " (once step #" + std::to_string(sym.knownFromStep - 1) + " has run)"
                  : "") +
             "\n";
      }
    }
  }
  uint64_t weightBytes = 0;
  for (const WeightDesc &w : p.weights)
    weightBytes += w.size;
  s += "  weights: " + std::to_string(p.weights.size()) + " (" + std::to_string(weightBytes) +
       " bytes)\n";
  s += "  arena: " + std::to_string(p.arenaBytes) + " bytes\n";
  s += "  streams: " + std::to_string(p.numStreams) +
       ", events: " + std::to_string(p.numEvents) + "\n";
  if (p.deterministic)
    s += "  library calls: deterministic (the same bits on any thread count)\n";
  // Steps are kernels: say how many are fused regions, by kind.
  std::map<std::string, int> fused;
  for (const StepDesc &step : p.steps)
    if (!step.kind.empty())
      ++fused[step.kind];
  for (const DeviceCodeDesc &code : p.deviceCode)
    s += "  device code: " + code.target + " " + code.format + " (" + std::to_string(code.size) +
         " bytes)\n";
  s += "  steps: " + std::to_string(p.steps.size());
  for (const auto &[kind, count] : fused)
    s += (kind == fused.begin()->first ? " (fused: " : ", ") + kind + " " + std::to_string(count);
  s += fused.empty() ? "\n" : ")\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const StepDesc &step = p.steps[i];
    s += "    #" + std::to_string(i) + " " + step.name + " stream " +
         std::to_string(step.stream);
    if (!step.waits.empty()) {
      s += " waits";
      for (uint32_t e : step.waits)
        s += " e" + std::to_string(e);
    }
    if (step.event >= 0)
      s += " signals e" + std::to_string(step.event);
    if (!step.kernel.empty())
      s += " kernel " + step.kernel + "<<<" + std::to_string(step.grid) + ", " +
           std::to_string(step.block) + ">>>";
    if (step.gemm)
      s += " cuBLASLt " + std::to_string(step.gemm->m) + "x" + std::to_string(step.gemm->n) +
           "x" + std::to_string(step.gemm->k) +
           (step.gemm->batch > 1 ? " x" + std::to_string(step.gemm->batch) : std::string()) +
           " epilogue " + gemmEpilogueName(step.gemm->epilogue);
    if (step.conv)
      s += " cuDNN conv " + std::to_string(step.conv->k) + "x" + std::to_string(step.conv->c) +
           "x" + std::to_string(step.conv->r) + "x" + std::to_string(step.conv->s) +
           (step.conv->nhwc ? " nhwc" : "") + (step.conv->bias ? " +bias" : "") +
           (step.conv->relu ? " +relu" : "");
    for (const CpuKernelDesc &k : step.cpuKernels)
      s += " cpu " + k.symbol + "(ops " + std::to_string(k.firstOp) + "-" +
           std::to_string(k.firstOp + k.opCount - 1) + ")";
    for (uint32_t out : step.outputs)
      s += " -> arena[" + std::to_string(p.values[out].index) + "] " +
           p.values[out].type.typeString();
    s += "\n";
  }
  return s;
}

} // namespace rt
} // namespace kiln
