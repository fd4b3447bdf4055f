"""tools/ read at a glance: the course's tools in tools/gpu/, the probes behind results/trials/ in tools/probes/, each
file named in its folder's README; every trial names the probe (or tool) and the command that produced it, or says
why none; and every tools/ path the course's code and pages mention is a file that exists."""
import json
import re

import pytest

from gluon_course.course import repo_root

ROOT = repo_root()
TOOLS = ROOT / "tools"
FOLDERS = ("gpu", "probes")
TRIALS = sorted((ROOT / "results" / "trials").glob("*.json"))
# A README's table row names its file in the first cell: | `name` | ...
ROW = re.compile(r"^\|\s*`([^`]+)`", re.MULTILINE)


def files_in(folder):
    """Every file under tools/FOLDER, as a path relative to it (plans/x.json), less the README and Python's caches."""
    base = TOOLS / folder
    return sorted(str(p.relative_to(base)) for p in base.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.name != "README.md")


def test_tools_holds_the_two_folders_and_its_readme():
    assert sorted(p.name for p in TOOLS.iterdir()) == ["README.md", *FOLDERS]


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_file_is_in_its_folders_readme(folder):
    readme = (TOOLS / folder / "README.md").read_text(encoding="utf-8")
    named = set(ROW.findall(readme))
    missing = [f for f in files_in(folder) if f not in named]
    assert not missing, f"tools/{folder}/README.md has no row for {missing}: add one (what it is for, how it is called)"
    # and no row for a file that is gone (a probes row may name a trial instead: its second table)
    gone = [n for n in named if not (TOOLS / folder / n).is_file() and not (ROOT / "results" / "trials" / n).is_file()]
    assert not gone, f"tools/{folder}/README.md names files that do not exist: {gone}"


def _paths(value):
    return [value] if isinstance(value, str) else list(value or ())


@pytest.mark.parametrize("trial", TRIALS, ids=lambda p: p.stem)
def test_every_trial_names_what_produced_it(trial):
    by = json.loads(trial.read_text(encoding="utf-8")).get("produced_by")
    assert isinstance(by, dict), f"{trial.name} has no produced_by: name the probe and the command that made it"
    assert _paths(by.get("command")) and all(c.strip() for c in _paths(by.get("command"))), trial.name
    assert str(by.get("established_from", "")).strip(), f"{trial.name}: say where the producer was read from"
    probes, tools = _paths(by.get("probe")), _paths(by.get("tool"))
    assert probes or tools or str(by.get("why_no_probe", "")).strip(), \
        f"{trial.name} names neither a probe nor a tool and does not say why"
    for path in probes:
        assert path.startswith("tools/probes/") and (ROOT / path).is_file(), f"{trial.name}: no probe {path}"
    for path in tools:
        assert path.startswith("tools/gpu/") and (ROOT / path).is_file(), f"{trial.name}: no tool {path}"
    for command in _paths(by.get("command")):
        for path in re.findall(r"tools/[\w/.-]+", command):
            assert (ROOT / path).is_file(), f"{trial.name}: its command names {path}, which does not exist"


def test_every_trial_is_in_the_probes_readme():
    readme = (TOOLS / "probes" / "README.md").read_text(encoding="utf-8")
    missing = [t.name for t in TRIALS if t.name not in readme]
    assert not missing, f"tools/probes/README.md does not list {missing}"


# Where the course names a tool by its path: its code, tests, pages, the tools themselves, the tuning table's
# provenance, the lesson notebooks' cells. Not the trials' own text (it names the paths as they were when the trial
# ran; produced_by names today's).
SCANNED = ("gluon_course", "tests", "solutions", "book", "tools", "results/tuning", ".ci")
SUFFIXES = {".py", ".md", ".sh", ".json", ".cfg", ".yml", ".toml"}
TOOL_PATH = re.compile(r"tools/(?:gpu|probes)/[\w/.-]*\w\.(?:py|sh|json|md)\b")


def _scanned_files():
    for top in SCANNED:
        for p in (ROOT / top).rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts and (p.suffix in SUFFIXES or p.name == "run"):
                yield p
    yield from (ROOT / "README.md", ROOT / "Makefile")
    yield from ROOT.glob("lessons/*/starter.py")
    yield from ROOT.glob("lessons/*/lesson.ipynb")


def test_every_tools_path_the_course_names_exists():
    dangling = {}
    for p in _scanned_files():
        for path in TOOL_PATH.findall(p.read_text(encoding="utf-8", errors="replace")):
            if not (ROOT / path).is_file():
                dangling.setdefault(str(p.relative_to(ROOT)), []).append(path)
    assert not dangling, f"paths under tools/ that are not there: {dangling}"


def test_a_probe_loads_its_siblings_by_names_that_exist():
    """The probes load each other by file name (importlib, sys.path): a rename must follow."""
    loads = re.compile(r'with_name\(f?"(\w+)\.py"\)|_load\("(\w+)"\)|^\s*import (probe_\w+)', re.MULTILINE)
    for p in (TOOLS / "probes").glob("*.py"):
        for match in loads.finditer(p.read_text(encoding="utf-8")):
            name = next(g for g in match.groups() if g)
            if "{" not in name:
                assert (p.parent / f"{name}.py").is_file(), f"{p.name} loads {name}.py, which is not beside it"
