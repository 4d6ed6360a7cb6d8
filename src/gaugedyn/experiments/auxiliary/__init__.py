"""Auxiliary learning in the teacher-student model (seed 004): a student trained online on a main
and an auxiliary task. The system judges the abstract's statements (the online-SGD ODE, the
linear closed form and the benefit's sign change, the fluctuation-dissipation relation, forcing
against gradient noise) with the engine of `gaugedyn.training` (``AuxiliaryProblem``,
``auxiliary_ode``, ``train_auxiliary``). The model and its derivations are
``derivations/auxiliary.md``; the protocol is ``PROTOCOL.md`` beside this module.
"""
