"""The comparison package computes with numpy and the standard library only."""

from __future__ import annotations


def test_the_package_computes_without_scipy() -> None:
    """scipy is a test-only reference: the core's comparison imports and runs without it."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("scipy", "statsmodels", "sklearn"):
                    raise ImportError("imported " + name)
        sys.meta_path.insert(0, Block())
        from driftwatch.core.comparison import delong, wilcoxon_signed_rank, mcnemar
        from driftwatch.core.comparison.window import PairedWindow
        from driftwatch.core.adaptive_window import AdaptiveWindow
        print(delong([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.5], [0.8, 0.2, 0.6, 0.3]).p_value)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert 0.0 <= float(result.stdout) <= 1.0
