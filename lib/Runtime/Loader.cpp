//===- Loader.cpp - read and validate a .kx executable --------------------===//
//
// Everything in the file is checked before anything runs: header, checksum,
// the FlatBuffers structure, every index, enum, shape, offset and size, each
// op against its operands (ref::checkOp), and the schedule (every wait names
// an event signalled earlier; every buffer is written before, and ordered
// before, each read). A bad file gets an error message, never a crash, an
// out-of-bounds access or a deadlock.
//
//===----------------------------------------------------------------------===//

#include "ElfCheck.h"
#include "Program.h"

#include "kiln/Reference/SizeCode.h"
#include "kiln/Runtime/DeviceLimits.h"
#include "kiln/Runtime/LibraryAlignment.h"
#include "kiln/Runtime/ExecutableFile.h"
#include "kiln/Runtime/ExecutableFormat_generated.h"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {
namespace rt {

namespace kx = ::kiln::kx;

struct Executable::Storage {
  void *map = nullptr;
  size_t mapSize = 0;
  std::vector<uint8_t> copy;
  ~Storage() {
    if (map)
      munmap(map, mapSize);
  }
};

Executable::Executable() = default;
Executable::~Executable() = default;

namespace {

constexpr int64_t kMaxElements = ref::kMaxElements;
constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 40;
/// Value.index of a buffer placed after the planned arena per run.
constexpr uint64_t kPlacedPerRun = ~uint64_t(0);
constexpr uint32_t kMaxStreams = 256;

std::string typeText(const TensorSpec &t) { return t.typeString(); }

template <typename T>
size_t sizeOf(const flatbuffers::Vector<T> *v) {
  return v ? v->size() : 0;
}

/// The FlatBuffers verifier checks a vector's length prefix but not the
/// alignment of 8-byte elements; reading misaligned ones is undefined.
template <typename T>
bool isAligned(const flatbuffers::Vector<T> *v) {
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignof(T) == 0;
}

/// Evaluates a symbolic size (ExecutableFormat.fbs, SizeExpr) for the
/// symbol values `symbols`. Any malformed code is an error.
Status evaluateSizeCode(const kx::SizeExpr *expr, const std::vector<int64_t> &symbols,
                        int64_t &value) {
  if (!expr || !expr->code() || !isAligned(expr->code()))
    return Status::error("a symbolic size is malformed");
  std::string problem = ref::evaluateSizeCode(expr->code()->data(), expr->code()->size(), symbols,
                                              nullptr, value);
  return problem.empty() ? Status::ok() : Status::error(problem);
}

class ProgramBuilder {
public:
  /// `symbols`: the size symbols' values, for an executable over ranges of
  /// sizes (null for one of static shapes).
  /// `computed`: which symbols are read from input values at run time.
  /// `checkComputedOps` false skips the shape checks of ops whose sizes use
  /// them (not the structure's): for a program at made-up values of them.
  explicit ProgramBuilder(const kx::Executable &exe,
                          const std::vector<int64_t> *symbols = nullptr,
                          const std::vector<bool> *computed = nullptr,
                          bool checkComputedOps = true)
      : exe(exe), symbols(symbols), computed(computed), checkComputedOps(checkComputedOps) {}
  Status build(Program &program);

private:
  /// Also sets `readAtRunTime` when a size uses a symbol read at run time.
  Status tensorSpec(const kx::TensorType *type, const std::string &what, TensorSpec &out,
                    bool *readAtRunTime = nullptr);
  /// Whether `size` (already evaluated, so well formed) uses a symbol read
  /// at run time.
  bool readsAtRunTime(const kx::SizeExpr *size) const {
    bool uses = false;
    if (computed)
      ref::forEachSizeInstruction(size->code()->data(), size->code()->size(),
                                  [&](ref::SizeOp op, const int64_t *operands) {
                                    uses |= op == ref::SizeOp::Symbol && (*computed)[operands[0]];
                                  });
    return uses;
  }
  Status values(Program &p);
  Status steps(Program &p);
  Status deviceCode(Program &p);
  Status cpuKernels(const kx::Step *s, const std::string &what, const Program &p, StepDesc &step);
  /// A kernel's launch as the file gives it (a step's own kernel or a size
  /// class's), over symbolic sizes evaluated for this program's sizes, into
  /// `step`'s kernel, grid, block, shared bytes and size parameters.
  Status kernelLaunch(const std::string &what, const std::string &kernel, uint32_t grid,
                      const kx::SizeExpr *gridSize,
                      const flatbuffers::Vector<flatbuffers::Offset<kx::SizeExpr>> *sizes,
                      uint32_t block, uint32_t dynamicShared, StepDesc &step);
  /// A library call's sizes known per run (ExecutableFormat.fbs,
  /// SymbolicField), evaluated for this program's sizes into `field(k)`.
  template <typename Field>
  Status symbolicFields(
      const flatbuffers::Vector<flatbuffers::Offset<kx::SymbolicField>> *fields, unsigned count,
      Field field, const std::string &what) {
    if (!fields)
      return Status::ok();
    if (!symbols)
      return Status::error(what + " has sizes known per run in an executable without size "
                                  "symbols");
    for (const kx::SymbolicField *f : *fields) {
      if (f->field() >= count)
        return Status::error(what + " has no size #" + std::to_string(f->field()));
      if (Status es = evaluateSizeCode(f->size(), *symbols, field(f->field())); !es)
        return Status::error(what + ": size #" + std::to_string(f->field()) + ": " +
                             es.message());
    }
    return Status::ok();
  }
  Status schedule(Program &p);

