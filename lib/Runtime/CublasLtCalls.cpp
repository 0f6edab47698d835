//===- CublasLtCalls.cpp - a plan's cuBLASLt steps on a GPU ---------------===//

#include "CublasLtCalls.h"

#include <cstdint>

#ifdef KILN_RUNTIME_HAVE_CUDA
#include <cublasLt.h>
#include "SharedLibrary.h"
#endif

namespace kiln {
namespace rt {

#ifdef KILN_RUNTIME_HAVE_CUDA

#define KILN_CUBLASLT_FUNCTIONS(X)                                                             \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString) X(cublasLtMatmulDescCreate)  \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)                           \
  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                         \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)   \
  X(cublasLtMatmulAlgoConfigGetAttribute)

struct CublasLtCalls::Api {
  SharedLibrary library;
#define KILN_DECLARE(name) decltype(&::name) name = nullptr;
  KILN_CUBLASLT_FUNCTIONS(KILN_DECLARE)
#undef KILN_DECLARE
  /// cuBLAS's name for `status`, and its number.
  std::string describe(cublasStatus_t status) const {
    return std::string(cublasLtGetStatusString(status)) + " (cuBLAS status " +
           std::to_string(static_cast<int>(status)) + ")";
  }
  Status check(cublasStatus_t status, const std::string &what) const {
    if (status == CUBLAS_STATUS_SUCCESS)
      return Status::ok();
    return Status::error(what + ": " + describe(status));
  }
};

/// One prepared call: descriptors, the chosen algorithm, device pointers.
struct CublasLtCalls::Call {
  const Api *api = nullptr;
  /// How errors name the step: index, name, "cuBLASLt matmul", source.
  std::string what;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layoutA = nullptr, layoutB = nullptr, layoutC = nullptr;
  cublasLtMatmulAlgo_t algo{};
  float alpha = 1, beta = 0;
  const void *a = nullptr, *b = nullptr, *c = nullptr;
  void *d = nullptr, *workspace = nullptr;
  size_t workspaceBytes = 0;
  /// The chosen algorithm's id and the operands' alignments, for describe().
  int algoId = -1;
  uint32_t alignment[4] = {0, 0, 0, 0};
  ~Call() {
    if (!api)
      return;
    for (cublasLtMatrixLayout_t l : {layoutA, layoutB, layoutC})
      if (l)
        api->cublasLtMatrixLayoutDestroy(l);
    if (desc)
      api->cublasLtMatmulDescDestroy(desc);
  }
};

namespace {

cudaDataType_t cudaType(ref::DType t) {
  switch (t) {
  case ref::DType::F16:
    return CUDA_R_16F;
  case ref::DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

cublasLtEpilogue_t epilogueOf(GemmEpilogue e) {
  switch (e) {
  case GemmEpilogue::Relu:
    return CUBLASLT_EPILOGUE_RELU;
  case GemmEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case GemmEpilogue::BiasRelu:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  default:
    return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

template <typename T>
cublasStatus_t setDesc(const CublasLtCalls::Api &api, cublasLtMatmulDesc_t desc,
                       cublasLtMatmulDescAttributes_t attr, const T &value) {
  return api.cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value));
}

template <typename T>
cublasStatus_t setLayout(const CublasLtCalls::Api &api, cublasLtMatrixLayout_t layout,
                         cublasLtMatrixLayoutAttribute_t attr, const T &value) {
  return api.cublasLtMatrixLayoutSetAttribute(layout, attr, &value, sizeof(value));
}

template <typename T>
cublasStatus_t setPreference(const CublasLtCalls::Api &api, cublasLtMatmulPreference_t preference,
                             cublasLtMatmulPreferenceAttributes_t attr, const T &value) {
  return api.cublasLtMatmulPreferenceSetAttribute(preference, attr, &value, sizeof(value));
}

} // namespace

Result<std::unique_ptr<CublasLtCalls>> CublasLtCalls::create(const Program &program,
                                                             const Address &address,
                                                             uint8_t *arena) {
  std::unique_ptr<CublasLtCalls> calls(new CublasLtCalls());
  calls->calls_.resize(program.steps.size());
  bool any = false;
  for (const StepDesc &step : program.steps)
    any |= step.gemm.has_value();
  if (!any)
    return calls;

  auto api = std::make_unique<Api>();
  std::string why = api->library.open("cuBLASLt", {"libcublasLt.so.13", "libcublasLt.so"});
  if (!why.empty())
    return Status::error("this executable calls cuBLASLt, which is not installed here (" + why +
                         "); recompile with kilnc --impl=generated");
#define KILN_RESOLVE(name)                                                                     \
  if (!api->library.resolve(#name, api->name))                                                 \
    return Status::error("cuBLASLt lacks " #name);
  KILN_CUBLASLT_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE
  calls->api_ = std::move(api);
  const Api &lt = *calls->api_;
  cublasLtHandle_t handle = nullptr;
  Status st = lt.check(lt.cublasLtCreate(&handle), "creating the cuBLASLt handle");
  if (!st)
    return st;
  calls->handle_ = handle;

  for (size_t index = 0; index < program.steps.size(); ++index) {
    const StepDesc &step = program.steps[index];
    if (!step.gemm)
      continue;
    const GemmCall &g = *step.gemm;
    auto call = std::make_unique<Call>();
    call->api = &lt;
    call->what = stepLabel(index, step);
    const std::string &what = call->what;
    // Every pointer is fixed at load: the algorithm is chosen for them.
    call->a = address(step.inputs[static_cast<size_t>(g.a)]);
    call->b = address(step.inputs[static_cast<size_t>(g.b)]);
    call->d = address(step.outputs[0]);
    call->c = g.c >= 0 ? address(step.inputs[static_cast<size_t>(g.c)]) : call->d;
    cublasComputeType_t compute = g.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    st = lt.check(lt.cublasLtMatmulDescCreate(&call->desc, compute, CUDA_R_32F),
                  what + ": creating the matmul descriptor");
    cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (st)
      st = lt.check(setDesc(lt, call->desc, CUBLASLT_MATMUL_DESC_TRANSA, opA),
                    what + ": setting CUBLASLT_MATMUL_DESC_TRANSA");
    if (st)
      st = lt.check(setDesc(lt, call->desc, CUBLASLT_MATMUL_DESC_TRANSB, opB),
                    what + ": setting CUBLASLT_MATMUL_DESC_TRANSB");
    if (st)
      st = lt.check(setDesc(lt, call->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogueOf(g.epilogue)),
                    what + ": setting CUBLASLT_MATMUL_DESC_EPILOGUE");
    if (st && g.bias >= 0) {
      const void *bias = address(step.inputs[static_cast<size_t>(g.bias)]);
      st = lt.check(setDesc(lt, call->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias),
                    what + ": setting CUBLASLT_MATMUL_DESC_BIAS_POINTER");
    }
    // Layouts: A is (transA ? k x m : m x k), B (transB ? n x k : k x n),
    // C and D m x n; all column-major with the descriptor's leading dims.
    auto layout = [&](cublasLtMatrixLayout_t &out, ref::DType type, int64_t rows, int64_t cols,
                      int64_t ld, int64_t stride, const char *name) {
      if (!st)
        return;
      st = lt.check(lt.cublasLtMatrixLayoutCreate(&out, cudaType(type), static_cast<uint64_t>(rows),
                                                  static_cast<uint64_t>(cols), ld),
                    what + ": creating the layout of " + name);
      if (st && g.batch > 1) {
        int32_t count = static_cast<int32_t>(g.batch);
        st = lt.check(setLayout(lt, out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, count),
                      what + ": setting CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT of " + name);
        if (st)
          st = lt.check(setLayout(lt, out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride),
                        what + ": setting CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET of " + name);
      }
    };
    layout(call->layoutA, g.typeA, g.transA ? g.k : g.m, g.transA ? g.m : g.k, g.lda, g.strideA,
           "A");
    layout(call->layoutB, g.typeB, g.transB ? g.n : g.k, g.transB ? g.k : g.n, g.ldb, g.strideB,
           "B");
    layout(call->layoutC, g.typeC, g.m, g.n, g.ldc, g.strideC, "C and D");

    // One algorithm, chosen now: the heuristic's first under the workspace
    // limit, for the operands' real alignment (cuBLASLt assumes 256 bytes
    // otherwise), and without split-K when deterministic.
    cublasLtMatmulPreference_t preference = nullptr;
    if (st)
      st = lt.check(lt.cublasLtMatmulPreferenceCreate(&preference),
                    what + ": creating the matmul preference");
    uint64_t workspace = g.workspaceBytes;
    if (st)
      st = lt.check(setPreference(lt, preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                  workspace),
                    what + ": setting CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES");
    // The alignment each operand really has (A, B, C, D), so algorithms
    // that need more are not chosen.
    const void *operands[4] = {call->a, call->b, call->c, call->d};
    const struct {
      cublasLtMatmulPreferenceAttributes_t attribute;
      const char *name;
    } alignmentPreferences[4] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES"},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES"}};
    for (int k = 0; k < 4; ++k) {
      call->alignment[k] = pointerAlignment(operands[k]);
      if (st)
        st = lt.check(setPreference(lt, preference, alignmentPreferences[k].attribute,
                                    call->alignment[k]),
                      what + ": setting " + alignmentPreferences[k].name);
    }
    if (st && g.deterministic) {
      uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
      st = lt.check(setPreference(lt, preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, mask),
                    what + ": setting CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK");
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t heuristic = CUBLAS_STATUS_SUCCESS;
    if (st)
      heuristic = lt.cublasLtMatmulAlgoGetHeuristic(handle, call->desc, call->layoutA,
                                                    call->layoutB, call->layoutC, call->layoutC,
                                                    preference, 1, &result, &found);
    if (preference)
      lt.cublasLtMatmulPreferenceDestroy(preference);
    // NOT_SUPPORTED, or success with no result: nothing fits these limits.
    if (st && (heuristic == CUBLAS_STATUS_NOT_SUPPORTED ||
               (heuristic == CUBLAS_STATUS_SUCCESS && found == 0)))
      st = Status::error(
          what + ": cuBLASLt has no algorithm for this matmul within a " +
          std::to_string(g.workspaceBytes) + "-byte workspace with operands aligned to " +
          std::to_string(call->alignment[0]) + " (A), " + std::to_string(call->alignment[1]) +
          " (B), " + std::to_string(call->alignment[2]) + " (C) and " +
          std::to_string(call->alignment[3]) + " (D) bytes" +
          (g.deterministic ? " and no split-K reduction" : "") +
          " (cublasLtMatmulAlgoGetHeuristic: " + lt.describe(heuristic) +
          "); recompile with a larger --workspace-limit or --impl=generated");
    if (st)
      st = lt.check(heuristic, what + ": cublasLtMatmulAlgoGetHeuristic");
    // Each result carries its own status; the other fields hold only then.
    if (st)
      st = lt.check(result.state, what + ": the algorithm cublasLtMatmulAlgoGetHeuristic chose");
    if (!st)
      return st;
    call->algo = result.algo;
    size_t written = 0;
    lt.cublasLtMatmulAlgoConfigGetAttribute(&call->algo, CUBLASLT_ALGO_CONFIG_ID, &call->algoId,
                                            sizeof(call->algoId), &written);
    call->alpha = g.alpha;
    call->beta = g.beta;
    call->workspace = g.workspaceBytes ? arena + g.workspaceOffset : nullptr;
    call->workspaceBytes = g.workspaceBytes;
    calls->calls_[index] = std::move(call);
  }
  return calls;
}

CublasLtCalls::~CublasLtCalls() {
  calls_.clear(); // before the API goes
  if (api_ && handle_)
    api_->cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

bool CublasLtCalls::has(size_t step) const { return step < calls_.size() && calls_[step]; }

std::string CublasLtCalls::describe(size_t step) const {
  if (!has(step))
    return "";
  const Call &call = *calls_[step];
  return "cuBLASLt algorithm " + std::to_string(call.algoId) + ", workspace " +
         std::to_string(call.workspaceBytes) + " bytes, operands aligned to " +
         std::to_string(call.alignment[0]) + "/" + std::to_string(call.alignment[1]) + "/" +
         std::to_string(call.alignment[2]) + "/" + std::to_string(call.alignment[3]) +
         " bytes (A/B/C/D)";
}

Status CublasLtCalls::run(size_t index, void *stream) const {
  if (!has(index))
    return Status::error("step #" + std::to_string(index) + " has no cuBLASLt matmul");
  const Call &call = *calls_[index];
  const Api &lt = *api_;
  return lt.check(lt.cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), call.desc, &call.alpha,
                                    call.a, call.layoutA, call.b, call.layoutB, &call.beta, call.c,
                                    call.layoutC, call.d, call.layoutC, &call.algo, call.workspace,
                                    call.workspaceBytes, static_cast<cudaStream_t>(stream)),
                  call.what + ": cublasLtMatmul");
}

#else // no CUDA headers at build time

struct CublasLtCalls::Api {};
struct CublasLtCalls::Call {};

Result<std::unique_ptr<CublasLtCalls>> CublasLtCalls::create(const Program &, const Address &,
                                                             uint8_t *) {
  return Status::error("no CUDA support in this build");
}
CublasLtCalls::~CublasLtCalls() = default;
bool CublasLtCalls::has(size_t) const { return false; }
std::string CublasLtCalls::describe(size_t) const { return ""; }
Status CublasLtCalls::run(size_t, void *) const {
  return Status::error("no CUDA support in this build");
}

#endif

} // namespace rt
} // namespace kiln
