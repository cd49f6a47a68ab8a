"""tutorial_lib: checked facts, pictures and explorers for a course on how PyTorch tensors live in memory.

Notebooks import only from here. The model layer (this file's imports) is pure data and is tested
against torch itself; importing it does not import matplotlib or ipywidgets and changes no global state.
"""

from .exercises import Feedback, check, exercise_ids
from .explorers.graph_stepper import GraphStepper
from .explorers.layout_explorers import stride_explorer, view_copy_explorer
from .facts.graph import Graph, GraphNode, Hazard, SavedTensor, autograd_graph, inplace_hazards
from .facts.inplace_watch import (
    InplaceExplanation,
    InplaceWatch,
    InplaceWrite,
    SourceLine,
    explain_inplace,
    explanation_of,
    watch_inplace,
)
from .facts.memory import MemoryReport, format_bytes, measure_memory
from .facts.names import names_snapshot
from .facts.ops import OpRecord, OpReport, OpRow, trace_ops, view_or_copy
from .facts.places import SavedFile, StoragePlace, saved_file, storage_places
from .facts.sharing import Sharing, sharing_of
from .facts.storage import Layout, layout, same_storage, shares_memory
from .pictures.allocator_picture import draw_allocator_snapshot
from .pictures.graph_picture import draw_graph, graph_svg
from .pictures.graph_placement import graph_layout
from .pictures.layout_picture import draw_layout, layout_summary
from .pictures.names_picture import draw_names
from .pictures.places_picture import draw_places
from .pictures.sharing_picture import draw_sharing
from .pictures.tables import OpTable, op_table
from .pictures.timeline import draw_cuda_memory, draw_memory_timeline
from .tools.errors import ErrorReport, show_error

__version__ = "0.1.0"

__all__ = [
    "ErrorReport",
    "Feedback",
    "GraphStepper",
    "check",
    "exercise_ids",
    "Graph",
    "GraphNode",
    "Hazard",
    "InplaceExplanation",
    "InplaceWatch",
    "InplaceWrite",
    "Layout",
    "MemoryReport",
    "OpRecord",
    "OpReport",
    "OpRow",
    "SavedTensor",
    "SourceLine",
    "OpTable",
    "autograd_graph",
    "draw_allocator_snapshot",
    "draw_cuda_memory",
    "draw_graph",
    "graph_svg",
    "draw_layout",
    "draw_memory_timeline",
    "draw_names",
    "explain_inplace",
    "explanation_of",
    "format_bytes",
    "graph_layout",
    "inplace_hazards",
    "layout",
    "layout_summary",
    "measure_memory",
    "names_snapshot",
    "op_table",
    "same_storage",
    "shares_memory",
    "show_error",
    "stride_explorer",
    "trace_ops",
    "view_copy_explorer",
    "view_or_copy",
    "watch_inplace",
    "Sharing",
    "draw_sharing",
    "sharing_of",
    "SavedFile",
    "StoragePlace",
    "draw_places",
    "saved_file",
    "storage_places",
]


def load_ipython_extension(ipython) -> None:
    """``%load_ext tutorial_lib``: the cell magics ``%%watch_inplace`` and ``%%measure_memory``."""
    from .tools.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .tools.magics import unload_ipython_extension as unload

    unload(ipython)