  const kx::Executable &exe;
  const std::vector<int64_t> *symbols;
  const std::vector<bool> *computed;
  bool checkComputedOps;
  /// Per value: whether its sizes are read at run time.
  std::vector<bool> valueReadAtRunTime;
};

Status ProgramBuilder::tensorSpec(const kx::TensorType *type, const std::string &what,
                                  TensorSpec &out, bool *readAtRunTime) {
  if (readAtRunTime)
    *readAtRunTime = false;
  if (!type)
    return Status::error(what + " has no type");
  if (!isAligned(type->shape()) || !isAligned(type->dim_order()))
    return Status::error(what + " has a misaligned shape");
  if (static_cast<uint8_t>(type->dtype()) > static_cast<uint8_t>(kx::DType::I16))
    return Status::error(what + " has an unknown dtype");
  if (static_cast<uint8_t>(type->device()) > static_cast<uint8_t>(kx::DeviceKind::CUDA) ||
      type->device_ordinal() < 0)
    return Status::error(what + " has an unknown device");
  out.dtype = static_cast<ref::DType>(type->dtype());
  out.device = static_cast<DeviceKind>(type->device());
  out.deviceOrdinal = type->device_ordinal();
  out.shape.clear();
  int64_t elements = 1;
  size_t dynamic = 0, sizes = type->sizes() ? type->sizes()->size() : 0;
  if (type->shape()) {
    if (type->shape()->size() > 16)
      return Status::error(what + " has too many dimensions");
    for (int64_t d : *type->shape()) {
      // A dynamic dimension (-1) takes the next symbolic size's value.
      if (d == -1 && symbols && dynamic < sizes) {
        const kx::SizeExpr *size = type->sizes()->Get(dynamic++);
        Status s = evaluateSizeCode(size, *symbols, d);
        if (!s)
          return Status::error(what + ": " + s.message());
        if (readAtRunTime)
          *readAtRunTime |= readsAtRunTime(size);
      }
      if (d < 0 || __builtin_mul_overflow(elements, d, &elements) || elements > kMaxElements)
        return Status::error(what + " has an invalid shape");
      out.shape.push_back(d);
    }
    if (dynamic != sizes)
      return Status::error(what + " has " + std::to_string(sizes) +
                           " symbolic sizes for " + std::to_string(dynamic) +
                           " dynamic dimensions");
    if (!ref::withinElementLimit(out.shape)) // a zero dimension hides the rest
      return Status::error(what + " has an invalid shape");
  }
  out.dimOrder.clear();
  if (type->dim_order() && type->dim_order()->size()) {
    std::vector<bool> seen(out.shape.size(), false);
    if (type->dim_order()->size() != out.shape.size())
      return Status::error(what + " has a layout of the wrong rank");
    for (int64_t d : *type->dim_order()) {
      if (d < 0 || d >= static_cast<int64_t>(out.shape.size()) || seen[d])
        return Status::error(what + " has an invalid layout");
      seen[d] = true;
      out.dimOrder.push_back(d);
    }
  }
  return Status::ok();
}

Status ProgramBuilder::values(Program &p) {
  if (exe.weights())
    for (const kx::Weight *w : *exe.weights()) {
      WeightDesc desc;
      desc.name = w->name() ? w->name()->str() : "";
      desc.data = w->data() ? w->data()->data() : nullptr;
      desc.size = sizeOf(w->data());
      p.weights.push_back(desc);
    }
  size_t numInputs = sizeOf(exe.inputs());
  if (!exe.values())
    return Status::ok();
  for (size_t i = 0; i < exe.values()->size(); ++i) {
    const kx::Value *v = exe.values()->Get(i);
    std::string what = "value #" + std::to_string(i);
    ValueDesc desc;
    bool readAtRunTime = false;
    Status s = tensorSpec(v->type(), what, desc.type, &readAtRunTime);
    if (!s)
      return s;
    valueReadAtRunTime.push_back(readAtRunTime);
    if (static_cast<uint8_t>(v->kind()) > static_cast<uint8_t>(kx::ValueKind::Buffer))
      return Status::error(what + " has an unknown kind");
    desc.kind = static_cast<ValueKind>(v->kind());
    desc.index = v->index();
    uint64_t bytes = desc.type.byteSize();
    uint64_t width = std::max<uint64_t>(ref::byteWidth(desc.type.dtype), 1);
    switch (desc.kind) {
    case ValueKind::Input:
      if (desc.index >= numInputs)
        return Status::error(what + " refers to input #" + std::to_string(desc.index) +
                             ", but there are " + std::to_string(numInputs));
      break;
    case ValueKind::Weight:
      if (desc.index >= p.weights.size())
        return Status::error(what + " refers to a missing weight");
      if (p.weights[desc.index].size != bytes)
        return Status::error("weight '" + p.weights[desc.index].name + "' holds " +
                             std::to_string(p.weights[desc.index].size) + " bytes but its type " +
                             typeText(desc.type) + " needs " + std::to_string(bytes));
      if (reinterpret_cast<uintptr_t>(p.weights[desc.index].data) % width != 0)
        return Status::error("weight '" + p.weights[desc.index].name + "' is not aligned to its " +
                             std::to_string(width) + "-byte elements");
      break;
    case ValueKind::Buffer:
      if (desc.index == kPlacedPerRun) {
        // Placed below, after the planned arena.
        if (!readAtRunTime)
          return Status::error(what + " is placed per run, but its size is not read at run time");
        break;
      }
      if (desc.index > p.arenaBytes || bytes > p.arenaBytes - desc.index)
        return Status::error(what + " at offset " + std::to_string(desc.index) + " with " +
                             std::to_string(bytes) + " bytes lies outside the " +
                             std::to_string(p.arenaBytes) + "-byte arena");
      // The arena is 256-byte aligned (cudaMalloc on the GPU, an aligned
      // allocation on the host); kernels read whole elements.
      if (desc.index % width != 0)
        return Status::error(what + " at offset " + std::to_string(desc.index) +
                             " is not aligned to its " + std::to_string(width) +
                             "-byte elements");
      break;
    }
    p.values.push_back(desc);
  }
  // Buffers sized by values read at run time: after the planned arena, at
  // this run's sizes (no reuse).
  for (size_t i = 0; i < p.values.size(); ++i) {
    ValueDesc &desc = p.values[i];
    if (desc.kind != ValueKind::Buffer || desc.index != kPlacedPerRun)
      continue;
    uint64_t bytes = desc.type.byteSize();
    desc.index = (p.arenaBytes + kLibraryAlignment - 1) / kLibraryAlignment * kLibraryAlignment;
    if (bytes > kMaxArenaBytes || desc.index > kMaxArenaBytes - bytes)
      return Status::error("value #" + std::to_string(i) + " makes the arena larger than " +
                           std::to_string(kMaxArenaBytes) + " bytes");
    p.arenaBytes = desc.index + bytes;
  }
  return Status::ok();
}

Status ProgramBuilder::steps(Program &p) {
  if (!exe.steps())
    return Status::ok();
  for (size_t i = 0; i < exe.steps()->size(); ++i) {
    const kx::Step *s = exe.steps()->Get(i);
    std::string what = "step #" + std::to_string(i);
    StepDesc step;
    step.name = s->name() ? s->name()->str() : "";
    step.kind = s->kind() ? s->kind()->str() : "";
    step.stream = s->stream();
    step.event = s->event();
    if (step.stream >= p.numStreams)
      return Status::error(what + " runs on stream " + std::to_string(step.stream) +
                           " of " + std::to_string(p.numStreams));
    if (step.event < -1 || step.event >= static_cast<int64_t>(p.numEvents))
      return Status::error(what + " signals an unknown event");
    auto indices = [&](const flatbuffers::Vector<uint32_t> *v, std::vector<uint32_t> &out,
                       size_t limit, const char *kind) -> Status {
      if (v)
        for (uint32_t x : *v) {
          if (x >= limit)
            return Status::error(what + " has an out-of-range " + kind);
          out.push_back(x);
        }
      return Status::ok();
    };
    Status st = indices(s->waits(), step.waits, p.numEvents, "wait");
    if (st)
      st = indices(s->inputs(), step.inputs, p.values.size(), "input");
    if (st)
      st = indices(s->outputs(), step.outputs, p.values.size(), "output");
    if (!st)
      return st;
    for (uint32_t out : step.outputs)
      if (p.values[out].kind != ValueKind::Buffer)
        return Status::error(what + " writes to a value that is not an arena buffer");

    // Local values: the inputs, then each op's results; and whether their
    // sizes are read at run time.
    std::vector<ref::TensorInfo> local;
    std::vector<bool> localReadAtRunTime;
    for (uint32_t in : step.inputs) {
      local.push_back({p.values[in].type.dtype, p.values[in].type.shape});
      localReadAtRunTime.push_back(valueReadAtRunTime[in]);
    }
    if (!s->ops() || s->ops()->size() == 0)
      return Status::error(what + " has no ops");
    for (const kx::Op *o : *s->ops()) {
      OpDesc op;
      op.name = o->name() ? o->name()->str() : "";
      op.location = o->location() ? o->location()->str() : "";
      std::string opWhat = what + " op " + op.name + (op.location.empty() ? "" : " (" + op.location + ")");
      bool readAtRunTime = false;
      if (o->attrs())
        for (const kx::Attr *a : *o->attrs()) {
          if (static_cast<uint8_t>(a->kind()) > static_cast<uint8_t>(kx::AttrKind::Type) ||
              static_cast<uint8_t>(a->dtype()) > static_cast<uint8_t>(kx::DType::I16) ||
              !isAligned(a->ints()))
            return Status::error(opWhat + " has a malformed attribute");
          ref::OpAttr attr;
          attr.kind = static_cast<ref::OpAttr::Kind>(a->kind());
          attr.i = a->i();
          attr.f = a->f();
          if (a->ints())
            attr.ints.assign(a->ints()->begin(), a->ints()->end());
          attr.s = a->s() ? a->s()->str() : "";
          attr.dtype = static_cast<ref::DType>(a->dtype());
          if (a->sizes()) {
            // Entries that follow the size symbols (a symbolic reshape target).
            if (!symbols || !attr.ints.empty() || attr.kind != ref::OpAttr::Ints)
              return Status::error(opWhat + " has a malformed symbolic attribute");
            attr.ints.resize(a->sizes()->size());
            for (size_t k = 0; k < attr.ints.size(); ++k) {
              Status es = evaluateSizeCode(a->sizes()->Get(k), *symbols, attr.ints[k]);
              if (!es)
                return Status::error(opWhat + ": " + es.message());
              readAtRunTime |= readsAtRunTime(a->sizes()->Get(k));
            }
          }
          op.attrs[a->name() ? a->name()->str() : ""] = attr;
        }
      std::vector<ref::TensorInfo> operands, results;
      if (o->operands())
        for (uint32_t x : *o->operands()) {
          if (x >= local.size())
            return Status::error(opWhat + " uses an undefined value");
          op.operands.push_back(x);
          operands.push_back(local[x]);
          readAtRunTime |= localReadAtRunTime[x];
        }
      std::vector<bool> resultsReadAtRunTime;
      if (o->results())
        for (size_t r = 0; r < o->results()->size(); ++r) {
          TensorSpec spec;
          bool resultReadAtRunTime = false;
          Status rs =
              tensorSpec(o->results()->Get(r), opWhat + " result", spec, &resultReadAtRunTime);
          if (!rs)
            return rs;
          results.push_back({spec.dtype, spec.shape});
          op.results.push_back(spec);
          resultsReadAtRunTime.push_back(resultReadAtRunTime);
          readAtRunTime |= resultReadAtRunTime;
        }
      // At made-up values of sizes read at run time, only ops using none of
      // them are checked (every op is at each run's values).
      std::string problem = checkComputedOps || !readAtRunTime
                                ? ref::checkOp(op.name, op.attrs, operands, results)
                                : "";
      if (!problem.empty())
        return Status::error(opWhat + ": " + problem);
      local.insert(local.end(), results.begin(), results.end());
      localReadAtRunTime.insert(localReadAtRunTime.end(), resultsReadAtRunTime.begin(),
                                resultsReadAtRunTime.end());
      step.ops.push_back(std::move(op));
    }
    st = indices(s->yields(), step.yields, local.size(), "yield");
    if (!st)
      return st;
    if (step.yields.size() != step.outputs.size())
      return Status::error(what + " yields " + std::to_string(step.yields.size()) +
                           " values for " + std::to_string(step.outputs.size()) + " outputs");
    for (size_t k = 0; k < step.yields.size(); ++k) {
      const ref::TensorInfo &y = local[step.yields[k]];
      const TensorSpec &out = p.values[step.outputs[k]].type;
      if (y.dtype != out.dtype || y.shape != out.shape)
        return Status::error(what + " output #" + std::to_string(k) + " is " +
                             typeText(out) + " but its op computes another type");
    }
    if (s->kernel() && s->kernel()->size() > 0) {
      // A device kernel: its launch and its parameters.
      if (Status ls = kernelLaunch(what, s->kernel()->str(), s->grid(), s->grid_size(),
                                   s->kernel_sizes(), s->block(), s->dynamic_shared(), step);
          !ls)
        return ls;
      if (s->kernel_classes()) {
        // Kernels for size classes: each checked, the first whose class
        // holds at these sizes launched instead.
        if (!symbols)
          return Status::error(what + " has kernels for size classes in an executable "
                                      "without size symbols");
        bool chosen = false;
        for (const kx::KernelClass *c : *s->kernel_classes()) {
          int64_t holds = 0;
          if (Status es = evaluateSizeCode(c->when(), *symbols, holds); !es)
            return Status::error(what + ": a size class of kernel '" + step.kernel + "': " +
                                 es.message());
          if (!c->kernel() || c->kernel()->size() == 0)
            return Status::error(what + " has a size class without a kernel");
          if (!c->grid_size())
            return Status::error(what + " has a size class whose kernel '" + c->kernel()->str() +
                                 "' has no grid of symbolic size");
          // The chosen class's launch replaces the step's own; the others
          // are only checked.
          bool take = holds && !chosen;
          chosen |= take;
          StepDesc checkedOnly;
          if (Status ls = kernelLaunch(what, c->kernel()->str(), 0, c->grid_size(),
                                       c->kernel_sizes(), c->block(), c->dynamic_shared(),
                                       take ? step : checkedOnly);
              !ls)
            return ls;
        }
      }
      st = indices(s->kernel_inputs(), step.kernelInputs, step.inputs.size(), "kernel input");
      if (!st)
        return st;
    }
    // What a library call may read: each step input's type and size.
    std::vector<ref::DType> inputTypes;
    std::vector<int64_t> inputElements;
    for (uint32_t in : step.inputs) {
      if (!s->gemm() && !s->conv())
        break;
      inputTypes.push_back(p.values[in].type.dtype);
      inputElements.push_back(p.values[in].type.numElements());
    }
    if (const kx::GemmCall *g = s->gemm()) {
      if (!step.kernel.empty())
        return Status::error(what + " has both a kernel and a cuBLASLt call");
      if (step.outputs.size() != 1)
        return Status::error(what + " is a cuBLASLt call with " +
                             std::to_string(step.outputs.size()) + " outputs");
      GemmCall call;
      call.m = g->m(), call.n = g->n(), call.k = g->k();
      call.transA = g->trans_a(), call.transB = g->trans_b();
      call.lda = g->lda(), call.ldb = g->ldb(), call.ldc = g->ldc();
      call.batch = g->batch();
      call.strideA = g->stride_a(), call.strideB = g->stride_b(), call.strideC = g->stride_c();
      call.typeA = call.typeB = static_cast<ref::DType>(g->type_ab());
      call.typeC = static_cast<ref::DType>(g->type_c());
      call.tf32 = g->tf32();
      call.epilogue = static_cast<GemmEpilogue>(g->epilogue());
      call.alpha = g->alpha(), call.beta = g->beta();
      call.a = g->a(), call.b = g->b(), call.c = g->c(), call.bias = g->bias();
      call.workspaceBytes = g->workspace_bytes(), call.workspaceOffset = g->workspace_offset();
      call.deterministic = g->deterministic();
      if (Status ss = symbolicFields(g->symbolic(), kNumGemmSizeFields,
                                     [&](unsigned f) -> int64_t & { return gemmSizeField(call, f); },
                                     what + ": its cuBLASLt call");
          !ss)
        return ss;
      const TensorSpec &out = p.values[step.outputs[0]].type;
      std::string problem = checkGemmCall(call, inputTypes, inputElements, out.dtype,
                                          out.numElements(), p.arenaBytes);
      if (!problem.empty())
        return Status::error(what + ": its cuBLASLt call " + problem);
      step.gemm = call;
    }
    if (const kx::ConvCall *g = s->conv()) {
      if (step.gemm)
        return Status::error(what + " has a cuDNN call and also a cuBLASLt call");
      if (step.outputs.size() != 1)
        return Status::error(what + " is a cuDNN call with " +
                             std::to_string(step.outputs.size()) + " outputs");
      ConvCall call;
      call.n = g->n(), call.c = g->c(), call.h = g->h(), call.w = g->w();
      call.k = g->k(), call.r = g->r(), call.s = g->s(), call.p = g->p(), call.q = g->q();
      call.groups = g->groups();
      call.strideH = g->stride_h(), call.strideW = g->stride_w();
      call.dilationH = g->dilation_h(), call.dilationW = g->dilation_w();
      call.padTop = g->pad_top(), call.padLeft = g->pad_left();
      call.padBottom = g->pad_bottom(), call.padRight = g->pad_right();
      call.type = static_cast<ref::DType>(g->type());
      call.bias = g->bias(), call.relu = g->relu();
      call.x = g->x(), call.filter = g->filter(), call.biasInput = g->bias_input();
      call.allowTf32 = g->allow_tf32(), call.deterministic = g->deterministic();
      call.workspaceBytes = g->workspace_bytes(), call.workspaceOffset = g->workspace_offset();
      call.nhwc = g->nhwc();
      if (Status ss = symbolicFields(g->symbolic(), kNumConvSizeFields,
                                     [&](unsigned f) -> int64_t & { return convSizeField(call, f); },
                                     what + ": its cuDNN call");
          !ss)
        return ss;
      // The descriptor's layout must be the values': the CPU backend reads
      // the values' layouts, cuDNN and cuda-emu the descriptor's.
      const std::vector<int64_t> channelsLast = {0, 2, 3, 1};
      for (int32_t operand : {call.x, call.filter}) {
        if (operand < 0 || static_cast<size_t>(operand) >= step.inputs.size())
          continue; // checkConvCall names it
        const std::vector<int64_t> &order = p.values[step.inputs[operand]].type.dimOrder;
        if (call.nhwc ? order != channelsLast : !order.empty())
          return Status::error(what + ": its cuDNN call is " +
                               (call.nhwc ? "channels last" : "row-major") +
                               " but an operand is laid out otherwise");
      }
      if (call.nhwc ? p.values[step.outputs[0]].type.dimOrder != channelsLast
                    : !p.values[step.outputs[0]].type.dimOrder.empty())
        return Status::error(what + ": its cuDNN call is " +
                             (call.nhwc ? "channels last" : "row-major") +
                             " but its output is laid out otherwise");
      const TensorSpec &out = p.values[step.outputs[0]].type;
      std::string problem = checkConvCall(call, inputTypes, inputElements, out.dtype,
                                          out.numElements(), p.arenaBytes);
      if (!problem.empty())
        return Status::error(what + ": its cuDNN call " + problem);
      // A cuDNN step's kernel is its epilogue (bias, ReLU) for when cuDNN
      // has no engine for the fused graph: it takes the bias, if any, and
      // updates the output in place.
      std::vector<uint32_t> epilogueInputs;
      if (call.bias)
        epilogueInputs.push_back(static_cast<uint32_t>(call.biasInput));
      if (!step.kernel.empty() &&
          ((!call.bias && !call.relu) || step.kernelInputs != epilogueInputs))
        return Status::error(what + " has a cuDNN call and a kernel '" + step.kernel +
                             "' that is not its epilogue (a convolution " +
                             (call.bias || call.relu ? "whose epilogue takes " +
                                                           std::string(call.bias ? "the bias" : "no input")
                                                     : std::string("without an epilogue")) +
                             ")");
      step.conv = call;
    }
    if (Status cs = cpuKernels(s, what, p, step); !cs)
      return cs;
    p.steps.push_back(std::move(step));
  }
  return Status::ok();
}

Status ProgramBuilder::kernelLaunch(
    const std::string &what, const std::string &kernel, uint32_t grid,
    const kx::SizeExpr *gridSize,
    const flatbuffers::Vector<flatbuffers::Offset<kx::SizeExpr>> *sizes, uint32_t block,
    uint32_t dynamicShared, StepDesc &step) {
  step.kernel = kernel;
  step.grid = grid;
  step.block = block;
  step.kernelSizes.clear();
  step.kernelSizeCodes.clear();
  if (gridSize || sizes) {
    // A kernel over symbolic sizes: its grid and size parameters per run.
    if (!symbols)
      return Status::error(what + " launches kernel '" + step.kernel +
                           "' over symbolic sizes in an executable without size symbols");
    if (!gridSize || step.grid != 0)
      return Status::error(what + " launches kernel '" + step.kernel +
                           "' over symbolic sizes without a grid of symbolic size");
    int64_t blocks = 0;
    if (Status es = evaluateSizeCode(gridSize, *symbols, blocks); !es)
      return Status::error(what + ": the grid of kernel '" + step.kernel + "': " + es.message());
    if (blocks < 1 || blocks > INT32_MAX)
      return Status::error(what + " launches kernel '" + step.kernel + "' with " +
                           std::to_string(blocks) + " blocks");
    step.grid = static_cast<uint32_t>(blocks);
    if (sizes)
      for (const kx::SizeExpr *size : *sizes) {
        int64_t value = 0;
        if (Status es = evaluateSizeCode(size, *symbols, value); !es)
          return Status::error(what + ": a size parameter of kernel '" + step.kernel + "': " +
                               es.message());
        step.kernelSizes.push_back(value);
        step.kernelSizeCodes.emplace_back(size->code()->begin(), size->code()->end());
      }
  }
  if (step.grid < 1 || step.block < 1 || step.block > 1024)
    return Status::error(what + " launches kernel '" + step.kernel + "' with " +
                         std::to_string(step.grid) + " blocks of " + std::to_string(step.block) +
                         " threads");
  // At most sm_90's; a GPU with less refuses when the executable loads (the
  // CUDA device's opt-in), with CUDA's error.
  step.dynamicShared = dynamicShared;
  if (step.dynamicShared > kMaxSharedBytesSm90)
    return Status::error(what + " asks for " + std::to_string(step.dynamicShared) +
                         " bytes of dynamic shared memory for kernel '" + step.kernel +
                         "' (at most " + std::to_string(kMaxSharedBytesSm90) + ")");
  return Status::ok();
}

/// The step's runs of native CPU code: ops in order without overlap, each
/// run reading values defined before it and writing its own ops' f32
/// row-major results, no later op or output using a result the run does not
/// write. (The code itself is native: the executable is trusted as a shared
/// library is; these checks catch a damaged or inconsistent file.)
Status ProgramBuilder::cpuKernels(const kx::Step *s, const std::string &what, const Program &p,
                                  StepDesc &step) {
  if (!s->cpu_kernels())
    return Status::ok();
  // Each local value's type, and the local index each op's results start at.
  std::vector<const TensorSpec *> local;
  for (uint32_t in : step.inputs)
    local.push_back(&p.values[in].type);
  std::vector<size_t> firstResult;
  for (const OpDesc &op : step.ops) {
    firstResult.push_back(local.size());
    for (const TensorSpec &r : op.results)
      local.push_back(&r);
  }
  firstResult.push_back(local.size());
  std::vector<bool> unwritten(local.size(), false); // computed only in registers
  size_t nextOp = 0;
  for (const kx::CpuKernel *k : *s->cpu_kernels()) {
    CpuKernelDesc desc;
    desc.symbol = k->symbol() ? k->symbol()->str() : "";
    desc.firstOp = k->first_op();
    desc.opCount = k->op_count();
    desc.elements = k->elements();
    desc.row = k->row();
    std::string kw = what + " CPU kernel '" + desc.symbol + "'";
    if (k->elements_size()) {
      // Over ranges of sizes: the count at this program's sizes.
      if (!symbols)
        return Status::error(kw + " has a symbolic element count in an executable of static "
                                  "shapes");
      Status es = evaluateSizeCode(k->elements_size(), *symbols, desc.elements);
      if (!es)
        return Status::error(kw + ": " + es.message());
    }
    if ((k->row_size() || k->count_sizes()) && !symbols)
      return Status::error(kw + " has symbolic counts in an executable of static shapes");
    if (k->row_size()) {
      Status es = evaluateSizeCode(k->row_size(), *symbols, desc.row);
      if (!es)
        return Status::error(kw + ": " + es.message());
    }
    if (desc.symbol.empty() || desc.opCount == 0 || desc.firstOp < nextOp ||
        desc.firstOp > step.ops.size() || desc.opCount > step.ops.size() - desc.firstOp)
      return Status::error(kw + " covers ops that are not a run after the step's earlier runs");
    nextOp = desc.firstOp + desc.opCount;
    size_t begin = firstResult[desc.firstOp], end = firstResult[nextOp];
    if (end - begin != desc.opCount)
      return Status::error(kw + " covers an op without exactly one result");
    if (k->read_dtypes() && (!k->reads() || k->read_dtypes()->size() != k->reads()->size()))
      return Status::error(kw + " records " + std::to_string(k->read_dtypes()->size()) +
                           " read dtypes for " + std::to_string(k->reads() ? k->reads()->size() : 0) +
                           " reads");
    if (k->reads())
      for (size_t n = 0; n < k->reads()->size(); ++n) {
        uint32_t r = k->reads()->Get(n);
        // The dtype the code loads: recorded, else f32; the value must have it.
        auto dtype = k->read_dtypes() ? static_cast<ref::DType>(k->read_dtypes()->Get(n))
                                      : ref::DType::F32;
        if (r >= begin || unwritten[r] || local[r]->numElements() < 1 ||
            local[r]->numElements() > desc.elements)
          return Status::error(kw + " reads a value it cannot: local #" + std::to_string(r));
        if (local[r]->dtype != dtype || !isCpuKernelReadable(dtype))
          return Status::error(kw + " reads local #" + std::to_string(r) + " as " +
                               ref::dtypeName(dtype) + ", but it is " +
                               ref::dtypeName(local[r]->dtype));
        desc.reads.push_back(r);
      }
    std::vector<bool> written(local.size(), false);
    if (k->writes())
      for (uint32_t w : *k->writes()) {
        if (w < begin || w >= end || local[w]->dtype != ref::DType::F32 ||
            local[w]->numElements() != desc.elements)
          return Status::error(kw + " writes a value it cannot: local #" + std::to_string(w));
        written[w] = true;
        desc.writes.push_back(w);
      }
    if (desc.writes.empty() || desc.elements < 1)
      return Status::error(kw + " writes nothing");
    // Counts the code reads at run time: a read's elements over a divisor
    // dividing them, at least one.
    size_t counts = k->count_reads() ? k->count_reads()->size() : 0;
    if (counts != (k->count_divisors() ? k->count_divisors()->size() : 0) ||
        !isAligned(k->count_divisors()))
      return Status::error(kw + " has malformed counts");
    for (size_t c = 0; c < counts; ++c) {
      uint32_t read = k->count_reads()->Get(c);
      int64_t divisor = k->count_divisors()->Get(c);
      if (read >= desc.reads.size() || divisor < 1)
        return Status::error(kw + " has malformed counts");
      int64_t n = local[desc.reads[read]]->numElements();
      if (n % divisor != 0 || n / divisor < 1)
        return Status::error(kw + " counts read #" + std::to_string(read) + "'s " +
                             std::to_string(n) + " elements in " + std::to_string(divisor) +
                             "s");
      desc.counts.push_back(n / divisor);
    }
    if (k->count_sizes())
      for (const kx::SizeExpr *size : *k->count_sizes()) {
        int64_t n = 0;
        Status es = evaluateSizeCode(size, *symbols, n);
        if (!es)
          return Status::error(kw + ": " + es.message());
        if (n < 1)
          return Status::error(kw + " has a count of " + std::to_string(n));
        desc.counts.push_back(n);
      }
    // A symbolic row is one of the counts the code reads: the row the
    // runtime splits by must be it.
    if (k->row_size() && (!k->count_sizes() || k->count_sizes()->size() == 0 ||
                          desc.counts[counts] != desc.row))
      return Status::error(kw + " reads its row of " + std::to_string(desc.row) +
                           " elements from no count (the first of its count_sizes)");
    if (desc.row < 1 || desc.elements % desc.row != 0)
      return Status::error(kw + " has rows of " + std::to_string(desc.row) +
                           " elements, which do not divide its " +
                           std::to_string(desc.elements));
    for (size_t v = begin; v < end; ++v)
      unwritten[v] = !written[v];
    step.cpuKernels.push_back(std::move(desc));
  }
  // What a run keeps in registers is used by nothing outside it.
  std::vector<std::pair<size_t, size_t>> runLocals(step.ops.size(), {0, 0}); // per op: its run's
  for (const CpuKernelDesc &k : step.cpuKernels)
    for (uint32_t o = k.firstOp; o < k.firstOp + k.opCount; ++o)
      runLocals[o] = {firstResult[k.firstOp], firstResult[k.firstOp + k.opCount]};
  for (size_t o = 0; o < step.ops.size(); ++o)
    for (uint32_t x : step.ops[o].operands)
      if (unwritten[x] && !(x >= runLocals[o].first && x < runLocals[o].second))
        return Status::error(what + " op #" + std::to_string(o) +
                             " uses a value a CPU kernel keeps to itself (local #" +
                             std::to_string(x) + ")");
  for (uint32_t y : step.yields)
    if (unwritten[y])
      return Status::error(what + " outputs a value its CPU kernels do not write");
  return Status::ok();
}

Status ProgramBuilder::deviceCode(Program &p) {
  if (!exe.device_code())
    return Status::ok();
  for (const kx::DeviceCode *code : *exe.device_code()) {
    DeviceCodeDesc desc;
    desc.target = code->target() ? code->target()->str() : "";
    desc.format = code->format() ? code->format()->str() : "";
    if (code->data()) {
      desc.data = code->data()->data();
      desc.size = code->data()->size();
    }
    if ((desc.format == "cubin" || desc.format == "elf-so" || desc.format == "elf-rel") &&
        desc.size > 0) {
      std::string problem = checkElfImage(desc.data, desc.size);
      if (!problem.empty())
        return Status::error("device code #" + std::to_string(p.deviceCode.size()) + " (" +
                             desc.target + " " + desc.format + ") " + problem);
    }
    p.deviceCode.push_back(desc);
  }
  return Status::ok();
}

/// Vector clocks, as in the compiler's StepSchedule: each wait must name an
/// event signalled by an earlier step (so running in program order never
/// deadlocks), and each buffer a step reads must have been written by a step
/// ordered before it.
Status ProgramBuilder::schedule(Program &p) {
  size_t n = p.numStreams;
  std::vector<std::vector<int64_t>> clock(n, std::vector<int64_t>(n, 0));
  std::vector<std::vector<int64_t>> eventClock(p.numEvents);
  std::vector<bool> eventSet(p.numEvents, false);
  std::vector<int64_t> writer(p.values.size(), -1);
  std::vector<std::pair<uint32_t, int64_t>> written; // per step: stream, position
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const StepDesc &s = p.steps[i];
    std::string what = "step #" + std::to_string(i) + " (" + s.name + ")";
    for (uint32_t e : s.waits) {
      if (!eventSet[e])
        return Status::error(what + " waits for event " + std::to_string(e) +
                             ", which no earlier step signals");
      for (size_t b = 0; b < n; ++b)
        clock[s.stream][b] = std::max(clock[s.stream][b], eventClock[e][b]);
    }
    for (uint32_t in : s.inputs) {
      if (p.values[in].kind != ValueKind::Buffer)
        continue;
      int64_t w = writer[in];
      if (w < 0)
        return Status::error(what + " reads a buffer that no earlier step writes");
      if (clock[s.stream][written[w].first] < written[w].second)
        return Status::error(what + " reads the result of step #" + std::to_string(w) +
                             " without waiting for it");
    }
    int64_t position = ++clock[s.stream][s.stream];
    written.push_back({s.stream, position});
    for (uint32_t out : s.outputs) {
      if (writer[out] >= 0)
        return Status::error(what + " writes a buffer that step #" +
                             std::to_string(writer[out]) + " already wrote");
      writer[out] = i;
    }
    if (s.event >= 0) {
      if (eventSet[s.event])
        return Status::error(what + " signals event " + std::to_string(s.event) + " again");
      eventSet[s.event] = true;
      eventClock[s.event] = clock[s.stream];
    }
  }
  for (uint32_t out : p.outputValues)
    if (p.values[out].kind == ValueKind::Buffer && writer[out] < 0)
      return Status::error("an output is never written");
  return Status::ok();
}

Status ProgramBuilder::build(Program &p) {
  p.name = exe.name() ? exe.name()->str() : "model";
  if (symbols)
    p.symbolValues = *symbols;
  p.arenaBytes = exe.arena_bytes();
  p.numStreams = exe.num_streams();
  p.numEvents = exe.num_events();
  p.deterministic = exe.deterministic();
  if (p.arenaBytes > kMaxArenaBytes)
    return Status::error("arena of " + std::to_string(p.arenaBytes) + " bytes is too large");
  if (p.numStreams < 1 || p.numStreams > kMaxStreams)
    return Status::error("invalid stream count " + std::to_string(p.numStreams));
  if (p.numEvents > sizeOf(exe.steps()))
    return Status::error("more events than steps");
  Status s = values(p);
  if (!s)
    return s;
  auto io = [&](const flatbuffers::Vector<flatbuffers::Offset<kx::IOSpec>> *specs,
                std::vector<uint32_t> &valuesOut, std::vector<TensorSpec> &specsOut,
                bool isInput) -> Status {
    if (!specs)
      return Status::ok();
    for (size_t k = 0; k < specs->size(); ++k) {
      const kx::IOSpec *spec = specs->Get(k);
      if (spec->value() >= p.values.size())
        return Status::error("signature refers to a missing value");
      const ValueDesc &v = p.values[spec->value()];
      if (isInput && (v.kind != ValueKind::Input || v.index != k))
        return Status::error("input #" + std::to_string(k) + " is not bound to its value");
      valuesOut.push_back(spec->value());
      TensorSpec t = v.type;
      t.name = spec->name() ? spec->name()->str() : "";
      specsOut.push_back(t);
    }
    return Status::ok();
  };
  if (!(s = io(exe.inputs(), p.inputValues, p.inputs, true)) ||
      !(s = io(exe.outputs(), p.outputValues, p.outputs, false)))
    return s;
  // Every value naming an input must be that input's type: the session
  // stores each input once, sized by its signature.
  for (size_t i = 0; i < p.values.size(); ++i) {
    const ValueDesc &v = p.values[i];
    if (v.kind != ValueKind::Input)
      continue;
    const TensorSpec &bound = p.inputs[v.index];
    if (v.type.dtype != bound.dtype || v.type.shape != bound.shape ||
        v.type.dimOrder != bound.dimOrder)
      return Status::error("value #" + std::to_string(i) + " reads input #" +
                           std::to_string(v.index) + " as " + typeText(v.type) +
                           ", but the input is " + typeText(bound));
  }
  if (!(s = steps(p)) || !(s = deviceCode(p)))
    return s;
  return schedule(p);
}

} // namespace

