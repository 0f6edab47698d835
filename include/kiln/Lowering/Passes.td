//===- Passes.td - graph to execution plan -----------------*- tablegen -*-===//

#ifndef KILN_LOWERING_PASSES_TD
#define KILN_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFormSteps : Pass<"kiln-form-steps", "func::FuncOp"> {
  let summary = "Wrap each graph op in an exec.step (graph to execution plan)";
  let description = [{
    Every `kiln.fusion` region becomes one `exec.step` that takes over its
    body (with `kind` naming the region's kind); every other kiln op except
    constants and weights becomes one step whose region holds it. Constants
    and weights stay outside: they are the executable's weight section and
    are step inputs like model inputs. Constants that fusion cloned into a
    region move back out for the same reason.
  }];
  let dependentDialects = ["::mlir::kiln::exec::ExecDialect"];
}

def KilnAssignStreams : Pass<"kiln-assign-streams", "func::FuncOp"> {
  let summary = "Put independent branches on different streams, with events";
  let description = [{
    Walks the steps in program order. A step continues the stream of a
    producer that is that stream's latest step; otherwise it opens a new
    stream while fewer than `max-streams` exist, else joins its first
    producer's stream (or stream 0). A step waits for the event of each
    producer on another stream unless an earlier wait already covers it
    (tracked with vector clocks), and a producer that is waited for signals
    an event. `max-streams=1` gives a serial plan, which lets buffer
    assignment reuse the most memory.
  }];
  let options = [
    Option<"maxStreams", "max-streams", "int64_t", /*default=*/"4",
           "Most streams to use (1 = serial)">,
  ];
}

def KilnAssignBuffers : Pass<"kiln-assign-buffers", "func::FuncOp"> {
  let summary = "Place step results in one arena, reusing dead buffers";
  let description = [{
    Gives every step result an offset in the function's arena. A buffer can
    be reused by a step only once its producer and all its readers are
    ordered before that step (same stream, or through events): buffers of
    concurrent branches never alias. Function results are live to the end.
    Sets `exec.arena_bytes` (the peak) and `exec.unshared_bytes` (the sum of
    all buffers, what no reuse would need) on the function.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of every buffer, in bytes">,
  ];
}

#endif // KILN_LOWERING_PASSES_TD
