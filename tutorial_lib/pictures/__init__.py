"""Pictures of the facts: layouts, the backward graph, the memory timeline and op tables.

matplotlib is imported inside the drawing functions only; never imports ipywidgets."""
