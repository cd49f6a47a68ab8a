"""The one visual language (pictures/palette.py): one meaning per colour, readable text, colour-blind safe verdicts."""

import itertools

import colours
import pytest

from tutorial_lib.pictures import palette

ROLES = {
    "INK": palette.INK,
    "MUTED": palette.MUTED,
    "FAINT": palette.FAINT,
    "STORAGE": palette.STORAGE,
    "PAPER": palette.PAPER,
    "STALE": palette.STALE,
    "VIEW": palette.VIEW,
    "COPY": palette.COPY,
    "ALIAS": palette.ALIAS,
    **{f"memory {kind}": colour for kind, colour in palette.MEMORY_KINDS.items()},
}

SIMULATIONS = colours.SIMULATIONS  # Machado et al. (2009), full severity, on linear RGB
linear, luminance = colours.linear, colours.luminance


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(linear(a)), luminance(linear(b))), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_colour_has_one_meaning():
    colours = list(ROLES.values()) + list(palette.TENSOR_TINTS)
    assert len({c.lower() for c in colours}) == len(colours)


def test_tensor_colours_repeat_only_after_twelve():
    assert len({palette.tensor_colour(k) for k in range(12)}) == 12
    assert palette.tensor_colour(12) == palette.tensor_colour(0)
    for bad in (-1, 1.0, True, "0"):
        with pytest.raises(ValueError, match="index must be an int"):
            palette.tensor_colour(bad)


def test_text_colours_are_readable_on_paper_and_on_every_tint():
    assert contrast(palette.INK, palette.PAPER) >= 7  # WCAG AAA for body text
    assert contrast(palette.MUTED, palette.PAPER) >= 4.5  # WCAG AA
    for tint in palette.TENSOR_TINTS + (palette.STORAGE,):
        assert contrast(palette.INK, tint) >= 4.5, tint  # numbers written in cells stay readable


@pytest.mark.parametrize("vision", sorted(SIMULATIONS))
def test_verdict_colours_stay_apart_for_colour_blind_readers(vision):
    matrix = SIMULATIONS[vision]

    def seen(colour):
        rgb = linear(colour)
        return tuple(sum(m * c for m, c in zip(row, rgb)) for row in matrix)

    for a, b in itertools.combinations((palette.VIEW, palette.COPY, palette.STALE, palette.ALIAS), 2):
        # Distinct in lightness or in the simulated colour: a learner without red-green vision tells them apart.
        distance = sum((x - y) ** 2 for x, y in zip(seen(a), seen(b))) ** 0.5
        assert distance > 0.1 or abs(luminance(linear(a)) - luminance(linear(b))) > 0.1, (a, b)


def test_smallest_text_is_readable():
    assert palette.MIN_TEXT_PT >= 7 and palette.TEXT_PT >= palette.MIN_TEXT_PT and palette.TITLE_PT > palette.TEXT_PT


def test_tint_mixes_with_white():
    assert palette.tint("#cc3311", 0) == "#ffffff" and palette.tint("#cc3311", 1) == "#cc3311"
    assert palette.tint("#000000", 0.5) == "#808080"
    for bad in (("red", 0.5), ("#cc3311", 1.5), ("#cc3311", True)):
        with pytest.raises(ValueError):
            palette.tint(*bad)


def test_no_tensor_tint_is_of_a_verdicts_hue_or_looks_like_one_without_red_green_vision():
    # Issue 22: x's tint was the VIEW blue's sibling and the second tensor's the COPY orange's, so a view was
    # drawn orange under a blue VIEW badge. A tint must not be taken for a verdict, with any colour vision.
    verdicts = colours.verdict_colours()
    assert {palette.VIEW, palette.COPY, palette.STALE} <= set(verdicts)
    near = {tint: colours.near_a_verdict(tint) for tint in palette.TENSOR_TINTS}
    assert not {tint: found for tint, found in near.items() if found}, near
    assert not set(palette.TENSOR_TINTS) & {background for background, _ in palette.VERDICT_COLOURS.values()}
    # Most pictures draw two to four tensors: their tints differ for readers without red-green vision too.
    for a, b in itertools.combinations(palette.TENSOR_TINTS[:4], 2):
        gaps = [colours.distance(a, b, vision) for vision in (None, *colours.SIMULATIONS)]
        assert min(gaps) > 15, (a, b, gaps)


def test_verdict_colours_are_the_verdicts_and_their_text_is_readable_on_them():
    assert palette.VERDICT_COLOURS["view"][0] == palette.VIEW and palette.VERDICT_COLOURS["copy"][0] == palette.COPY
    assert palette.VERDICT_COLOURS["in-place"][0] == palette.STALE
    for background, text in palette.VERDICT_COLOURS.values():
        assert contrast(background, text) >= 4.5, (background, text)
