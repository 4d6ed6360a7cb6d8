"""Second-moment structure in shared representations: matched specialization, different adaptation.

Two formation routes reach matched readouts of a shared encoder; Adam-state surgery (the
library's state toolkit, :mod:`gaugedyn.adam`) then locates why they respond differently to the
same opposing updates (``shared_representation``). The model (``_model``), the formation stages
and candidate family (``_stages``), the pulse protocol (``_protocol``) and the findings
(``_findings``) are this study's own. The set-up, with every inferred choice marked, is
``derivations/shared_representation.md``.
"""
