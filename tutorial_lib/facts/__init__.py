"""Plain data computed from torch: storage, ops, memory, the autograd graph and in-place watching.

Never imports matplotlib, ipywidgets or IPython (`make lint` checks it with import-linter)."""