struct Loader {
  static Result<std::shared_ptr<const Executable>>
  load(std::unique_ptr<Executable::Storage> storage, const uint8_t *data, size_t size,
       const std::string &source) {
    auto fail = [&](const std::string &message) -> Result<std::shared_ptr<const Executable>> {
      return Status::error(source + ": " + message);
    };
    if (size < kHeaderSize)
      return fail("not a kiln executable: the file is too short (" + std::to_string(size) +
                  " bytes)");
    FileHeader header;
    std::memcpy(&header, data, sizeof(header));
    if (std::memcmp(header.magic, kFileMagic, sizeof(kFileMagic)) != 0)
      return fail("not a kiln executable (bad magic)");
    if (header.version < kOldestFormatVersion || header.version > kFormatVersion)
      return fail("executable format version " + std::to_string(header.version) +
                  " is not supported (this runtime reads versions " +
                  std::to_string(kOldestFormatVersion) + " to " +
                  std::to_string(kFormatVersion) + ")");
    if (header.headerSize != kHeaderSize)
      return fail("bad header size");
    if (header.payloadSize != size - kHeaderSize)
      return fail(header.payloadSize > size - kHeaderSize
                      ? "the file is truncated (" + std::to_string(size) + " bytes, " +
                            std::to_string(header.payloadSize + kHeaderSize) + " expected)"
                      : "the file has " +
                            std::to_string(size - kHeaderSize - header.payloadSize) +
                            " unexpected bytes after the payload");
    const uint8_t *payload = data + kHeaderSize;
    if (payloadChecksum(payload, header.payloadSize) != header.payloadChecksum)
      return fail("checksum mismatch: the file is corrupted");
    flatbuffers::Verifier verifier(payload, header.payloadSize, /*max_depth=*/64,
                                   /*max_tables=*/10000000);
    if (!kx::VerifyExecutableBuffer(verifier))
      return fail("the payload is malformed");
    std::shared_ptr<Executable> exe(new Executable());
    exe->storage_ = std::move(storage);
    exe->payload_ = payload;
    const kx::Executable &file = *kx::GetExecutable(payload);
    Status s = sizeSymbols(file, *exe);
    if (!s)
      return fail(s.message());
    exe->program_ = std::make_unique<Program>();
    if (!exe->isDynamic()) {
      s = ProgramBuilder(file).build(*exe->program_);
      if (!s || !(s = states(file, *exe)))
        return fail(s.message());
      return std::shared_ptr<const Executable>(std::move(exe));
    }
    if (file.states() && file.states()->size())
      return fail("an executable over ranges of sizes has states, which only static ones may");
    // Over ranges of sizes: the whole program is validated at the largest
    // sizes (every buffer within the arena) and the smallest, and kept at
    // the OPT point; each run's sizes are validated again when first seen.
    // Sizes read from input values are consistent only with the values a
    // run gives (a Reshape's target with its input's size): such a program
    // is checked structurally here, at OPT, and validated per run.
    std::vector<int64_t> low, high, opt;
    bool computed = false;
    for (const SizeSymbolSpec &sym : exe->symbols_) {
      low.push_back(sym.min);
      high.push_back(sym.max);
      opt.push_back(sym.opt);
      computed |= sym.isComputed();
    }
    for (const auto *values : {&high, &low}) {
      if (computed)
        break;
      Program check;
      s = ProgramBuilder(file, values).build(check);
      if (!s)
        return fail(s.message() + " (at the " + (values == &high ? "largest" : "smallest") +
                    " sizes)");
    }
    std::vector<bool> readAtRunTime;
    for (const SizeSymbolSpec &sym : exe->symbols_)
      readAtRunTime.push_back(sym.isComputed());
    s = ProgramBuilder(file, &opt, &readAtRunTime, /*checkComputedOps=*/false)
            .build(*exe->program_);
    if (!s)
      return fail(s.message());
    s = genericSignature(file, *exe);
    if (!s || !(s = inputReads(*exe)) || !(s = valueReads(file, *exe)))
      return fail(s.message());
    runParts(*exe);
    return std::shared_ptr<const Executable>(std::move(exe));
  }

