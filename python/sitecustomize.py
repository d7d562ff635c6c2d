"""memsnap record's hook into Python: record this process, then run the sitecustomize that
this one hides, if there is one (like ddtrace-run and opentelemetry-instrument)."""
import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = sys.path[:]
    ours = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        try:
            import sitecustomize  # noqa: F401  (the user's)
        except ImportError as e:
            if e.name != "sitecustomize":
                raise
    finally:
        sys.path[:] = saved_path
        if ours is not None:
            sys.modules["sitecustomize"] = ours


if os.environ.get("MEMSNAP_RECORD"):
    try:
        from memsnap import _launch
        _launch.install()
    except Exception as e:
        print(f"memsnap: not recording: {e}", file=sys.stderr)
_chain()
