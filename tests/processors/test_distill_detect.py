from __future__ import annotations

import json

import pytest

from processors.distill import CONTENT_TYPES, detect_content_type
from processors.distill.envelope import peel

PYTEST = """\
============================= test session starts ==============================
collected 3 items

tests/test_api.py .F.                                                    [100%]

=================================== FAILURES ===================================
_______________________________ test_create_user _______________________________
Traceback (most recent call last):
  File "/repo/tests/test_api.py", line 12, in test_create_user
    assert user.age == 32
AssertionError: assert 31 == 32
=========================== short test summary info ============================
FAILED tests/test_api.py::test_create_user - AssertionError: assert 31 == 32
========================= 1 failed, 2 passed in 0.12s =========================="""

UNITTEST = """\
..E
======================================================================
ERROR: test_load (tests.test_io.LoadTests.test_load)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/repo/tests/test_io.py", line 9, in test_load
    load("missing.csv")
FileNotFoundError: missing.csv
----------------------------------------------------------------------
Ran 3 tests in 0.004s

FAILED (errors=1)"""

JEST = """\
 FAIL  src/math.test.js
  ● Math \u203a adds numbers

    expect(received).toBe(expected)

Tests:       1 failed, 4 passed, 5 total"""

GO_TEST = """\
=== RUN   TestParse
--- FAIL: TestParse (0.00s)
    parse_test.go:14: want 3, got 4
FAIL
FAIL\texample.com/parse\t0.005s"""

TRACEBACK = """\
Traceback (most recent call last):
  File "/repo/app/main.py", line 10, in <module>
    run()
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"""

LOG = "\n".join(
    f"2024-05-20 10:00:{i:02d},120 {'ERROR' if i == 7 else 'INFO'} api request {i} served"
    for i in range(30)
)

GREP = """\
django/db/models/base.py:121:        new_class.add_to_class('_meta', Options(meta, app_label))
django/db/models/base.py:325:    def add_to_class(cls, name, value):
django/db/models/options.py:208:        self.db_table = truncate_name(self.db_table)
--
django/db/utils.py:90:        raise dj_exc_value.with_traceback(traceback) from exc_value"""

GREP_ONE_FILE = """\
40:    "proxy",
132:        self.proxy = False
133-        # For any class that is a proxy
364:    def setup_proxy(self, target):"""

LS_LONG = """\
total 24
drwxr-xr-x  5 root root 4096 Oct 24  2024 django
-rw-r--r--  1 root root 2131 Oct 24  2024 README.rst
-rw-r--r--  1 root root  390 Oct 24  2024 setup.py
-rw-r--r--  1 root root 1535 Oct 24  2024 tox.ini"""

FIND = """\
./django/contrib/admin/helpers.py
./django/contrib/admin/options.py
./django/db/models/base.py
./tests/admin_views/tests.py"""

TREE = """\
.
├── src
│   ├── main.rs
│   └── lib.rs
└── Cargo.toml"""

LS_R = """\
/workspace/repo:
CHANGES.rst\t    README.rst\t      setup.py
astropy\t    docs\t      tox.ini

/workspace/repo/docs:
conf.py  index.rst"""

PYTHON = '''\
import os


class Loader:
    """Loads things."""

    def load(self, path: str) -> bytes:
        with open(path, "rb") as handle:
            return handle.read()
'''

PYTHON_SNIPPET = """\
        if value is None:
            return None
        return int(value.total_seconds())

    def _deserialize(self, value, attr, data, **kwargs):
        return dt.timedelta(seconds=int(value))

    def _validate(self, value):
        if value < 0:
            raise ValidationError(
                self.error_messages["negative"],"""

JAVASCRIPT = """\
import { Socket } from "phoenix";

export function connect(url) {
  const socket = new Socket(url, {});
  socket.connect();
  return socket;
}

class Hooks {
  mounted() {
    this.el.focus();
  }
}"""

