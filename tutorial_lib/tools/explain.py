"""``python -m tutorial_lib.explain script.py [args ...]``: run a script under ``watch_inplace``.

The script runs as ``python script.py args ...`` would run it (``__name__ == "__main__"``, ``sys.argv``,
its folder first on ``sys.path``, an absolute ``__file__``), with the same output: the watcher prints nothing
while the script runs, compiles ``torch.compile``'d code as ``python`` would, and changes no value, version
counter or gradient. If ``backward()`` raises autograd's "modified by an inplace operation" error, the
script's traceback (its own frames only), torch's message and the explanation are printed to stderr: the line
that saved each stale tensor and every line that changed it, and the fixes. Any other error is printed as
plain ``python`` prints it, without this command's and the watcher's frames; when ``torch.compile`` itself
raised the in-place error (it traces the backward pass when it compiles a model), with a note saying the
watcher cannot see inside compiled code and how to run the script uncompiled to see the lines. The exit code
is the script's: 0 when it finishes, its ``sys.exit`` code, 130 when it stops on ``KeyboardInterrupt`` (what a
shell reports for plain ``python``, which ends by SIGINT), or 1 when it raises anything else.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from ..facts.inplace_watch import is_library_frame, watch_inplace, without_library_frames

USAGE = "usage: python -m tutorial_lib.explain script.py [args ...]"


def _script_frames(error: BaseException) -> list:
    """The traceback entries outside torch, tutorial_lib and runpy: the user's own frames."""
    frames = traceback.extract_tb(error.__traceback__)
    return [f for f in frames if not is_library_frame(f.filename) and os.path.basename(f.filename) != "runpy.py"]


def main(argv: list[str] | None = None) -> int:
    """Run ``argv[0]`` with the rest as its arguments; return the exit code (see the module docstring).

    Raises:
        TypeError: ``argv`` is not a list of strings.
    """
    if argv is None:
        argv = sys.argv[1:]
    if not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"argv must be a list of str, got {type(argv).__name__}")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    script = argv[0]
    if not os.path.isfile(script):
        print(f"tutorial_lib.explain: no such script: {script}\n{USAGE}", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    path = os.path.abspath(script)  # python sets an absolute __file__ for the script it runs (3.9 and later)
    sys.path.insert(0, os.path.dirname(path))
    try:
        with watch_inplace():
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException as error:  # noqa: BLE001 - report like python does, then exit 1
        explanation = getattr(error, "inplace_explanation", None)
        if explanation is None:
            without_library_frames(error)
            for chained in (error, error.__cause__, error.__context__):
                while chained is not None and chained.__traceback__ is not None:  # drop runpy's frames
                    filename = chained.__traceback__.tb_frame.f_code.co_filename
                    if not is_library_frame(filename) and os.path.basename(filename) != "runpy.py":
                        break
                    chained.__traceback__ = chained.__traceback__.tb_next
            traceback.print_exception(error)
            return 130 if isinstance(error, KeyboardInterrupt) else 1
        frames = _script_frames(error)
        if frames:
            print("Traceback (most recent call last, the script's own lines):", file=sys.stderr)
            print("".join(traceback.format_list(frames)), end="", file=sys.stderr)
        print(f"{type(error).__name__}: {explanation.message}\n", file=sys.stderr)
        print(explanation, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
