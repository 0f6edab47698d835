// RUN: kiln-opt %s -split-input-file -kiln-optimizer="optimizer=sgd lr=0.5" | FileCheck %s --check-prefix=SGD
// RUN: kiln-opt %s -split-input-file -kiln-optimizer="optimizer=adam lr=0.001" | FileCheck %s --check-prefix=ADAM
// RUN: kiln-opt %s -split-input-file -kiln-optimizer="optimizer=momentum lr=0.1 weight-decay=0.25" | FileCheck %s --check-prefix=MOMENTUM
// RUN: not kiln-opt %s -split-input-file -kiln-optimizer="optimizer=lbfgs" 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// kiln-optimizer on what kiln-grad returns (the loss, then grad.W): the
// weight becomes a state input named W (its initial value the weight's,
// its next value the output `kiln.state_output` names), updated by the
// optimizer; the gradient outputs go.

!w = tensor<4xf32, #kiln.enc<row_major, cpu>>
!s = tensor<f32, #kiln.enc<row_major, cpu>>

// SGD-LABEL: func.func @step
// SGD-SAME: %[[W:arg[0-9]+]]: tensor<4xf32, #kiln.enc<row_major, cpu>> {kiln.name = "w", kiln.state = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>, kiln.state_output = 1 : i64}
// SGD-SAME: -> (tensor<f32, #kiln.enc<row_major, cpu>> {kiln.name = "loss"}, tensor<4xf32, #kiln.enc<row_major, cpu>> {kiln.name = "w"})
// SGD-NOT: kiln.weight
// SGD: %[[LR:.*]] = kiln.constant dense<5.000000e-01>
// SGD: %[[STEP:.*]] = kiln.mul %{{.*}}, %[[LR]]
// SGD: %[[NEXT:.*]] = kiln.sub %[[W]], %[[STEP]]
// SGD: return %{{.*}}, %[[NEXT]]
// Adam: the moments and the step count are states too, starting at zero.
// ADAM-LABEL: func.func @step
// ADAM-SAME: {kiln.name = "w", kiln.state = {{.*}}, kiln.state_output = 2 : i64}
// ADAM-SAME: {kiln.name = "adam.step", kiln.state = dense<0.000000e+00> : tensor<f32>, kiln.state_output = 1 : i64}
// ADAM-SAME: {kiln.name = "w.m", kiln.state = dense<0.000000e+00> : tensor<4xf32>, kiln.state_output = 3 : i64}
// ADAM-SAME: {kiln.name = "w.v", kiln.state = dense<0.000000e+00> : tensor<4xf32>, kiln.state_output = 4 : i64}
// ADAM-SAME: -> ({{.*}} {kiln.name = "loss"}, {{.*}} {kiln.name = "adam.step"}, {{.*}} {kiln.name = "w"}, {{.*}} {kiln.name = "w.m"}, {{.*}} {kiln.name = "w.v"})
// ADAM: kiln.pow
// ADAM: kiln.sqrt
// Momentum with weight decay: g + 0.25 W into the velocity, a state too.
// MOMENTUM-LABEL: func.func @step
// MOMENTUM-SAME: %[[W:arg[0-9]+]]: tensor<4xf32, #kiln.enc<row_major, cpu>> {kiln.name = "w", {{.*}}kiln.state_output = 1 : i64}
// MOMENTUM-SAME: %[[V:arg[0-9]+]]: tensor<4xf32, #kiln.enc<row_major, cpu>> {kiln.name = "w.velocity", kiln.state = dense<0.000000e+00> : tensor<4xf32>, kiln.state_output = 2 : i64}
// MOMENTUM: %[[DECAY:.*]] = kiln.constant dense<2.500000e-01>
// MOMENTUM: %[[WD:.*]] = kiln.mul %[[W]], %[[DECAY]]
// MOMENTUM: %[[G:.*]] = kiln.add %{{.*}}, %[[WD]]
// MOMENTUM: %[[MU:.*]] = kiln.constant dense<0.899999976>
// MOMENTUM: %[[KEPT:.*]] = kiln.mul %[[V]], %[[MU]]
// MOMENTUM: %[[NEXTV:.*]] = kiln.add %[[KEPT]], %[[G]]
// MOMENTUM: return %{{.*}}, %{{.*}}, %[[NEXTV]]
// UNKNOWN: error: kiln-optimizer: unknown optimizer 'lbfgs' (sgd, momentum or adam)
func.func @step(%x: !w {kiln.name = "x"}) -> (!s {kiln.name = "loss"}, !w {kiln.name = "grad.w"}) {
  %w = kiln.weight "w" = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> : !w
  %y = kiln.mul %x, %w : (!w, !w) -> !w
  %loss = kiln.reduce_sum %y {axes = array<i64: 0>} : (!w) -> !s
  return %loss, %x : !s, !w
}