ELIXIR = """\
defmodule Spotter.Repo do
  use Ecto.Repo, otp_app: :spotter

  def init(_type, config) do
    {:ok, config}
  end
end"""

DIFF = """\
diff --git a/app/main.py b/app/main.py
index 1c2d3e4..5f6a7b8 100644
--- a/app/main.py
+++ b/app/main.py
@@ -10,7 +10,7 @@ def run():
-    return load(path)
+    return load(path, strict=True)"""

PROSE = """\
## Findings

The session renderer strips ANSI codes before it measures the width of a line.
Nothing else in the module depends on the terminal, so the change is local."""


class TestDetect:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            (json.dumps({"id": 7, "items": [1, 2, 3]}, indent=2), "json"),
            (PYTEST, "test_output"),
            (UNITTEST, "test_output"),
            (JEST, "test_output"),
            (GO_TEST, "test_output"),
            (TRACEBACK, "traceback"),
            (LOG, "log"),
            (GREP, "grep"),
            (GREP_ONE_FILE, "grep"),
            (LS_LONG, "listing"),
            (FIND, "listing"),
            (TREE, "listing"),
            (LS_R, "listing"),
            (PYTHON, "python"),
            (PYTHON_SNIPPET, "python"),
            (JAVASCRIPT, "code"),
            (ELIXIR, "code"),
            (DIFF, "text"),
            (PROSE, "text"),
            ("", "text"),
        ],
    )
    def test_content_types(self, text: str, expected: str) -> None:
        """Each sample is recognized as its type."""
        assert detect_content_type(text) == expected

    def test_every_type_is_reachable(self) -> None:
        """The listed content types are exactly the ones detection can return."""
        assert set(CONTENT_TYPES) == {
            "json", "test_output", "traceback", "grep", "listing", "log", "python", "code", "text",
        }  # fmt: skip


class TestTwoTypes:
    def test_test_output_with_tracebacks_is_test_output(self) -> None:
        """pytest output holds tracebacks but is read as test output."""
        assert detect_content_type(PYTEST) == "test_output"

    def test_log_with_a_small_traceback_is_a_log(self) -> None:
        """A traceback that is a small part of a log leaves it a log."""
        long_log = "\n".join([LOG, LOG, LOG, TRACEBACK])
        assert detect_content_type(long_log) == "log"

    def test_traceback_after_a_few_lines_is_a_traceback(self) -> None:
        """A traceback that is most of the output makes it a traceback."""
        assert detect_content_type("Creating tables...\n" + TRACEBACK) == "traceback"

    def test_grep_of_python_is_grep(self) -> None:
        """Grep hits inside Python files are grep output, not Python."""
        hits = "\n".join(f"app/m{i}.py:{i}:def handler_{i}(event):" for i in range(10))
        assert detect_content_type(hits) == "grep"

    def test_json_lines_log_is_a_log(self) -> None:
        """One JSON object per line with levels is a log (the whole is not one JSON value)."""
        lines = "\n".join(
            json.dumps({"ts": f"2024-05-20T10:00:{i:02d}Z", "level": "INFO", "msg": f"m{i}"})
            for i in range(10)
        )
        assert detect_content_type(lines) == "log"

    def test_prose_about_code_is_text(self) -> None:
        """A paragraph that mentions `def` and `class` is still text."""
        text = "We def initely need a class for this.\nThe import of data is slow.\nFine."
        assert detect_content_type(text) == "text"


class TestHints:
    def test_extension_decides_for_broken_code(self) -> None:
        """A `.py` file that does not parse is still Python."""
        assert detect_content_type("def broken(:\n    pass", path="x/y.py") == "python"

    def test_text_extension_wins_over_code_shape(self) -> None:
        """A markdown file with code in it is text."""
        assert detect_content_type(JAVASCRIPT, path="README.md") == "text"

    def test_language_extension(self) -> None:
        """Other languages are code by their extension."""
        assert detect_content_type("x = 1", path="lib/app.ex") == "code"

    def test_json_extension_that_does_not_parse_is_text(self) -> None:
        """A `.json` file that is not valid JSON is text."""
        assert detect_content_type('{"a": 1,', path="data.json") == "text"

    def test_glob_tool_makes_paths_a_listing(self) -> None:
        """A glob's result is a listing even when short."""
        assert detect_content_type("/repo/a.py\n/repo/b.py", tool="Glob") == "listing"