  /// Reads and checks the states: an input and an output of one type, each
  /// in one state, and an initial value of the input's bytes.
  static Status states(const kx::Executable &file, Executable &exe) {
    if (!file.states())
      return Status::ok();
    const Program &p = *exe.program_;
    std::vector<bool> inputUsed(p.inputs.size()), outputUsed(p.outputs.size());
    for (const kx::State *state : *file.states()) {
      std::string what = "state #" + std::to_string(exe.states_.size());
      if (state->input() >= p.inputs.size() || state->output() >= p.outputs.size() ||
          state->initial() >= p.weights.size())
        return Status::error(what + " names an input, output or weight the file lacks");
      const TensorSpec &in = p.inputs[state->input()], &out = p.outputs[state->output()];
      if (inputUsed[state->input()] || outputUsed[state->output()])
        return Status::error(what + " shares its input or output with another state");
      inputUsed[state->input()] = outputUsed[state->output()] = true;
      if (in.dtype != out.dtype || in.shape != out.shape || in.dimOrder != out.dimOrder ||
          in.device != out.device)
        return Status::error(what + ": input '" + in.name + "' (" + in.typeString() +
                             ") is updated by output '" + out.name + "' of another type (" +
                             out.typeString() + ")");
      const WeightDesc &initial = p.weights[state->initial()];
      if (initial.size != static_cast<uint64_t>(in.byteSize()))
        return Status::error(what + ": input '" + in.name + "' takes " +
                             std::to_string(in.byteSize()) + " bytes, its initial value holds " +
                             std::to_string(initial.size));
      exe.states_.push_back({state->input(), state->output(), initial.data, initial.size});
    }
    return Status::ok();
  }

