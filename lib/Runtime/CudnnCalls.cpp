//===- CudnnCalls.cpp - a plan's cuDNN convolutions on a GPU --------------===//

#include "CudnnCalls.h"

#include <algorithm>
#include <array>
#include <cstdint>

#ifdef KILN_RUNTIME_HAVE_CUDA
#include <cudnn.h>
#include "SharedLibrary.h"
#endif

namespace kiln {
namespace rt {

#ifdef KILN_RUNTIME_HAVE_CUDA

#define KILN_CUDNN_FUNCTIONS(X)                                                                \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnGetVersion)   \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute) \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)

struct CudnnCalls::Api {
  SharedLibrary library;
#define KILN_DECLARE(name) decltype(&::name) name = nullptr;
  KILN_CUDNN_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE
  /// cuDNN's name for `status`, and its number.
  std::string describe(cudnnStatus_t status) const {
    return std::string(cudnnGetErrorString(status)) + " (cuDNN status " +
           std::to_string(static_cast<int>(status)) + ")";
  }
  Status check(cudnnStatus_t status, const std::string &what) const {
    if (status == CUDNN_STATUS_SUCCESS)
      return Status::ok();
    return Status::error(what + ": " + describe(status));
  }
};

/// One prepared graph: every descriptor it needs stays alive with it.
struct CudnnCalls::Call {
  const Api *api = nullptr;
  /// How errors name the step: index, name, "cuDNN convolution", source.
  std::string what;
  std::vector<cudnnBackendDescriptor_t> owned;
  cudnnBackendDescriptor_t plan = nullptr, variantPack = nullptr;
  /// The chosen engine's global index and the heuristics mode that
  /// offered it ("instant" or "fallback"), for describe().
  int64_t engine = -1;
  const char *heuristics = "";
  /// The graph is the plain convolution and the step's generated kernel
  /// adds the epilogue after it; why the fused graph was not used.
  bool epilogueKernel = false;
  std::string whyUnfused;
  ~Call() {
    for (auto it = owned.rbegin(); it != owned.rend(); ++it)
      api->cudnnBackendDestroyDescriptor(*it);
  }
};

namespace {

cudnnDataType_t dataType(ref::DType t) {
  switch (t) {
  case ref::DType::F16:
    return CUDNN_DATA_HALF;
  case ref::DType::BF16:
    return CUDNN_DATA_BFLOAT16;
  default:
    return CUDNN_DATA_FLOAT;
  }
}

/// The numerical note's name when it rules an engine out under `g`'s
/// options, else null.
const char *excludingNote(cudnnBackendNumericalNote_t note, const ConvCall &g) {
  switch (note) {
  case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
    // Tensor Cores take f32 data rounded (TF32: 10 mantissa bits): only
    // --precision=tf32 allows that, as allow_tf32 does in PyTorch.
    return g.type == ref::DType::F32 && !g.allowTf32 ? "TENSOR_CORE" : nullptr;
  case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
    // Inputs narrowed below their own type: no option allows that (TF32
    // engines carry TENSOR_CORE).
    return "DOWN_CONVERT_INPUTS";
  case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
    // Sums kept in f16/bf16: kiln accumulates in f32 (runConvOnHost).
    return "REDUCED_PRECISION_REDUCTION";
  case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
    return g.deterministic ? "NONDETERMINISTIC" : nullptr;
  default:
    return nullptr;
  }
}

/// A descriptor needed only while an engine is chosen.
struct ScopedDescriptor {
  const CudnnCalls::Api &api;
  cudnnBackendDescriptor_t d = nullptr;
  explicit ScopedDescriptor(const CudnnCalls::Api &api) : api(api) {}
  ScopedDescriptor(const ScopedDescriptor &) = delete;
  ScopedDescriptor &operator=(const ScopedDescriptor &) = delete;
  ~ScopedDescriptor() {
    if (d)
      api.cudnnBackendDestroyDescriptor(d);
  }
  cudnnBackendDescriptor_t release() {
    cudnnBackendDescriptor_t r = d;
    d = nullptr;
    return r;
  }
};

/// What one heuristics mode offered, for the error when no engine is
/// chosen.
struct HeuristicsReport {
  explicit HeuristicsReport(const char *mode) : mode(mode) {}
  const char *mode; ///< "instant", "fallback"
  std::string failed; ///< why the mode gave no list
  int64_t offered = 0, excluded = 0, unsupported = 0, tooLarge = 0;
  std::vector<std::string> notes; ///< those that excluded engines, each once
  std::string planStatus;         ///< the last failed plan's status
  int64_t leastWorkspace = -1;    ///< the least among those too large

