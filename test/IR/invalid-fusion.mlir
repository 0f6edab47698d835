// RUN: kiln-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!g = tensor<4x8xf32, #kiln.enc<row_major, cuda:0>>

// A region never crosses a device boundary.
func.func @transfer_inside(%x: !t) -> !g {
  %r = kiln.fusion loop (%x) : (!t) -> !g {
  ^bb0(%a: !t):
    // expected-error @+1 {{'kiln.transfer' op moves data between devices; a fusion region cannot cross a device boundary}}
    %0 = kiln.transfer %a {to = "cuda:0"} : (!t) -> !g
    kiln.yield %0 : !g
  }
  return %r : !g
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
func.func @wrong_arguments(%x: !t) -> !t {
  // expected-error @+1 {{'kiln.fusion' op has 1 inputs but its body takes 2 arguments}}
  %r = kiln.fusion loop (%x) : (!t) -> !t {
  ^bb0(%a: !t, %b: !t):
    kiln.yield %a : !t
  }
  return %r : !t
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
!u = tensor<8x4xf32, #kiln.enc<row_major, cpu>>
func.func @wrong_yield(%x: !t) -> !u {
  // expected-error @+1 {{'kiln.fusion' op yields types that differ from its result types}}
  %r = kiln.fusion loop (%x) : (!t) -> !u {
  ^bb0(%a: !t):
    kiln.yield %a : !t
  }
  return %r : !u
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
func.func @nested(%x: !t) -> !t {
  %r = kiln.fusion loop (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    // expected-error @+1 {{'kiln.fusion' op cannot be inside a kiln.fusion region}}
    %0 = kiln.fusion loop (%a) : (!t) -> !t {
    ^bb0(%b: !t):
      kiln.yield %b : !t
    }
    kiln.yield %0 : !t
  }
  return %r : !t
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
func.func @captures(%x: !t) -> !t {
  %n = kiln.neg %x : (!t) -> !t
  // expected-note @+1 {{required by region isolation constraints}}
  %r = kiln.fusion loop (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    // expected-error @+1 {{using value defined outside the region}}
    %0 = kiln.add %a, %n : (!t, !t) -> !t
    kiln.yield %0 : !t
  }
  return %r : !t
}

// -----

!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
func.func @unknown_kind(%x: !t) -> !t {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [loop, reduction, matmul_epilogue, conv_epilogue, horizontal, attention]}}
  %r = kiln.fusion vertical (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    kiln.yield %a : !t
  }
  return %r : !t
}

// -----

// Found by KilnOptFuzzer: an empty body used to be asked for its terminator
// (a read past the block's operation list).
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
func.func @empty_body(%x: !t) -> !t {
  // expected-error @+1 {{'kiln.fusion' op body must end with kiln.yield}}
  %r = kiln.fusion loop (%x) : (!t) -> !t {
  ^bb0(%a: !t):
  }
  return %r : !t
}

// -----

// An operation of an unknown dialect has no dialect to ask about.
!t = tensor<4x8xf32, #kiln.enc<row_major, cpu>>
func.func @unregistered_inside(%x: !t) -> !t {
  %r = kiln.fusion loop (%x) : (!t) -> !t {
  ^bb0(%a: !t):
    // expected-error @+1 {{'mystery.op' op cannot be inside a kiln.fusion region}}
    %0 = "mystery.op"(%a) : (!t) -> !t
    kiln.yield %0 : !t
  }
  return %r : !t
}

// -----

!t = tensor<4xf32, #kiln.enc<row_major, cpu>>
func.func @empty_step(%x: !t) -> !t {
  // expected-error @+1 {{'exec.step' op body must end with exec.yield}}
  %r = exec.step(%x) : (!t) -> !t {
  ^bb0(%a: !t):
  }
  return %r : !t
}
