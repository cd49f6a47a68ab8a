"""Plane geometry the picture tests share: does a drawn straight line pass over a rectangle?"""

from __future__ import annotations


def segment_meets_box(points, left: float, top: float, right: float, bottom: float, *, edges: bool = True) -> bool:
    """Whether the straight segment between the two ``points`` passes over the box, sampled at 201 points along
    its length. ``edges=False`` counts only the box's inside (a line may run along or end on its border)."""
    (x0, y0), (x1, y1) = points
    slack = 0.0 if edges else 1e-6
    for k in range(201):
        x, y = x0 + (x1 - x0) * k / 200, y0 + (y1 - y0) * k / 200
        if edges and left <= x <= right and top <= y <= bottom:
            return True
        if not edges and left + slack < x < right - slack and top + slack < y < bottom - slack:
            return True
    return False


def corners(rect) -> tuple[float, float, float, float]:
    """A scene ``Rect``'s left, top, right and bottom, in the order ``segment_meets_box`` takes them."""
    return rect.x, rect.y, rect.x + rect.w, rect.y + rect.h