  void exclude(const char *note) {
    ++excluded;
    if (std::find(notes.begin(), notes.end(), note) == notes.end())
      notes.push_back(note);
  }
  bool excludedBy(const char *note) const {
    return std::find(notes.begin(), notes.end(), note) != notes.end();
  }
  std::string text(uint64_t plannedWorkspace) const {
    std::string s = std::string(mode) + " heuristics: ";
    if (!failed.empty())
      return s + failed;
    s += std::to_string(offered) + " engine configs";
    std::vector<std::string> parts;
    if (excluded) {
      std::string list;
      for (const std::string &n : notes)
        list += (list.empty() ? "" : ", ") + n;
      parts.push_back(std::to_string(excluded) + " excluded by numerical notes " + list);
    }
    if (unsupported)
      parts.push_back(std::to_string(unsupported) + " failed to make a plan, the last with " +
                      planStatus);
    if (tooLarge)
      parts.push_back(std::to_string(tooLarge) + " needed more than the planned " +
                      std::to_string(plannedWorkspace) + "-byte workspace (the least " +
                      std::to_string(leastWorkspace) + " bytes)");
    for (size_t k = 0; k < parts.size(); ++k)
      s += (k == 0 ? " (" : "; ") + parts[k] + (k + 1 == parts.size() ? ")" : "");
    return s;
  }
};

/// Asks cuDNN's heuristics in `mode` for `graph`'s engine configurations
/// and gives `call` a plan made from the first one the options allow whose
/// workspace fits the planned one. A failed query or setting is an error,
/// naming the attribute; a mode that cannot serve the graph or offers
/// nothing usable leaves the plan unset, and `report` says why.
/// `deviceProp` carries the handle (cuDNN 9.8 on); before 9.8,
/// `legacyHandle` goes on the plan instead.
Status askHeuristics(const CudnnCalls::Api &dnn, CudnnCalls::Call &call,
                     cudnnBackendHeurMode_t mode, cudnnBackendDescriptor_t graph,
                     cudnnBackendDescriptor_t deviceProp, cudnnHandle_t legacyHandle,
                     const ConvCall &g, HeuristicsReport &report) {
  const std::string of = std::string(" of the ") + report.mode + " heuristics";
  auto fail = [&](cudnnStatus_t status, const std::string &what) {
    return Status::error(call.what + ": " + what + ": " + dnn.describe(status));
  };
  cudnnStatus_t s;
  // The heuristics and their configs stay with the call (as the graph
  // does), destroyed after the plan made from one of them.
  cudnnBackendDescriptor_t heuristics = nullptr;
  if ((s = dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heuristics)) !=
      CUDNN_STATUS_SUCCESS)
    return fail(s, "creating the descriptor" + of);
  call.owned.push_back(heuristics);
  if ((s = dnn.cudnnBackendSetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph)) !=
      CUDNN_STATUS_SUCCESS)
    return fail(s, "setting CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH" + of);
  if ((s = dnn.cudnnBackendSetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE,
                                        CUDNN_TYPE_HEUR_MODE, 1, &mode)) != CUDNN_STATUS_SUCCESS)
    return fail(s, "setting CUDNN_ATTR_ENGINEHEUR_MODE" + of);
  if (deviceProp &&
      (s = dnn.cudnnBackendSetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_DEVICEPROP,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &deviceProp)) !=
          CUDNN_STATUS_SUCCESS)
    return fail(s, "setting CUDNN_ATTR_ENGINEHEUR_DEVICEPROP" + of);
  // A mode may not serve this graph: that is its answer, not an error.
  if ((s = dnn.cudnnBackendFinalize(heuristics)) != CUDNN_STATUS_SUCCESS) {
    report.failed = "cudnnBackendFinalize gave " + dnn.describe(s);
    return Status::ok();
  }
  int64_t count = 0;
  if ((s = dnn.cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr)) !=
      CUDNN_STATUS_SUCCESS)
    return fail(s, "counting CUDNN_ATTR_ENGINEHEUR_RESULTS" + of);
  if (count <= 0)
    return Status::ok();
  std::vector<cudnnBackendDescriptor_t> configs(static_cast<size_t>(count), nullptr);
  for (cudnnBackendDescriptor_t &config : configs) {
    if ((s = dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &config)) !=
        CUDNN_STATUS_SUCCESS)
      return fail(s, "creating an engine config descriptor" + of);
    call.owned.push_back(config);
  }
  int64_t got = 0;
  if ((s = dnn.cudnnBackendGetAttribute(heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                        configs.data())) != CUDNN_STATUS_SUCCESS)
    return fail(s, "reading CUDNN_ATTR_ENGINEHEUR_RESULTS" + of);
  got = std::min(got, count);
  report.offered = got;

  // The first configuration the options allow and the workspace fits.
  for (int64_t k = 0; k < got; ++k) {
    const std::string config = " of engine config #" + std::to_string(k) + of;
    ScopedDescriptor engine(dnn);
    int64_t n = 0, index = -1, noteCount = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if ((s = dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine.d)) !=
        CUDNN_STATUS_SUCCESS)
      return fail(s, "creating an engine descriptor" + config);
    if ((s = dnn.cudnnBackendGetAttribute(configs[k], CUDNN_ATTR_ENGINECFG_ENGINE,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine.d)) !=
        CUDNN_STATUS_SUCCESS)
      return fail(s, "reading CUDNN_ATTR_ENGINECFG_ENGINE" + config);
    if ((s = dnn.cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                          CUDNN_TYPE_INT64, 1, &n, &index)) !=
        CUDNN_STATUS_SUCCESS)
      return fail(s, "reading CUDNN_ATTR_ENGINE_GLOBAL_INDEX" + config);
    if ((s = dnn.cudnnBackendGetAttribute(engine.d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                          CUDNN_TYPE_NUMERICAL_NOTE,
                                          CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &noteCount, notes)) !=
        CUDNN_STATUS_SUCCESS)
      return fail(s, "reading CUDNN_ATTR_ENGINE_NUMERICAL_NOTE" + config);
    const char *excludedBy = nullptr;
    for (int64_t i = 0; i < std::min<int64_t>(noteCount, CUDNN_NUMERICAL_NOTE_TYPE_COUNT) &&
                        !excludedBy;
         ++i)
      excludedBy = excludingNote(notes[i], g);
    if (excludedBy) {
      report.exclude(excludedBy);
      continue;
    }

    ScopedDescriptor plan(dnn);
    if ((s = dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
                                              &plan.d)) != CUDNN_STATUS_SUCCESS)
      return fail(s, "creating an execution plan descriptor" + config);
    if (legacyHandle) {
      // cuDNN before 9.8 takes the handle only here (deprecated since).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      s = dnn.cudnnBackendSetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
                                       1, &legacyHandle);
