//===- GraphDot.h - the graph as a Graphviz picture -------------*- C++ -*-===//

#ifndef KILN_IR_GRAPHDOT_H
#define KILN_IR_GRAPHDOT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
namespace kiln {

/// Writes a model function as a Graphviz DOT graph: model inputs and outputs
/// as ellipses, each graph op as a box with its result type and model-file
/// line, each `kiln.fusion` region as a cluster (coloured by kind) around
/// the ops it holds. Weights and constants are left out: they would bury
/// the structure.
void writeGraphDot(func::FuncOp func, llvm::raw_ostream &os);

} // namespace kiln
} // namespace mlir

#endif // KILN_IR_GRAPHDOT_H
