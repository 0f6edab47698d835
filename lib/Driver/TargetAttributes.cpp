//===- TargetAttributes.cpp - the target facts on the module --------------===//

#include "kiln/Driver/TargetAttributes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace kiln {
namespace driver {

void setTargetAttributes(ModuleOp module, const CompileOptions &options) {
  for (llvm::StringRef name : {kTargetAttr, kArchAttr, kPrecisionAttr, kImplAttr,
                               kDeterministicAttr, kWorkspaceLimitAttr, kTuningCacheAttr,
                               kAutotuneAttr, kEmuSanitizeAttr})
    module->removeAttr(name);
  Builder b(module.getContext());
  module->setAttr(kTargetAttr, b.getStringAttr(stringifyTarget(options.target)));
  if (options.target == Target::CPU)
    return;
  module->setAttr(kArchAttr, b.getStrArrayAttr(llvm::SmallVector<llvm::StringRef>(
                                 options.archs.begin(), options.archs.end())));
  module->setAttr(kPrecisionAttr, b.getStringAttr(stringifyPrecision(options.precision)));
  module->setAttr(kImplAttr, b.getStringAttr(stringifyImplementation(options.implementation)));
  if (options.deterministic)
    module->setAttr(kDeterministicAttr, b.getUnitAttr());
  if (options.workspaceLimit >= 0)
    module->setAttr(kWorkspaceLimitAttr, b.getI64IntegerAttr(options.workspaceLimit));
  if (!options.tuningCache.empty())
    module->setAttr(kTuningCacheAttr, b.getStringAttr(options.tuningCache));
  if (options.autotune)
    module->setAttr(kAutotuneAttr, b.getUnitAttr());
  if (!options.emuSanitize.empty())
    module->setAttr(kEmuSanitizeAttr, b.getStringAttr(options.emuSanitize));
}

} // namespace driver
} // namespace kiln