#pragma GCC diagnostic pop
      if (s != CUDNN_STATUS_SUCCESS)
        return fail(s, "setting CUDNN_ATTR_EXECUTION_PLAN_HANDLE" + config);
    }
    if ((s = dnn.cudnnBackendSetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[k])) !=
        CUDNN_STATUS_SUCCESS)
      return fail(s, "setting CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG" + config);
    // Heuristics may offer configs this graph or GPU cannot run: try the next.
    if ((s = dnn.cudnnBackendFinalize(plan.d)) != CUDNN_STATUS_SUCCESS) {
      ++report.unsupported;
      report.planStatus = dnn.describe(s);
      continue;
    }
    int64_t workspace = -1;
    if ((s = dnn.cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                          CUDNN_TYPE_INT64, 1, &n, &workspace)) !=
        CUDNN_STATUS_SUCCESS)
      return fail(s, "reading CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE" + config);
    if (workspace < 0 || static_cast<uint64_t>(workspace) > g.workspaceBytes) {
      ++report.tooLarge;
      if (workspace >= 0 && (report.leastWorkspace < 0 || workspace < report.leastWorkspace))
        report.leastWorkspace = workspace;
      continue;
    }
    call.plan = plan.release();
    call.owned.push_back(call.plan);
    call.engine = index;
    call.heuristics = report.mode;
    return Status::ok();
  }
  return Status::ok();
}