  /// Reads and checks the size symbols: names, 0 <= min <= opt <= max.
  static Status sizeSymbols(const kx::Executable &file, Executable &exe) {
    if (!file.symbols())
      return Status::ok();
    if (file.symbols()->size() > ref::kMaxSizeSymbols)
      return Status::error("more than " + std::to_string(ref::kMaxSizeSymbols) +
                           " size symbols");
    for (const kx::SizeSymbol *s : *file.symbols()) {
      SizeSymbolSpec spec;
      spec.name = s->name() ? s->name()->str() : "";
      spec.min = s->min();
      spec.max = s->max();
      spec.opt = s->opt();
      if (s->code()) {
        if (!isAligned(s->code()))
          return Status::error("size symbol '" + spec.name + "' has a malformed code");
        spec.code.assign(s->code()->begin(), s->code()->end());
        std::string problem =
            ref::checkSizeCode(spec.code.data(), spec.code.size(), exe.symbols_.size(),
                               sizeOf(file.inputs()), sizeOf(file.values()));
        if (!problem.empty())
          return Status::error("size symbol '" + spec.name + "': " + problem);
      }
      if (spec.name.empty() || spec.name.size() > 256)
        return Status::error("a size symbol's name is empty or longer than 256 bytes");
      // A value read at run time may be negative (a Reshape's -1); a
      // dimension may not.
      if (!((spec.isComputed() || 0 <= spec.min) && spec.min <= spec.opt &&
            spec.opt <= spec.max) ||
          spec.max > kMaxElements || spec.min < -kMaxElements)
        return Status::error("size symbol '" + spec.name + "' has an invalid range " +
                             std::to_string(spec.min) + ".." + std::to_string(spec.max) + ":" +
                             std::to_string(spec.opt));
      for (const SizeSymbolSpec &other : exe.symbols_)
        if (other.name == spec.name)
          return Status::error("size symbol '" + spec.name + "' is named twice");
      exe.symbols_.push_back(spec);
    }
    return Status::ok();
  }

