"""Scoring: from a replay and its measured pairs to the five scores, under either protocol.

- :mod:`~iwr_bench.scoring.formulas`: the formulas (IFS, LVS, HVS, VFS, Final) of one page
  (:class:`~iwr_bench.scoring.formulas.TaskScore`) and their means over pages
  (:class:`~iwr_bench.scoring.formulas.Summary`).
- :mod:`~iwr_bench.scoring.official`: the official scripts' rules (which states are paired, how
  many pairs count, HVS counted as 0 without a rubric judge) and their aggregation.
- :mod:`~iwr_bench.scoring.evaluation`: the pipeline of one page (pair selection, the metric and
  rubric stages, assembly) and its record, ``eval.json``
  (:class:`~iwr_bench.scoring.evaluation.Evaluation`).

It sits below ``engine/`` and ``report/``, which read scores from here only.
"""