/// Builds one call's descriptors; every failure names the step and what.
class GraphBuilder {
public:
  GraphBuilder(const CudnnCalls::Api &api, CudnnCalls::Call &call) : api(api), call(call) {}

  Status status = Status::ok();

  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type, const char *what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (status)
      status = api.check(api.cudnnBackendCreateDescriptor(type, &d),
                         call.what + ": creating the " + what + " descriptor");
    if (status && d)
      call.owned.push_back(d);
    return status ? d : nullptr;
  }
  template <typename T>
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, const T *values, int64_t count, const char *what) {
    if (status)
      status = api.check(api.cudnnBackendSetAttribute(d, name, type, count, values),
                         call.what + ": setting the " + what);
  }
  void finalize(cudnnBackendDescriptor_t d, const char *what) {
    if (status)
      status = api.check(api.cudnnBackendFinalize(d), call.what + ": finalizing the " + what);
  }

  /// A packed tensor of logical dims [N, C, H, W] (or a [1, K, 1, 1] bias),
  /// stored row-major (NCHW) or channels last (NHWC: C varies fastest),
  /// whose pointer is aligned to `alignment` bytes; virtual ones are f32
  /// intermediates that never reach memory.
  cudnnBackendDescriptor_t tensor(int64_t uid, std::array<int64_t, 4> dims, cudnnDataType_t type,
                                  bool isVirtual, int64_t alignment, bool channelsLast) {
    std::array<int64_t, 4> strides =
        channelsLast
            ? std::array<int64_t, 4>{dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]}
            : std::array<int64_t, 4>{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type, 1, "tensor type");
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), 4, "tensor dims");
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), 4, "tensor strides");
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid, 1, "tensor id");
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment, 1, "tensor alignment");
    set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &isVirtual, 1, "tensor virtual");
    finalize(t, "tensor");
    return t;
  }

  /// A pointwise op (ADD with a second input, or RELU_FWD).
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                     cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode, 1, "pointwise mode");
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &precision, 1,
        "pointwise precision");
    finalize(pw, "pointwise");
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, &pw, 1,
        "pointwise op");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, &x, 1,
        "pointwise x");
    if (b)
      set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, &b, 1,
          "pointwise b");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, &y, 1,
        "pointwise y");
    finalize(op, "pointwise op");
    return op;
  }

private:
  const CudnnCalls::Api &api;
  CudnnCalls::Call &call;
};

enum : int64_t { kX = 1, kW, kY, kBias, kConvOut, kBiasOut };

} // namespace