  /// Each input element a size symbol reads: of a static i64 or i32 input
  /// that holds it.
  static Status inputReads(const Executable &exe) {
    Status status = Status::ok();
    for (const SizeSymbolSpec &sym : exe.symbols_)
      ref::forEachSizeInstruction(
          sym.code.data(), sym.code.size(), [&](ref::SizeOp op, const int64_t *operands) {
            bool scaled = op == ref::SizeOp::ScaledElement;
            if ((op != ref::SizeOp::InputElement && !scaled) || !status)
              return;
            // checkSizeCode bounded the input index.
            const TensorSpec &input = exe.inputs()[operands[0]];
            int64_t element = operands[1];
            ref::DType t = input.dtype;
            bool readable = scaled ? t == ref::DType::F32 || t == ref::DType::F64
                                   : t == ref::DType::I64 || t == ref::DType::I32 ||
                                         t == ref::DType::I1;
            if (!readable || input.isDynamic() || element >= ref::numElements(input.shape))
              status = Status::error("size symbol '" + sym.name + "' reads element " +
                                     std::to_string(element) + " of input '" + input.name +
                                     "' (" + input.typeString() + "), which is not a static " +
                                     (scaled ? "f32 or f64" : "i64, i32 or i1") +
                                     " input that long");
          });
    return status;
  }

