"""A misspelt target function is named before the module runs (target/load.py's precheck reads the
parse; no `import torch`, no user code), and never wrongly: a name the module could bind in any way
a parse cannot rule out goes on to the import, which answers as before. Torch-free and fast."""

from __future__ import annotations

import pytest

from tcdoctor.errors import TargetError
from tcdoctor.target.load import load, precheck

RUNS = "open({marker!r}, 'w').close()\n"  # the module ran


def _module(tmp_path, body: str) -> tuple[str, str]:
    marker = str(tmp_path / "ran")
    path = tmp_path / "m.py"
    path.write_text(RUNS.format(marker=marker) + body)
    return str(path), marker


def test_a_typo_is_named_without_running_the_module_with_the_closest_name(tmp_path):
    path, marker = _module(
        tmp_path, "import os\n\ndef build():\n    return 1\n\ndef main(): pass\n"
    )
    with pytest.raises(TargetError) as e:
        precheck(f"{path}:buid")
    assert str(e.value) == "m.py has no function 'buid' (did you mean 'build'?)"
    assert not (tmp_path / "ran").exists(), marker
    with pytest.raises(TargetError) as e:  # nothing close: no guess
        precheck(f"{path}:tarjet")
    assert str(e.value) == "m.py has no function 'tarjet'"


@pytest.mark.parametrize(
    "body",
    [
        "def build(): pass\n",
        "build = lambda: 1\n",
        "if True:\n    def build(): pass\n",
        "try:\n    from os import getcwd as build\nexcept ImportError:\n    pass\n",
        "import os.path as build\n",
        "from os.path import *\n",
        "def __getattr__(name):\n    return lambda: 1\n",
        "globals()['bu' + 'ild'] = lambda: 1\n",
        "import sys\nsetattr(sys.modules[__name__], 'build', print)\n",
        "exec('def build(): pass')\n",
        "for build in [print]:\n    pass\n",
        "class build: pass\n",
    ],
)
def test_a_name_the_module_may_bind_goes_on_to_the_import(tmp_path, body):
    path, _ = _module(tmp_path, body)
    assert precheck(f"{path}:build")[1] == "build"


def test_a_name_the_parse_could_not_rule_out_is_still_answered_by_the_import(tmp_path):
    path, _ = _module(tmp_path, "from os.path import *\n\ndef build():\n    return 1\n")
    with pytest.raises(TargetError) as e:
        load(f"{path}:buid")
    assert str(e.value) == "m.py has no function 'buid' (did you mean 'build'?)"
    assert (tmp_path / "ran").exists()  # this time the module did run


def test_dunder_names_are_left_to_the_import(tmp_path):
    path, _ = _module(tmp_path, "")
    assert precheck(f"{path}:__doc__")[1] == "__doc__"