/// The graph, plan and variant pack of one convolution step as `g`
/// describes it (fused or plain); an error when cuDNN takes no part of it.
/// `noEngine` says why when the error is only that cuDNN does not support
/// the graph or offers no engine for it (what a plain graph may fix).
static Result<std::unique_ptr<CudnnCalls::Call>>
prepareCall(const CudnnCalls::Api &dnn, cudnnHandle_t handle, bool deviceProps, size_t index,
            const StepDesc &step, const ConvCall &g, const CudnnCalls::Address &address,
            uint8_t *arena, std::string &noEngine) {
  auto call = std::make_unique<CudnnCalls::Call>();
  call->api = &dnn;
  call->what = stepLabel(index, step);
  // Every pointer is fixed at load, so the tensors can promise cuDNN
  // their real alignment (a fixed 16 bytes could promise more).
  void *xData = address(step.inputs[static_cast<size_t>(g.x)]);
  void *wData = address(step.inputs[static_cast<size_t>(g.filter)]);
  void *yData = address(step.outputs[0]);
  void *biasData = g.bias ? address(step.inputs[static_cast<size_t>(g.biasInput)]) : nullptr;
  const int64_t virtualAlignment = 16; // never in memory
  GraphBuilder b(dnn, *call);
  cudnnDataType_t type = dataType(g.type);
  bool fused = g.bias || g.relu;
  cudnnBackendDescriptor_t x =
      b.tensor(kX, {g.n, g.c, g.h, g.w}, type, false, pointerAlignment(xData), g.nhwc);
  cudnnBackendDescriptor_t w =
      b.tensor(kW, {g.k, g.c / g.groups, g.r, g.s}, type, false, pointerAlignment(wData), g.nhwc);
  cudnnBackendDescriptor_t y =
      b.tensor(kY, {g.n, g.k, g.p, g.q}, type, false, pointerAlignment(yData), g.nhwc);
  cudnnBackendDescriptor_t convOut =
      fused ? b.tensor(kConvOut, {g.n, g.k, g.p, g.q}, CUDNN_DATA_FLOAT, true, virtualAlignment,
                       g.nhwc)
            : y;

  cudnnBackendDescriptor_t conv = b.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "convolution");
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t dims = 2;
  int64_t dilations[2] = {g.dilationH, g.dilationW}, strides[2] = {g.strideH, g.strideW};
  int64_t pre[2] = {g.padTop, g.padLeft}, post[2] = {g.padBottom, g.padRight};
  b.set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute, 1, "compute type");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode, 1, "mode");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &dims, 1, "spatial dims");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dilations, 2, "dilations");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, strides, 2, "strides");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pre, 2, "padding");
  b.set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, post, 2, "padding");
  b.finalize(conv, "convolution");

  cudnnBackendDescriptor_t convOp =
      b.make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "convolution op");
  float alpha = 1.0f, beta = 0.0f;
  b.set(convOp, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, &x, 1, "x");
  b.set(convOp, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, &w, 1, "w");
  b.set(convOp, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        &convOut, 1, "y");
  b.set(convOp, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, &conv, 1, "convolution");
  b.set(convOp, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &alpha, 1, "alpha");
  b.set(convOp, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &beta, 1, "beta");
  b.finalize(convOp, "convolution op");
  std::vector<cudnnBackendDescriptor_t> ops = {convOp};
  cudnnBackendDescriptor_t last = convOut;
  if (g.bias) {
    cudnnBackendDescriptor_t bias =
        b.tensor(kBias, {1, g.k, 1, 1}, type, false, pointerAlignment(biasData), g.nhwc);
    cudnnBackendDescriptor_t out =
        g.relu ? b.tensor(kBiasOut, {g.n, g.k, g.p, g.q}, CUDNN_DATA_FLOAT, true,
                          virtualAlignment, g.nhwc)
               : y;
    ops.push_back(b.pointwise(CUDNN_POINTWISE_ADD, last, bias, out));
    last = out;
  }
  if (g.relu)
    ops.push_back(b.pointwise(CUDNN_POINTWISE_RELU_FWD, last, nullptr, y));

  cudnnBackendDescriptor_t graph = b.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "graph");
  if (!deviceProps) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle, 1,
          "graph handle (CUDNN_ATTR_OPERATIONGRAPH_HANDLE)");
