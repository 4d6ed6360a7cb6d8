"""Second-moment structure in shared representations: matched specialization, different adaptation.

Two formation routes reach matched readouts of a shared encoder; Adam-state surgery (the
library's state toolkit, `gaugedyn.adam`) then locates why they respond differently to the
same opposing updates (``shared_representation``). The protocol is ``PROTOCOL.md`` in this
folder (its fixed numbers: ``_protocol``); the model (``_model``), the formation stages and
candidate family (``_stages``), the routes, pulses and interventions (``_pulses``), the stored
calibration (``_calibration``), the findings (``_analysis``) and the figures (``_figures``) are
this study's own. The set-up, with every inferred choice marked, is
``derivations/shared_representation.md``.
"""
