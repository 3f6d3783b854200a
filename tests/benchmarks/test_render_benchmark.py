"""The render benchmark runs end to end on a small session (timings are not asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.compare.legacy import render_section
from benchmarks.render import main as render_main
from benchmarks.render import report, run
from context_graph.importers import load_sessions

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
SMALL = TRACES / "tau_bench_gpt4o_airline" / "gpt-4o-airline.sample12.json"


@pytest.mark.skipif(not SMALL.exists(), reason="shared traces not present")
def test_benchmark_replays_every_event_for_both_contenders() -> None:
    """Both contenders are called once per event, and ours never sends an invalid body."""
    ours, theirs, events, budget = run(SMALL, budget_ratio=0.5)
    assert events == len(load_sessions(SMALL)[0].events)
    assert len(ours.times_ns) == len(theirs.times_ns) == events
    assert ours.invalid == 0
    assert ours.lost_latest_request == 0 and ours.lost_first_request == 0
    assert ours.over_budget == 0
    assert budget > 0
    assert "| context-graph |" in report(ours, theirs, events, budget, SMALL)


class TestWithoutMatplotlib:
    """The benchmark page can be written by the README's test install, which has no matplotlib."""

    @pytest.fixture
    def no_matplotlib(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Make `import matplotlib` fail, as it does without the `[bench]` extra."""
        import builtins

        real_import = builtins.__import__

        def refusing(name: str, *args: object, **kwargs: object) -> object:
            if name == "matplotlib" or name.startswith("matplotlib."):
                raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")
            return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(builtins, "__import__", refusing)

    @pytest.mark.usefixtures("no_matplotlib")
    def test_plot_refused_before_the_replay(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`--plot` without matplotlib is a usage error naming the install, before any replay."""
        with pytest.raises(SystemExit) as exit_info:
            render_main(["--traces", str(tmp_path / "absent"), "--plot", str(tmp_path / "p.png")])
        assert exit_info.value.code == 2
        assert "pip install '.[bench]'" in capsys.readouterr().err
        assert not (tmp_path / "p.png").exists()

    @pytest.mark.usefixtures("no_matplotlib")
    @pytest.mark.skipif(not SMALL.exists(), reason="shared traces not present")
    def test_render_section_is_written_without_the_plot(self, tmp_path: Path) -> None:
        """The page's render section is written, saying why the plot is missing."""
        traces = tmp_path / "traces"
        (traces / SMALL.parent.name).mkdir(parents=True)
        (traces / SMALL.parent.name / SMALL.name).write_bytes(SMALL.read_bytes())
        image = tmp_path / "img" / "render_time.png"
        section = render_section(traces, image, "img/render_time.png", lambda _: None)
        assert "| context-graph |" in section
        assert "matplotlib is not installed" in section
        assert "![time per render" not in section
        assert not image.exists()