  /// Per value, the step after the one writing it (0: no step writes it).
  static std::vector<size_t> stepsAfterWriting(const Program &p) {
    std::vector<size_t> after(p.values.size(), 0);
    for (size_t i = 0; i < p.steps.size(); ++i)
      for (uint32_t out : p.steps[i].outputs)
        after[out] = i + 1;
    return after;
  }

  /// Each computed value a size symbol reads (a length that follows data):
  /// an i64 buffer a step computes, holding the element; the symbol is
  /// known from the step after, and so is one that uses it; no step before
  /// that sizes anything by it.
  static Status valueReads(const kx::Executable &file, Executable &exe) {
    const Program &p = *exe.program_;
    std::vector<size_t> producer = stepsAfterWriting(p);
    Status status = Status::ok();
    for (SizeSymbolSpec &sym : exe.symbols_)
      ref::forEachSizeInstruction(
          sym.code.data(), sym.code.size(), [&](ref::SizeOp op, const int64_t *operands) {
            if (!status)
              return;
            if (op == ref::SizeOp::Symbol) {
              // Earlier symbols only (checkSizeCode).
              sym.knownFromStep =
                  std::max(sym.knownFromStep, exe.symbols_[operands[0]].knownFromStep);
              return;
            }
            if (op != ref::SizeOp::ValueElement)
              return;
            // checkSizeCode bounded the value index.
            const ValueDesc &value = p.values[operands[0]];
            if (value.kind != ValueKind::Buffer || producer[operands[0]] == 0 ||
                value.type.dtype != ref::DType::I64 ||
                operands[1] >= ref::numElements(value.type.shape))
              status = Status::error("size symbol '" + sym.name + "' reads element " +
                                     std::to_string(operands[1]) + " of value #" +
                                     std::to_string(operands[0]) + " (" +
                                     value.type.typeString() +
                                     "), which is not an i64 buffer a step computes that long");
            else
              sym.knownFromStep = std::max(sym.knownFromStep, producer[operands[0]]);
          });
    for (size_t k = 0; k < exe.symbols_.size() && status; ++k) {
      const SizeSymbolSpec &sym = exe.symbols_[k];
      if (sym.knownFromStep == 0)
        continue;
      if (sym.min < 0)
        return Status::error("size symbol '" + sym.name + "' is a length but its range " +
                             std::to_string(sym.min) + ".." + std::to_string(sym.max) +
                             " takes negative values");
      // (The file was validated whole: every vector below exists where a
      // step has it.)
      auto uses = [&](const kx::SizeExpr *e) {
        bool found = false;
        if (e && e->code())
          ref::forEachSizeInstruction(e->code()->data(), e->code()->size(),
                                      [&](ref::SizeOp op, const int64_t *operands) {
                                        found |= op == ref::SizeOp::Symbol &&
                                                 exe.symbols_[operands[0]].knownFromStep >=
                                                     sym.knownFromStep;
                                      });
        return found;
      };
      auto usesAny = [&](const auto *exprs) {
        return exprs && std::any_of(exprs->begin(), exprs->end(), uses);
      };
      for (size_t i = 0; i < sym.knownFromStep && file.steps(); ++i) {
        const kx::Step *step = file.steps()->Get(i);
        bool used = usesAny(step->kernel_sizes()) || uses(step->grid_size());
        if (step->ops())
          for (const kx::Op *op : *step->ops()) {
            if (op->results())
              for (const kx::TensorType *t : *op->results())
                used |= usesAny(t->sizes());
            if (op->attrs())
              for (const kx::Attr *a : *op->attrs())
                used |= usesAny(a->sizes());
          }
        if (used)
          return Status::error("step #" + std::to_string(i) + " is sized by '" + sym.name +
                               "', which is known only once step #" +
                               std::to_string(sym.knownFromStep - 1) + " has run");
      }
    }
    return status;
  }

