"""``show_error``: run a function and show what went wrong compactly: the exception's type and message, and,
when autograd refuses to go backward through a tensor changed in place (or a second time), the backward graph
with the stale or freed saved tensor marked."""

from __future__ import annotations

import torch

from ..common.checks import describe
from ..common.text import strip_hint
from ..facts.graph import FREED_ERROR_SECOND_BACKWARD, VERSION_ERROR, autograd_graph, grad_fn_of, inplace_hazards
from ..pictures.graph_picture import draw_graph


class ErrorReport:
    """What ``show_error`` saw: the exception's type and message, and a picture when one helps.

    Attributes:
        raised: whether the function raised.
        exception_type: the exception's class name (``"RuntimeError"``), or None.
        message: the exception's message without autograd's anomaly-detection hint, or None.
        exception: the exception object itself, or None.
        result: what the function returned when it did not raise.
        hazards: ``Hazard`` list of the graph drawn (empty without a graph).
        figure: the graph picture (a matplotlib Figure) or None.
        summary: one line of deterministic text saying all of the above.
    """

    def __init__(self, raised, exception, message, result, hazards, figure, summary):
        self.raised = raised
        self.exception = exception
        self.exception_type = type(exception).__name__ if exception is not None else None
        self.message = message
        self.result = result
        self.hazards = hazards
        self.figure = figure
        self.summary = summary

    def __repr__(self) -> str:
        return self.summary

    def _repr_html_(self) -> str:
        import html

        if not self.raised:
            return f"<div style='font-family:monospace'>✓ {html.escape(self.summary)}</div>"
        why = "".join(f"<li>{html.escape(h.explanation)}</li>" for h in self.hazards)
        why = f"<ul style='margin:4px 0'>{why}</ul>" if why else ""
        picture = "<div style='color:#555'>The graph is drawn below.</div>" if self.figure is not None else ""
        return (
            "<div style='border-left:4px solid #d62728;padding:4px 8px;font-family:monospace;white-space:pre-wrap'>"
            f"<b>{html.escape(self.exception_type)}</b>: {html.escape(self.message)}{why}{picture}</div>"
        )

    def _ipython_display_(self) -> None:
        # The message as HTML, then the figure as its own output: nbval compares the text and skips
        # the PNG, so a stored notebook does not depend on pixels.
        from IPython.display import display

        display({"text/html": self._repr_html_(), "text/plain": self.summary}, raw=True)
        if self.figure is not None:
            display(self.figure)


def _tensor_for_graph(fn, args, graph_of):
    if graph_of is not None:
        if not isinstance(graph_of, torch.Tensor):
            raise TypeError(f"graph_of must be a torch.Tensor or None, got {describe(graph_of)}")
        return graph_of
    owner = getattr(fn, "__self__", None)  # show_error(out.backward)
    if isinstance(owner, torch.Tensor):
        return owner
    for arg in args:  # show_error(torch.autograd.backward, out)
        if isinstance(arg, torch.Tensor) and grad_fn_of(arg)[0] is not None:
            return arg
    return None


def show_error(fn, *args, graph_of=None, names=None, **kwargs) -> ErrorReport:
    """Run ``fn(*args, **kwargs)`` and show what went wrong compactly: type, message, and a picture.

    For autograd's in-place error ("… is at version 1; expected version 0 instead") the picture is the
    backward graph with the stale saved tensor marked ``⚠``; for "backward through the graph a second
    time" it is the graph with its freed saved tensors. No traceback is printed.

    Args:
        fn: a callable, e.g. ``out.backward`` or ``lambda: out.sum().backward()``.
        *args: passed to ``fn``.
        graph_of: the tensor whose graph to draw. Defaults to ``fn``'s tensor (``out.backward``) or the
            first positional argument that has a ``grad_fn``.
        names: dict from name to tensor labelling the leaves in the picture.
        **kwargs: passed to ``fn``.

    Returns:
        An ``ErrorReport`` (``.exception_type``, ``.message``, ``.figure``, ``.summary``), which displays
        itself in Jupyter.

    Raises:
        TypeError: ``fn`` is not callable, or ``graph_of``/``names`` has the wrong type.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (e.g. out.backward or a lambda), got {describe(fn)}")
    if names is not None and not isinstance(names, dict):
        raise TypeError(f"names must be a dict from name to tensor or None, got {describe(names)}")
    target = _tensor_for_graph(fn, args, graph_of)
    # The graph as it was before fn ran: a failing backward() frees the saved tensors of the nodes it
    # already went through, so a snapshot afterwards would show them freed.
    refused = None
    try:
        before = autograd_graph(target, names=names) if target is not None else None
        before_hazards = inplace_hazards(target) if target is not None else []
    except RuntimeError as error:  # autograd refuses to build target's grad_fn: report fn's outcome anyway
        refused = str(error).split(". ")[0]
        target, before, before_hazards = None, None, []
    try:
        result = fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - showing any exception is the point
        message = strip_hint(error)
        name = type(error).__name__
        graph, hazards = None, []
        version_error = VERSION_ERROR.search(message) is not None
        if target is not None and (version_error or FREED_ERROR_SECOND_BACKWARD in message):
            if version_error and before_hazards:
                graph, hazards = before, before_hazards
            else:  # fn itself changed the graph (an in-place op, then backward): show it as it is now
                graph, hazards = autograd_graph(target, names=names), inplace_hazards(target)
        figure = draw_graph(graph) if graph is not None else None
        summary = f"{name}: {message}"
        if hazards:
            summary += " Why: " + " ".join(h.explanation for h in hazards)
        if figure is not None:
            summary += " Picture: " + figure.summary
        elif refused is not None:
            summary += f" (no picture: the graph of graph_of cannot be read: {refused})"
        elif target is None and version_error:
            summary += " (pass graph_of=<the tensor you called backward on> to see its graph)"
        return ErrorReport(True, error, message, None, hazards, figure, summary)
    summary = f"No error: {getattr(fn, '__name__', 'fn')} ran without raising and returned {_returned(result)}."
    return ErrorReport(False, None, None, result, [], None, summary)


def _returned(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"