#pragma GCC diagnostic pop
  }
  b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
        static_cast<int64_t>(ops.size()), "graph ops");
  if (b.status) {
    b.finalize(graph, "graph (cuDNN may not support this fusion)");
    if (!b.status)
      noEngine = "cuDNN does not support the graph";
  }
  cudnnBackendDescriptor_t deviceProp = nullptr;
  if (deviceProps) {
    deviceProp = b.make(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, "device properties");
    b.set(deviceProp, CUDNN_ATTR_DEVICEPROP_HANDLE, CUDNN_TYPE_HANDLE, &handle, 1,
          "device properties' handle (CUDNN_ATTR_DEVICEPROP_HANDLE)");
    b.finalize(deviceProp, "device properties");
  }
  if (!b.status)
    return b.status;

  // Instant heuristics first; the fallback list when they offer no engine
  // the options allow that fits the workspace.
  HeuristicsReport instant("instant"), fallback("fallback");
  if (Status st = askHeuristics(dnn, *call, CUDNN_HEUR_MODE_INSTANT, graph, deviceProp,
                                deviceProps ? nullptr : handle, g, instant);
      !st)
    return st;
  if (!call->plan)
    if (Status st = askHeuristics(dnn, *call, CUDNN_HEUR_MODE_FALLBACK, graph, deviceProp,
                                  deviceProps ? nullptr : handle, g, fallback);
        !st)
      return st;
  if (!call->plan) {
    auto either = [&](const char *note) {
      return instant.excludedBy(note) || fallback.excludedBy(note);
    };
    std::string advice = "recompile with --impl=generated";
    if (instant.tooLarge || fallback.tooLarge)
      advice += ", a larger --workspace-limit";
    if (either("NONDETERMINISTIC"))
      advice += ", without --deterministic";
    if (either("TENSOR_CORE"))
      advice += ", with --precision=tf32";
    noEngine = "no engine: " + instant.text(g.workspaceBytes) + "; " +
               fallback.text(g.workspaceBytes);
    return Status::error(call->what + ": cuDNN offers no engine for this convolution that the " +
                         "options allow: " + instant.text(g.workspaceBytes) + "; " +
                         fallback.text(g.workspaceBytes) + "; " + advice);
  }

  // One variant pack per call: the pointers never change.
  std::vector<int64_t> uids = {kX, kW, kY};
  std::vector<void *> pointers = {xData, wData, yData};
  if (g.bias) {
    uids.push_back(kBias);
    pointers.push_back(biasData);
  }
  void *workspace = g.workspaceBytes ? arena + g.workspaceOffset : nullptr;
  cudnnBackendDescriptor_t pack = b.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
  b.set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(),
        static_cast<int64_t>(uids.size()), "variant ids");
  b.set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers.data(),
        static_cast<int64_t>(pointers.size()), "variant pointers");
  b.set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace, 1,
        "variant workspace");
  b.finalize(pack, "variant pack");
  if (!b.status)
    return b.status;
  call->variantPack = pack;
  return std::move(call);
}

