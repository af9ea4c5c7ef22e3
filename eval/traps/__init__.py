"""Trap generator and per-class scoring of staleness detection on changes no one planned (issue 45):
`eval.traps.taxonomy` (the classes of change), `eval.traps.generator` (applies them to a copy of a
lake through the public write paths and records the truth), `eval.traps.score` (per-class
precision, recall, fix accuracy, control false alarms). `python -m eval.traps generate|score`."""
