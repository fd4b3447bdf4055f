"""`python -m gluon_course new-lesson` in the toolkit's layout (book/authoring.md): in a temporary copy of the
repository, scaffold a lesson, then grade it as an author and a learner would: the solution passes its checks, the
generated starter stops at its gap with a sentence, and the scaffold's planted mistake is rejected by the check it
names."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import sys
from gluon_course.__main__ import main
from gluon_course.course import load_plants, lesson, repo_root
from gluon_course.grading.runner import run_check
from gluon_course.course import load_checks, load_module_file

assert str(repo_root()) == sys.argv[1], (repo_root(), sys.argv[1])
print("new-lesson:", main(["new-lesson", "99", "scaffold-demo", "A scaffolded lesson"]))
print("check solution:", main(["check", "99", "--solution"]))
print("check starter:", main(["check", "99"]))
the = lesson("99")
text = the.solution_path.read_text()
for i, plant in enumerate(load_plants("99")):
    planted = the.solution_path.with_name(f"planted_{i}.py")
    planted.write_text(text.replace(plant.old, plant.new))
    outcome = run_check(load_checks("99").CHECKS.check(plant.rejected_by), load_module_file(planted), "99")
    print(f"plant {i}:", "rejected" if outcome.failed else "MISSED", "-", outcome.detail)
'''


def test_a_scaffolded_lesson_is_checked_in_a_copy_of_the_repository(tmp_path):
    copy = tmp_path / "course"
    ignore = shutil.ignore_patterns("__pycache__", "*.ipynb", ".ipynb_checkpoints")
    for name in ("gluon_course", "solutions", "lessons", "results"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    for name in ("_toc.yml", "pyproject.toml"):
        shutil.copy2(ROOT / name, copy / name)
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run([sys.executable, "-c", CHILD, str(copy)], cwd=copy, env=env, capture_output=True, text=True,
                         timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    for name in ("solution.py", "checks.py", "plants.py"):
        assert (copy / "solutions" / "99-scaffold-demo" / name).exists(), out
    for name in ("starter.py", "lesson.ipynb"):
        assert (copy / "lessons" / "99-scaffold-demo" / name).exists(), out
    assert "new-lesson: 0" in out and "now add `- file: lessons/99-scaffold-demo/lesson` to _toc.yml" in out, out
    assert "check solution: 0" in out, f"the scaffold's solution does not pass its own checks:\n{out}"
    assert "check starter: 1" in out, f"the scaffold's starter passes with its gap open:\n{out}"
    assert "plant 0: rejected" in out and "MISSED" not in out, out
    assert not (ROOT / "solutions" / "99-scaffold-demo").exists(), "the scaffold wrote into the repository itself"
