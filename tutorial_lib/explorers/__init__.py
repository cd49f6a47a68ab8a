"""Interactive explorers: ipywidgets wired to the pictures."""