class TestEnvelope:
    def test_mini_swe_agent_tags(self) -> None:
        """`<returncode>` / `<output>` lines are wrapper, the rest is body."""
        envelope = peel(f"<returncode>1</returncode>\n<output>\n{TRACEBACK}\n</output>")
        assert envelope.head == ("<returncode>1</returncode>", "<output>")
        assert envelope.tail == ("</output>",)
        assert "\n".join(envelope.body) == TRACEBACK
        assert detect_content_type(envelope.wrap("\n".join(envelope.body))) == "traceback"

    def test_openhands_tail_and_glued_interpreter_note(self) -> None:
        """The exit code line, the prompt and a glued interpreter note are wrapper."""
        text = (
            "python run.py\nall good[Python Interpreter: /opt/env/bin/python]\n"
            "root@openhands-workspace:/workspace # \n[Command finished with exit code 0]"
        )
        envelope = peel(text)
        assert envelope.body == ("python run.py", "all good")
        assert envelope.glued == "[Python Interpreter: /opt/env/bin/python]"
        assert envelope.tail[-1] == "[Command finished with exit code 0]"
        # Put back on the line it was glued to: `FAILED (errors=1)[Python Interpreter: ...]`
        # reads as the agent saw it (a line split in two was in no request verbatim).
        wrapped = envelope.wrap("\n".join(envelope.body))
        assert "all good[Python Interpreter: /opt/env/bin/python]\n" in wrapped
        again = peel(wrapped)
        assert (again.body, again.glued) == (envelope.body, envelope.glued)

    def test_editor_view_names_the_file(self) -> None:
        """`cat -n` views are read by the named file's extension, gutter aside."""
        view = "Here's the result of running `cat -n` on /repo/app/main.ex:\n"
        view += "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(ELIXIR.split("\n"), 1))
        assert detect_content_type(view) == "code"

    def test_swe_agent_file_view(self) -> None:
        """SWE-agent's `open` view (`[File: ...]`, `12:` gutter) is read as the file's type."""
        lines = PYTHON.split("\n")
        view = "[File: src/loader.py (40 lines total)]\n(3 more lines above)\n"
        view += "\n".join(f"{i}:{line}" for i, line in enumerate(lines, 4))
        view += "\n(20 more lines below)"
        envelope = peel(view)
        assert envelope.head[0].startswith("[File: ")
        assert envelope.tail == ("(20 more lines below)",)
        assert detect_content_type(view) == "python"

    def test_system_reminder_is_wrapper(self) -> None:
        """A trailing `<system-reminder>` block is kept aside from the body."""
        text = f"{PYTHON}\n<system-reminder>\nBe careful.\n</system-reminder>\n"
        envelope = peel(text)
        tail = [line for line in envelope.tail if line]
        assert tail == ["<system-reminder>", "Be careful.", "</system-reminder>"]
        assert "Be careful." not in envelope.body


class TestLongLines:
    """A line of a million characters: the code check tried a call's name from every
    position of a long word, and read the rest of a line from every `(` without a `)`.
    A long line is now judged by its two ends; no timer, the test simply finishes."""

    @pytest.mark.parametrize("blob", ["ab" * 500_000, "f(" * 500_000, "0x1f" * 250_000])
    def test_a_blob_is_not_code(self, blob: str) -> None:
        assert detect_content_type("\n".join([blob] * 5)) not in {"code", "python"}

    def test_minified_code_is_still_code(self) -> None:
        line = "function add(a,b){return a+b};var total=add(1,2);" * 40_000
        assert detect_content_type("\n".join([line] * 5)) == "code"
