"""Helpers with no torch facts and no drawing: argument checks and the text they produce."""
