"""Run the learner's code and report: ``show_error``, the ``%%`` magics and ``python -m tutorial_lib.explain``."""