  /// The parts of a run whose sizes follow computed data: one ending at
  /// each step from which a length is known, then the last; for each, the
  /// buffers a step before computes that it, a later part, a length read
  /// there or the outputs need.
  static void runParts(Executable &exe) {
    const Program &p = *exe.program_;
    size_t numSteps = p.steps.size();
    std::vector<size_t> ends;
    for (const SizeSymbolSpec &sym : exe.symbols_)
      if (sym.knownFromStep > 0)
        ends.push_back(sym.knownFromStep);
    if (ends.empty())
      return;
    ends.push_back(numSteps);
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    std::vector<size_t> after = stepsAfterWriting(p), lastUse(p.values.size(), 0);
    for (size_t i = 0; i < numSteps; ++i)
      for (uint32_t in : p.steps[i].inputs)
        lastUse[in] = std::max(lastUse[in], i);
    for (uint32_t out : p.outputValues)
      lastUse[out] = numSteps;
    // A length reads its value once its last operand is known.
    for (const SizeSymbolSpec &sym : exe.symbols_)
      ref::forEachSizeInstruction(sym.code.data(), sym.code.size(),
                                  [&](ref::SizeOp op, const int64_t *operands) {
                                    if (op == ref::SizeOp::ValueElement)
                                      lastUse[operands[0]] =
                                          std::max(lastUse[operands[0]], sym.knownFromStep);
                                  });
    size_t begin = 0;
    for (size_t end : ends) {
      Executable::RunPart part;
      part.end = end;
      for (size_t v = 0; begin > 0 && v < after.size(); ++v)
        if (after[v] > 0 && after[v] <= begin && lastUse[v] >= begin)
          part.carried.push_back(static_cast<uint32_t>(v));
      exe.parts_.push_back(std::move(part));
      begin = end;
    }
  }

  /// The inputs and outputs as declared: each dynamic dimension -1 with
  /// its size's name ("batch", "seq + 1").
  static Status genericSignature(const kx::Executable &file, Executable &exe) {
    std::vector<std::string> names, inputNames;
    for (const SizeSymbolSpec &s : exe.symbols_)
      names.push_back(s.name);
    for (const TensorSpec &t : exe.program_->inputs)
      inputNames.push_back(t.name);
    auto generic = [&](const std::vector<TensorSpec> &concrete,
                       const std::vector<uint32_t> &valueIndices,
                       std::vector<TensorSpec> &out, bool isInput) -> Status {
      for (size_t k = 0; k < concrete.size(); ++k) {
        TensorSpec spec = concrete[k];
        const kx::TensorType *type = file.values()->Get(valueIndices[k])->type();
        size_t next = 0;
        for (size_t d = 0; d < spec.shape.size(); ++d) {
          if (type->shape()->Get(d) != -1)
            continue;
          // Malformed codes were refused building the program.
          const flatbuffers::Vector<int64_t> &code = *type->sizes()->Get(next++)->code();
          // A run's input sizes bind the dimension symbols; a value read
          // from an input cannot size one.
          std::string computed;
          ref::forEachSizeInstruction(code.data(), code.size(),
                                      [&](ref::SizeOp op, const int64_t *operands) {
                                        if (op == ref::SizeOp::Symbol &&
                                            exe.symbols_[operands[0]].isComputed())
                                          computed = exe.symbols_[operands[0]].name;
                                      });
          if (isInput && !computed.empty())
            return Status::error("input '" + spec.name + "' is sized by '" + computed +
                                 "', which is read at run time");
          std::string text = ref::sizeCodeText(code.data(), code.size(), names, inputNames);
          if (text.size() > 256) // a hostile file's expression: shown, not spelled out
            text = "?";
          spec.dimNames.resize(spec.shape.size());
          spec.dimNames[d] = text;
          spec.shape[d] = -1;
        }
        out.push_back(spec);
      }
      return Status::ok();
    };
    Status s = generic(exe.program_->inputs, exe.program_->inputValues, exe.genericInputs_, true);
    if (!s)
      return s;
    return generic(exe.program_->outputs, exe.program_->outputValues, exe.genericOutputs_, false);
  }
};

Result<std::unique_ptr<Program>>
Executable::specialise(const std::vector<int64_t> &values) const {
  if (values.size() != symbols_.size())
    return Status::error("the executable has " + std::to_string(symbols_.size()) +
                         " size symbols, got " + std::to_string(values.size()) + " values");
  for (size_t k = 0; k < values.size(); ++k)
    if (values[k] < symbols_[k].min || values[k] > symbols_[k].max)
      return Status::error("size '" + symbols_[k].name + "' = " + std::to_string(values[k]) +
                           " is outside its range " + std::to_string(symbols_[k].min) + ".." +
                           std::to_string(symbols_[k].max));
  auto program = std::make_unique<Program>();
  std::vector<bool> readAtRunTime;
  for (const SizeSymbolSpec &sym : symbols_)
    readAtRunTime.push_back(sym.isComputed());
  Status s = ProgramBuilder(*kx::GetExecutable(payload_), &values, &readAtRunTime).build(*program);
  if (!s)
    return s;
  return program;
}

Result<std::shared_ptr<const Executable>> Executable::loadFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  auto storage = std::make_unique<Storage>();
  size_t size = static_cast<size_t>(st.st_size);
  const uint8_t *data = nullptr;
  if (size > 0) {
    // Mapped, not copied: weights are read in place.
    void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      return Status::error(path + ": cannot map: " + std::strerror(errno));
    }
    storage->map = map;
    storage->mapSize = size;
    data = static_cast<const uint8_t *>(map);
  }
  ::close(fd);
  return Loader::load(std::move(storage), data, size, path);
}

Result<std::shared_ptr<const Executable>> Executable::loadMemory(const uint8_t *data,
                                                                 size_t size) {
  auto storage = std::make_unique<Storage>();
  // Keep the copy 64-byte aligned like a mapping: weights are aligned.
  storage->copy.resize(size + 64);
  size_t shift = (64 - reinterpret_cast<uintptr_t>(storage->copy.data()) % 64) % 64;
  if (size)
    std::memcpy(storage->copy.data() + shift, data, size);
  const uint8_t *copy = storage->copy.data() + shift;
  return Loader::load(std::move(storage), copy, size, "<memory>");
}

const std::string &Executable::name() const { return program_->name; }
const std::vector<TensorSpec> &Executable::inputs() const {
  return isDynamic() ? genericInputs_ : program_->inputs;
}
const std::vector<TensorSpec> &Executable::inputsAtOpt() const { return program_->inputs; }
const std::vector<TensorSpec> &Executable::outputs() const {
  return isDynamic() ? genericOutputs_ : program_->outputs;
}
int64_t Executable::arenaBytes() const { return program_->arenaBytes; }

int Executable::numStreams() const { return program_->numStreams; }
size_t Executable::numSteps() const { return program_->steps.size(); }


} // namespace rt
} // namespace kiln
