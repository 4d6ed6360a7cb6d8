"""Parameter symmetries and conservation laws under gradient flow: how many independent laws a
network's flow has, which symmetries give them, and whether the gauge recorder tracks them all.

The count is ``D - dim Lie(W)(theta)`` at generic points (`gaugedyn.gauge.conservation_laws()`,
after Marcotte, Gribonval and Peyré); a linear symmetry whose transpose is also one gives the law
``theta^T A_s theta`` of its symmetric part, its antisymmetric part none. The claims: the counts
of two-layer ReLU and linear, square deep linear, polynomial, multi-head and grouped-query
attention networks equal the derived ones; symmetries and laws correspond as that principle says
(and beyond identifiability the extra null directions give none); the recorder's invariants are
all the laws of the documented models, or the missing ones are named; every recorded invariant
drifts at second order in the step size under gradient descent. The protocol is ``PROTOCOL.md``.
"""
