//===- ExecOps.td - the execution-plan dialect -------------*- tablegen -*-===//
//
// The level between the graph and the executable: a model function whose
// work is a sequence of steps. A step is one kernel or library call (or a
// device copy); its region holds the graph ops it computes, so fusion can
// later put several ops into one step. Passes annotate steps with their
// stream, the events they signal and wait for, and the arena offsets of
// their results.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_EXEC_EXECOPS_TD
#define KILN_EXEC_EXECOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::mlir::kiln::exec";
  let summary = "kiln execution plans: steps, streams, events and buffers";
  let usePropertiesForAttributes = 0;
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_StepOp : Exec_Op<"step", [IsolatedFromAbove]> {
  let summary = "One unit of scheduled work on a stream";
  let description = [{
    Computes its region on its inputs. The region's block arguments are the
    inputs; `exec.yield` returns the results.

    Attributes set by the plan passes:
    - `stream`: the stream that runs the step (steps of one stream run in
      program order);
    - `waits`: events that must have been signalled before the step starts;
    - `event`: the event the step signals when it completes (only on steps
      that another stream waits for);
    - `offsets`: the arena offset of each result's buffer.

    `kind` is set on a step made from a `kiln.fusion` region and names the
    region's kind (`loop`, `attention`, ...); a step of one unfused op has
    none.

    ```mlir
    %2 = exec.step(%0, %w) {stream = 1 : i64, waits = array<i64: 0>,
                            offsets = array<i64: 4096>}
        : (tensor<8x4xf32, #kiln.enc<row_major, cpu>>, ...) -> ... {
    ^bb0(%a: ..., %b: ...):
      %r = kiln.matmul %a, %b : ...
      exec.yield %r : ...
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       OptionalAttr<I64Attr>:$stream,
                       OptionalAttr<I64Attr>:$event,
                       OptionalAttr<DenseI64ArrayAttr>:$waits,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets,
                       OptionalAttr<StrAttr>:$kind);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def Exec_YieldOp : Exec_Op<"yield", [Terminator, HasParent<"StepOp">, ReturnLike]> {
  let summary = "Returns a step's results";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // KILN_EXEC_EXECOPS_TD
