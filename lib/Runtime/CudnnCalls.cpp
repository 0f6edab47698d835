//===- CudnnCalls.cpp - a plan's cuDNN convolutions on a GPU --------------===//

#include "CudnnCalls.h"

#include <array>

#ifdef KILN_RUNTIME_HAVE_CUDA
#include <cudnn.h>
#include "SharedLibrary.h"
#endif

namespace kiln {
namespace rt {

#ifdef KILN_RUNTIME_HAVE_CUDA

// The operation graph still takes the handle this way in cuDNN 9.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define KILN_CUDNN_FUNCTIONS(X)                                                                \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString)                      \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute) \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)

struct CudnnCalls::Api {
  SharedLibrary library;
#define KILN_DECLARE(name) decltype(&::name) name = nullptr;
  KILN_CUDNN_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE
  Status check(cudnnStatus_t status, const std::string &what) const {
    if (status == CUDNN_STATUS_SUCCESS)
      return Status::ok();
    return Status::error(what + ": " + cudnnGetErrorString(status) + " (cuDNN status " +
                         std::to_string(static_cast<int>(status)) + ")");
  }
};

/// One prepared graph: every descriptor it needs stays alive with it.
struct CudnnCalls::Call {
  const Api *api = nullptr;
  std::string what;
  std::vector<cudnnBackendDescriptor_t> owned;
  cudnnBackendDescriptor_t plan = nullptr, variantPack = nullptr;
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

/// Builds one call's descriptors; every failure names the step and what.
class GraphBuilder {
public:
  GraphBuilder(const CudnnCalls::Api &api, CudnnCalls::Call &call) : api(api), call(call) {}

  Status status = Status::ok();

  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type, const char *what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (status)
      status = api.check(api.cudnnBackendCreateDescriptor(type, &d), call.what + ": " + what);
    if (d)
      call.owned.push_back(d);
    return d;
  }
  template <typename T>
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, const T *values, int64_t count, const char *what) {
    if (status)
      status = api.check(api.cudnnBackendSetAttribute(d, name, type, count, values),
                         call.what + ": " + what);
  }
  void finalize(cudnnBackendDescriptor_t d, const char *what) {
    if (status)
      status = api.check(api.cudnnBackendFinalize(d), call.what + ": " + what);
  }

  /// A packed NCHW tensor (or [1, K, 1, 1] bias); virtual ones are f32
  /// intermediates that never reach memory.
  cudnnBackendDescriptor_t tensor(int64_t uid, std::array<int64_t, 4> dims, cudnnDataType_t type,
                                  bool isVirtual) {
    std::array<int64_t, 4> strides{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    int64_t alignment = 16;
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

Result<std::unique_ptr<CudnnCalls>> CudnnCalls::create(const Program &program,
                                                       const Address &address, uint8_t *arena) {
  std::unique_ptr<CudnnCalls> calls(new CudnnCalls());
  calls->calls_.resize(program.steps.size());
  bool any = false;
  for (const StepDesc &step : program.steps)
    any |= step.conv.has_value();
  if (!any)
    return calls;
  auto api = std::make_unique<Api>();
  std::string why = api->library.open({"libcudnn.so.9", "libcudnn.so"});
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

  for (size_t index = 0; index < program.steps.size(); ++index) {
    const StepDesc &step = program.steps[index];
    if (!step.conv)
      continue;
    const ConvCall &g = *step.conv;
    auto call = std::make_unique<Call>();
    call->api = &dnn;
    call->what = "step #" + std::to_string(index) + " (" + step.name + ")";
    GraphBuilder b(dnn, *call);
    cudnnDataType_t type = dataType(g.type);
    bool fused = g.bias || g.relu;
    cudnnBackendDescriptor_t x = b.tensor(kX, {g.n, g.c, g.h, g.w}, type, false);
    cudnnBackendDescriptor_t w = b.tensor(kW, {g.k, g.c / g.groups, g.r, g.s}, type, false);
    cudnnBackendDescriptor_t y = b.tensor(kY, {g.n, g.k, g.p, g.q}, type, false);
    cudnnBackendDescriptor_t convOut =
        fused ? b.tensor(kConvOut, {g.n, g.k, g.p, g.q}, CUDNN_DATA_FLOAT, true) : y;

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
      cudnnBackendDescriptor_t bias = b.tensor(kBias, {1, g.k, 1, 1}, type, false);
      cudnnBackendDescriptor_t out =
          g.relu ? b.tensor(kBiasOut, {g.n, g.k, g.p, g.q}, CUDNN_DATA_FLOAT, true) : y;
      ops.push_back(b.pointwise(CUDNN_POINTWISE_ADD, last, bias, out));
      last = out;
    }
    if (g.relu)
      ops.push_back(b.pointwise(CUDNN_POINTWISE_RELU_FWD, last, nullptr, y));

    cudnnBackendDescriptor_t graph = b.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "graph");
    b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle, 1, "graph handle");
    b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
          static_cast<int64_t>(ops.size()), "graph ops");
    b.finalize(graph, "graph (cuDNN may not support this fusion)");

