"""Colour science for the palette tests: CIELAB hue and distance, and how colours look without red-green vision.

A "verdict colour" is a badge colour with a hue (``palette.VERDICT_COLOURS``: VIEW blue, COPY orange, IN-PLACE
vermilion; the grey of "same tensor" has none); a tensor tint must stay out of their hues.
"""

import math

from tutorial_lib.pictures import palette

# Machado et al. (2009) simulation matrices at full severity, applied to linear RGB.
SIMULATIONS = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
}
#: A tint this many degrees of CIELAB hue from a verdict colour reads as another colour name (blue vs lilac).
MIN_HUE_GAP = 35
#: CIELAB distance (delta E 1976) a tint keeps from every verdict colour, with normal vision and simulated.
MIN_DISTANCE = 15


def linear(colour: str) -> tuple[float, ...]:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return tuple(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)


def luminance(rgb) -> float:
    r, g, b = rgb
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def lab(rgb) -> tuple[float, float, float]:
    """CIELAB (D65) of a linear-RGB triple."""
    r, g, b = rgb
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b, luminance(rgb), 0.0193 * r + 0.1192 * g + 0.9505 * b)
    fx, fy, fz = (
        t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116
        for t in (xyz[0] / 0.95047, xyz[1], xyz[2] / 1.08883)
    )
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def chroma(colour: str) -> float:
    _, a, b = lab(linear(colour))
    return math.hypot(a, b)


def hue(colour: str) -> float:
    _, a, b = lab(linear(colour))
    return math.degrees(math.atan2(b, a)) % 360


def hue_gap(a: str, b: str) -> float:
    """Degrees of CIELAB hue between two colours (0 to 180)."""
    gap = abs(hue(a) - hue(b))
    return min(gap, 360 - gap)


def seen(colour: str, vision: str | None = None) -> tuple[float, ...]:
    """The linear RGB a reader with ``vision`` (None: normal) sees for ``colour``."""
    rgb = linear(colour)
    if vision is None:
        return rgb
    return tuple(min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb)))) for row in SIMULATIONS[vision])


def distance(a: str, b: str, vision: str | None = None) -> float:
    """CIELAB distance between two colours as a reader with ``vision`` sees them."""
    return math.dist(lab(seen(a, vision)), lab(seen(b, vision)))


def verdict_colours() -> list[str]:
    """The verdict badges' colours that have a hue (grey has none)."""
    return [background for background, _ in palette.VERDICT_COLOURS.values() if chroma(background) > 10]


def near_a_verdict(colour: str) -> list[str]:
    """The verdict colours ``colour`` could be taken for: close in hue, or close as seen with any vision."""
    return [
        verdict
        for verdict in verdict_colours()
        if hue_gap(colour, verdict) < MIN_HUE_GAP
        or min(distance(colour, verdict, vision) for vision in (None, *SIMULATIONS)) < MIN_DISTANCE
    ]
