"""module_names: which module ran a write, its path in the model, the line that built it, parameter names."""

from __future__ import annotations

import sys
import textwrap

import pytest
import torch
from scripts import load_script
from torch import nn

from tutorial_lib.facts.module_names import (
    child_names,
    code_of_line,
    find_build_site,
    module_chain,
    module_path,
    module_summary,
    parameter_names,
)
from tutorial_lib.facts.watching import storage_key

MODEL = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(3, 4),
            nn.Dropout(0.5, inplace=True),  # built here
        )
        self.act = nn.ReLU(True)
        self.blocks = nn.ModuleList([nn.Identity() for _ in range(2)])

    def forward(self, x):
        return self.act(self.main(x))


head = Head()
plain = nn.Sequential(nn.Linear(2, 2), nn.LeakyReLU(0.2, True))
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model_program.py"
    path.write_text(textwrap.dedent(MODEL).lstrip("\n"))
    module = load_script(path, "module_names_program")
    yield module, str(path)
    sys.modules.pop("module_names_program", None)


def chain_at_write(module_to_call, argument):
    """The chain and root name ``module_chain`` reads inside the innermost module's forward."""
    seen = {}

    def hook(inner, inputs):
        seen["chain"] = module_chain(sys._getframe(0))

    handles = [m.register_forward_pre_hook(hook) for m in module_to_call.modules() if not list(m.children())]
    try:
        module_to_call(argument)
    finally:
        for handle in handles:
            handle.remove()
    return seen["chain"]


def test_module_chain_names_the_running_modules_and_the_root(model):
    module, path = model
    modules, root = chain_at_write(module.head.main, torch.randn(2, 3))
    assert modules[-1] is module.head.main and root == "module_to_call"  # its name in the calling frame
    assert modules[0] is module.head.main[1] and child_names(modules) == ["1"]  # the last module the hook saw
    assert module_chain(sys._getframe(0)) == ([], None)  # no module is running here


def test_module_path_and_summary():
    assert module_path("classifier", ["main", "2"]) == "classifier.main[2]"
    assert module_path(None, ["act"]) == "the model.act"
    assert module_summary(nn.Dropout(0.5, inplace=True)) == "Dropout(p=0.5, inplace=True)"
    with pytest.raises(TypeError, match="names must be a list of str"):
        module_path("m", "main")


def test_find_build_site_reads_the_class_and_the_script(model):
    module, path = model
    head = module.head
    site = find_build_site([head.main[1], head.main, head], "head", path)
    assert site.lineno == 10 and site.line_text == "nn.Dropout(0.5, inplace=True),"  # the comment is not code
    site = find_build_site([head.act, head], "head", path)
    assert site.lineno == 12 and site.call == "nn.ReLU(True)"
    assert find_build_site([head.blocks[0], head.blocks, head], "head", path) is None  # built in a comprehension
    plain = module.plain
    site = find_build_site([plain[1], plain], "plain", path)  # a Sequential built in the script itself
    assert site.lineno == 20 and site.call == "nn.LeakyReLU(0.2, True)"
    assert find_build_site([plain[1], plain], "unknown_name", path) is None


def test_parameter_names_follow_the_variables_of_the_frames():
    critic = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))

    class Agent:
        def __init__(self):
            self.policy = nn.Linear(2, 2)

        def names(self):
            return parameter_names([sys._getframe(1), sys._getframe(0)])

    agent = Agent()
    names = agent.names()
    assert names[storage_key(critic[1].weight)] == "critic[1].weight"
    assert names[storage_key(agent.policy.bias)] == "self.policy.bias"
    with pytest.raises(TypeError, match="frames must be a list"):
        parameter_names(sys._getframe(0))


def test_code_of_line_drops_the_comment_only(tmp_path):
    path = tmp_path / "lines.py"
    path.write_text('x = f("#not a comment")  # a comment\ny = [\n    1,  # one\n]\n')
    assert code_of_line(str(path), 1) == 'x = f("#not a comment")'
    assert code_of_line(str(path), 3) == "1,"