    cudnnBackendDescriptor_t heuristic = b.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristic");
    cudnnBackendHeurMode_t heurMode = CUDNN_HEUR_MODE_INSTANT;
    b.set(heuristic, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, &graph,
          1, "heuristic graph");
    b.set(heuristic, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &heurMode, 1, "heuristic mode");
    b.finalize(heuristic, "heuristic");
    int64_t count = 0;
    if (b.status)
      b.status = dnn.check(dnn.cudnnBackendGetAttribute(heuristic, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                                        nullptr),
                           call->what + ": engine count");
    std::vector<cudnnBackendDescriptor_t> configs;
    for (int64_t k = 0; k < count && b.status; ++k)
      configs.push_back(b.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
    int64_t got = 0;
    if (b.status && count > 0)
      b.status = dnn.check(dnn.cudnnBackendGetAttribute(heuristic, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                                        configs.data()),
                           call->what + ": engine configs");
    if (!b.status)
      return b.status;

    // The first configuration the options allow and the workspace fits.
    std::string skipped;
    for (int64_t k = 0; k < got && !call->plan; ++k) {
      cudnnBackendDescriptor_t engine = nullptr;
      dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine);
      int64_t one = 0, noteCount = 0;
      cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
      bool allowed = engine &&
                     dnn.cudnnBackendGetAttribute(configs[k], CUDNN_ATTR_ENGINECFG_ENGINE,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one,
                                                  &engine) == CUDNN_STATUS_SUCCESS &&
                     dnn.cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                  CUDNN_TYPE_NUMERICAL_NOTE,
                                                  CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &noteCount,
                                                  notes) == CUDNN_STATUS_SUCCESS;
      for (int64_t n = 0; allowed && n < noteCount; ++n) {
        if ((notes[n] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS && g.type == ref::DType::F32 &&
             !g.allowTf32) ||
            notes[n] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION ||
            (notes[n] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC && g.deterministic))
          allowed = false;
      }
      if (engine)
        dnn.cudnnBackendDestroyDescriptor(engine);
      if (!allowed) {
        skipped = "numerics the options exclude";
        continue;
      }
      cudnnBackendDescriptor_t plan = nullptr;
      if (dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) !=
          CUDNN_STATUS_SUCCESS)
        continue;
      int64_t workspace = -1;
      bool ok = dnn.cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                             CUDNN_TYPE_HANDLE, 1, &handle) == CUDNN_STATUS_SUCCESS &&
                dnn.cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                             &configs[k]) == CUDNN_STATUS_SUCCESS &&
                dnn.cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
                dnn.cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                             CUDNN_TYPE_INT64, 1, &one,
                                             &workspace) == CUDNN_STATUS_SUCCESS &&
                workspace >= 0 && static_cast<uint64_t>(workspace) <= g.workspaceBytes;
      if (!ok) {
        dnn.cudnnBackendDestroyDescriptor(plan);
        skipped = workspace > 0 ? "a larger workspace than planned" : "a failed plan";
        continue;
      }
      call->owned.push_back(plan);
      call->plan = plan;
    }
    if (!call->plan)
      return Status::error(call->what + ": cuDNN offers no engine for this convolution" +
                           (skipped.empty() ? std::string() : " (the last one needed " + skipped + ")") +
                           "; recompile with --impl=generated, a larger --workspace-limit, or "
                           "without --deterministic");

    // Every pointer is fixed at load: one variant pack per call.
    std::vector<int64_t> uids = {kX, kW, kY};
    std::vector<void *> pointers = {address(step.inputs[static_cast<size_t>(g.x)]),
                                    address(step.inputs[static_cast<size_t>(g.filter)]),
                                    address(step.outputs[0])};
    if (g.bias) {
      uids.push_back(kBias);
      pointers.push_back(address(step.inputs[static_cast<size_t>(g.biasInput)]));
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
    calls->calls_[index] = std::move(call);
  }
  return calls;
}

CudnnCalls::~CudnnCalls() {
  calls_.clear(); // before the API goes
  if (api_ && handle_)
    api_->cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

bool CudnnCalls::has(size_t step) const { return step < calls_.size() && calls_[step]; }

Status CudnnCalls::run(size_t index, void *stream) const {
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
                                                       uint8_t *) {
  return Status::error("no CUDA support in this build");
}
CudnnCalls::~CudnnCalls() = default;
bool CudnnCalls::has(size_t) const { return false; }
Status CudnnCalls::run(size_t, void *) const { return Status::error("no CUDA support in this build"); }

#endif

} // namespace rt
} // namespace kiln
