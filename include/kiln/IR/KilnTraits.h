//===- KilnTraits.h - families of kiln ops ----------------------*- C++ -*-===//
//
// The op traits KilnTraits.td declares: markers, queried with
// op->hasTrait<OpTrait::kiln::ElementwiseFamily>() and the like through
// kiln/IR/OpClasses.h.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNTRAITS_H
#define KILN_IR_KILNTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace mlir {
namespace OpTrait {
namespace kiln {

template <typename ConcreteType>
class ElementwiseFamily : public TraitBase<ConcreteType, ElementwiseFamily> {};

template <typename ConcreteType>
class DataMovementFamily : public TraitBase<ConcreteType, DataMovementFamily> {};

template <typename ConcreteType>
class WindowFamily : public TraitBase<ConcreteType, WindowFamily> {};

template <typename ConcreteType>
class RowReductionFamily : public TraitBase<ConcreteType, RowReductionFamily> {};

} // namespace kiln
} // namespace OpTrait
} // namespace mlir

#endif // KILN_IR_KILNTRAITS_H