Result<std::unique_ptr<CudnnCalls>> CudnnCalls::create(const Program &program,
                                                       const Address &address, uint8_t *arena,
                                                       bool convEpilogueKernels) {
  std::unique_ptr<CudnnCalls> calls(new CudnnCalls());
  calls->calls_.resize(program.steps.size());
  bool any = false;
  for (const StepDesc &step : program.steps)
    any |= step.conv.has_value();
  if (!any)
    return calls;
  auto api = std::make_unique<Api>();
  std::string why = api->library.open(
      "cuDNN", {"libcudnn.so.9", "libcudnn.so"},
      // Loaded by name at run time: found beside libcudnn.so.9 only if
      // preloaded when that folder is off the loader's path.
      {"libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9",
       "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9",
       "libcudnn_heuristic.so.9"});
  if (!why.empty())
    return Status::error("this executable calls cuDNN, which is not installed here (" + why +
                         "); recompile with kilnc --impl=generated");
#define KILN_RESOLVE(name)                                                                     \
  if (!api->library.resolve(#name, api->name))                                                 \
    return Status::error("cuDNN lacks " #name);
  KILN_CUDNN_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
  calls->api_ = std::move(api);
  const Api &dnn = *calls->api_;
  cudnnHandle_t handle = nullptr;
  if (Status st = dnn.check(dnn.cudnnCreate(&handle), "creating the cuDNN handle"); !st)
    return st;
  calls->handle_ = handle;
  // cuDNN 9.8 on takes the handle through a device-properties descriptor
  // given to the heuristics; the graph and plan attributes that took it
  // before are deprecated, and needed only by older libraries.
  const bool deviceProps = dnn.cudnnGetVersion() >= 90800;

  for (size_t index = 0; index < program.steps.size(); ++index) {
    const StepDesc &step = program.steps[index];
    if (!step.conv)
      continue;
    const ConvCall &g = *step.conv;
    // A fused graph (bias, ReLU) that no engine takes, or that the options
    // ask to split, runs as the plain convolution followed by the step's
    // generated epilogue kernel.
    bool fused = g.bias || g.relu;
    bool canSplit = fused && !step.kernel.empty();
    std::string whyUnfused = "--conv-epilogue-kernels";
    if (!(canSplit && convEpilogueKernels)) {
      std::string noEngine;
      auto call = prepareCall(dnn, handle, deviceProps, index, step, g, address, arena, noEngine);
      if (call) {
        calls->calls_[index] = std::move(*call);
        continue;
      }
      // Only "cuDNN takes no such graph" has a plain graph to fall back to.
      if (!canSplit || noEngine.empty())
        return call.status();
      whyUnfused = noEngine;
    }
    ConvCall plain = g;
    plain.bias = plain.relu = false;
    std::string noEngine;
    auto call = prepareCall(dnn, handle, deviceProps, index, step, plain, address, arena, noEngine);
    if (!call)
      return call.status();
    (*call)->epilogueKernel = true;
    (*call)->whyUnfused = whyUnfused;
    calls->calls_[index] = std::move(*call);
  }
  return calls;
}

CudnnCalls::~CudnnCalls() {
  calls_.clear(); // before the API goes
  if (api_ && handle_)
    api_->cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

bool CudnnCalls::has(size_t step) const { return step < calls_.size() && calls_[step]; }

bool CudnnCalls::runsEpilogueKernel(size_t step) const {
  return has(step) && calls_[step]->epilogueKernel;
}

std::string CudnnCalls::describe(size_t step) const {
  if (!has(step))
    return "";
  const Call &call = *calls_[step];
  std::string s =
      "cuDNN engine " + std::to_string(call.engine) + " (heuristics: " + call.heuristics + ")";
  if (call.epilogueKernel)
    s += " for the plain convolution, then the epilogue kernel (the fused graph: " +
         call.whyUnfused + ")";
  return s;
}

Status CudnnCalls::run(size_t index, void *stream) const {
  if (!has(index))
    return Status::error("step #" + std::to_string(index) + " has no cuDNN convolution");
  const Call &call = *calls_[index];
  const Api &dnn = *api_;
  auto handle = static_cast<cudnnHandle_t>(handle_);
  Status st = dnn.check(dnn.cudnnSetStream(handle, static_cast<cudaStream_t>(stream)),
                        call.what + ": cudnnSetStream");
  if (st)
    st = dnn.check(dnn.cudnnBackendExecute(handle, call.plan, call.variantPack),
                   call.what + ": cudnnBackendExecute");
  return st;
}

#else // no CUDA headers at build time

struct CudnnCalls::Api {};
struct CudnnCalls::Call {};

Result<std::unique_ptr<CudnnCalls>> CudnnCalls::create(const Program &, const Address &,
                                                       uint8_t *, bool) {
  return Status::error("no CUDA support in this build");
}
CudnnCalls::~CudnnCalls() = default;
bool CudnnCalls::has(size_t) const { return false; }
bool CudnnCalls::runsEpilogueKernel(size_t) const { return false; }
std::string CudnnCalls::describe(size_t) const { return ""; }
Status CudnnCalls::run(size_t, void *) const { return Status::error("no CUDA support in this build"); }

#endif

} // namespace rt
} // namespace kiln
