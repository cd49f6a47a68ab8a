"""IPython cell magics: ``%%watch_inplace`` and ``%%measure_memory`` (load with ``%load_ext tutorial_lib``).

``%%watch_inplace`` runs the cell under ``watch_inplace``. When ``backward()`` raises autograd's
"modified by an inplace operation" error, the cell shows torch's message and the explanation (the line
that saved the tensor, every line that changed it) instead of a long traceback. Any other error is shown
as IPython always shows it (without the watcher's own frames), and a cell that runs without error shows
nothing extra.

``%%measure_memory`` runs the cell under ``measure_memory`` and shows what it left allocated, its peak,
and the memory timeline picture, as ``%%timeit`` does for time. ``%%measure_memory cuda`` measures a GPU.

Both run the cell with IPython's own ``run_cell`` (as ``%%capture`` does), so the cell's last expression
is displayed as usual and its variables land in the notebook.
"""

from __future__ import annotations

import shlex

from IPython.core.magic import Magics, cell_magic, magics_class

from ..common.text import plural
from ..facts.inplace_watch import watch_inplace, without_library_frames
from ..facts.memory import OUTSIDE_ANY_OP, format_bytes, measure_memory


@magics_class
class TutorialMagics(Magics):
    """The cell magics of ``tutorial_lib``."""

    @cell_magic
    def watch_inplace(self, line: str, cell: str):
        """Run the cell under ``tl.watch_inplace()``; explain backward's in-place error if it occurs.

        Usage: ``%%watch_inplace`` (optionally ``%%watch_inplace --max-records N``, N >= 1).
        """
        max_records = _parse_max_records(line)
        shell = self.shell

        def explain(shell_, kind, value, traceback, tb_offset=None):
            explanation = getattr(value, "inplace_explanation", None)
            if explanation is None:  # not the version error: IPython's usual traceback
                value.__traceback__ = traceback
                without_library_frames(value)
                shell_.showtraceback((kind, value, value.__traceback__), tb_offset=tb_offset)
                return None
            _display_explanation(explanation)
            return None

        previous = (shell.custom_exceptions, shell.CustomTB)
        shell.set_custom_exc((RuntimeError,), explain)
        try:
            with watch_inplace(**({"max_records": max_records} if max_records is not None else {})):
                shell.run_cell(cell, store_history=False)
        finally:
            shell.custom_exceptions, shell.CustomTB = previous
        return None

    @cell_magic
    def measure_memory(self, line: str, cell: str):
        """Run the cell under ``tl.measure_memory()``; show allocated, peak and the memory timeline.

        Usage: ``%%measure_memory`` (the default device), ``%%measure_memory cpu`` or ``%%measure_memory
        cuda``; add ``--no-plot`` to show the numbers only.
        """
        words = shlex.split(line)
        plot = "--no-plot" not in words
        words = [w for w in words if w != "--no-plot"]
        if len(words) > 1:
            raise ValueError(f"%%measure_memory takes at most one device ('cpu', 'cuda', 'cuda:0'), got {line!r}")
        device = words[0] if words else None
        with measure_memory(device) as report:
            self.shell.run_cell(cell, store_history=False)
        _display_memory(report, plot)
        self.last_memory_report = report
        return None


def _parse_max_records(line: str):
    words = shlex.split(line)
    if not words:
        return None
    if len(words) == 2 and words[0] == "--max-records" and words[1].isdigit():
        return int(words[1])
    raise ValueError(f"%%watch_inplace takes no arguments or --max-records N, got {line!r}")


def _display_explanation(explanation) -> None:
    from IPython.display import display

    text = f"RuntimeError: {explanation.message}\n\n{explanation}" if explanation.message else str(explanation)
    display({"text/plain": text, "text/html": explanation._repr_html_()}, raw=True)


def _display_memory(report, plot: bool) -> None:
    from IPython.display import display

    operations = sum(name != OUTSIDE_ANY_OP for name, _ in report.timeline)
    text = (
        f"memory ({report.device}): allocated {format_bytes(report.allocated)}, "
        f"peak {format_bytes(report.peak)}, {plural(operations, 'op')}"
    )
    unseen = list(getattr(report, "unseen", ()))
    if unseen:
        text += "\nunseen: " + "; ".join(unseen)
    display({"text/plain": text}, raw=True)
    if plot and report.timeline:
        import matplotlib.pyplot as plt

        from ..pictures.timeline import draw_memory_timeline

        figure = draw_memory_timeline(report, labels=["cell"])
        display(figure)
        display({"text/plain": figure.summary}, raw=True)
        plt.close(figure)


def load_ipython_extension(ipython) -> None:
    """``%load_ext tutorial_lib`` registers ``%%watch_inplace`` and ``%%measure_memory``."""
    ipython.register_magics(TutorialMagics)


def unload_ipython_extension(ipython) -> None:
    """Nothing to undo: the magics stay registered until the kernel restarts (IPython has no unregister)."""
